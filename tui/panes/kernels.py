"""The Kernels pane: per-dispatch device times, sorted by total time.

Rows come only from device timestamps (profiles), never from host clocks
around asynchronous work; until a profile has been taken the pane says how
to get one rather than showing guesses.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from gputop.tui.bridge import KernelTiming, RunSnapshot
from gputop.tui.panes.box import BoxPane
from gputop.tui.panes.table import KeyedTable

COLUMNS = ("kernel", "share", "avg", "count", "min", "max")


class KernelsPane(BoxPane):
    BORDER_TITLE = "Kernels"
    DEFAULT_CSS = """
    KernelsPane DataTable { height: auto; max-height: 10; }
    KernelsPane #kernels-summary { height: auto; }
    KernelsPane #kernels-hint { height: auto; color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="kernels-summary")
        yield KeyedTable(COLUMNS, id="kernels-table")
        yield Static("no profile yet: press p to profile the running module", id="kernels-hint")

    def show(self, snapshot: RunSnapshot) -> None:
        profile = snapshot.profile
        summary = self.query_one("#kernels-summary", Static)
        hint = self.query_one("#kernels-hint", Static)
        if profile is None:
            summary.display = False
            hint.display = True
            hint.update(
                "profiling..." if snapshot.profiling else "no profile yet: press p to profile the running module"
            )
            return
        hint.display = snapshot.profiling
        hint.update("profiling...")
        summary.display = True
        wall = f" of {profile.call_wall_ms:.3f} ms synced" if profile.call_wall_ms is not None else ""
        gap = ""
        if profile.gap_ms is not None:
            gap = f", gap {profile.gap_ms:.3f} ms" if profile.gap_ms >= 0 else " (dispatches overlap)"
        timing = profile.kernels[0].timing if profile.kernels else ""
        summary.update(
            f"{profile.source}, {timing}, {profile.calls} calls\n"
            f"kernels {profile.call_kernel_ms:.3f} ms per call{wall}{gap}"
        )
        rows = {k.name: kernel_cells(k, snapshot.function or "") for k in profile.kernels}
        self.query_one("#kernels-table", KeyedTable).sync(rows)


def kernel_cells(kernel: KernelTiming, function: str = "") -> tuple[str, ...]:
    # The function name (and IREE's "$async" suffix) prefixes every dispatch name; the header says it.
    name = kernel.name
    if function:
        name = name.removeprefix(f"{function}$async_").removeprefix(f"{function}_")
    return (
        name,
        f"{kernel.share * 100:.1f}%",
        us(kernel.avg_us),
        str(kernel.count),
        us(kernel.min_us),
        us(kernel.max_us),
    )


def us(value: float) -> str:
    return f"{value:.1f} µs" if value < 10_000 else f"{value / 1e3:.2f} ms"
