"""The Kernels pane: per-dispatch device times, sorted by total time.

Rows come only from device timestamps (profiles), never from host clocks
around asynchronous work; until a profile has been taken the pane says how
to get one rather than showing guesses.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from gputop.tui.bridge import RunSnapshot
from gputop.tui.panes.table import KeyedTable

COLUMNS = ("kernel", "count", "avg", "min", "max", "share")


class KernelsPane(Vertical):
    DEFAULT_CSS = """
    KernelsPane { height: auto; border: round $primary; padding: 0 1; }
    KernelsPane DataTable { height: auto; max-height: 10; }
    KernelsPane #kernels-hint { height: auto; color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        yield KeyedTable(COLUMNS, id="kernels-table")
        yield Static("no profile yet: press p to profile the running module", id="kernels-hint")

    def on_mount(self) -> None:
        self.border_title = "Kernels"

    def show_kernels(self, kernels: list[dict[str, Any]]) -> None:
        rows = {
            k["name"]: (
                k["name"],
                str(k["count"]),
                f"{k['avg_us']:.1f} µs",
                f"{k['min_us']:.1f} µs",
                f"{k['max_us']:.1f} µs",
                f"{k['share'] * 100:.1f}%",
            )
            for k in sorted(kernels, key=lambda k: -k["total_us"])
        }
        self.query_one("#kernels-table", KeyedTable).sync(rows)
        self.query_one("#kernels-hint", Static).display = not rows

    def show(self, snapshot: RunSnapshot) -> None:
        """Kernel rows arrive with profiles, not with every snapshot."""
