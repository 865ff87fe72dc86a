"""The Run pane: how long each phase took and how fast calls go now.

Phases (compile, load, parameters, context, first call, teardown) answer
"where did my start-up go?"; calls/s, p50 and p95 of the synced call time and
a sparkline of recent calls answer "is it steady, and is it fast?". The
rate is the last few seconds' while the run goes (a pause shows as `paused`,
not as a falling average), and the whole run's once it has ended.
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Sparkline, Static

from gputop.tui.bridge import RunSnapshot, ms, seconds
from gputop.tui.panes.box import BoxPane, show_text
from gputop.tui.report_text import PHASES, parameters_progress

__all__ = ["RunPane"]


def call_rate(snapshot: RunSnapshot) -> str:
    """Calls/s as it is now: over the last few seconds while running, `paused` while paused, whole-run after."""
    calls = snapshot.calls
    if snapshot.state == "paused":
        return "paused"
    if snapshot.state == "running":
        return f"{calls.recent_calls_per_s:.1f}/s" if calls.recent_calls_per_s else "-/s"
    return f"{calls.calls_per_s:.1f}/s avg" if calls.calls_per_s else "-"


class RunPane(BoxPane):
    PANE_ID = "run"
    TITLE = "Run"
    KEY = "1"
    COLUMN = "left"
    ROW = 0
    DEFAULT_CSS = """
    RunPane #run-phases { height: auto; }
    RunPane #run-calls { height: auto; }
    RunPane Sparkline { height: 2; margin-top: 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="run-phases")
        yield Static(id="run-calls")
        yield Sparkline([], id="run-sparkline", summary_function=max)

    def show(self, snapshot: RunSnapshot) -> None:
        table = Table.grid(padding=(0, 1), pad_edge=False)
        for _ in range(2):
            table.add_column(style="dim")
            table.add_column(justify="right", min_width=9)
        cells = [(label, seconds(getattr(snapshot.phases, key))) for label, key in PHASES]
        phase_key = (tuple(cells), snapshot.phases.import_s)  # what the table shows: redrawn only when it changes
        for left, right in zip(cells[0::2], cells[1::2], strict=True):
            table.add_row(left[0], left[1], "  " + right[0], right[1])
        if snapshot.phases.import_s is not None:  # ONNX models only
            table.add_row("import", seconds(snapshot.phases.import_s), "", "")
        load = snapshot.parameters
        if load is not None:
            # Bytes in place, GB/s and time left while parameters load; their totals after.
            line = Text("params ", style="dim")
            line.append(parameters_progress(load, mode=False), style="" if load.done else "bold yellow")
            line.append(f"  {load.mode}", style="dim")
            show_text(self.query_one("#run-phases", Static), Group(table, line), key=(phase_key, line))
        else:
            show_text(self.query_one("#run-phases", Static), table, key=phase_key)
        calls = snapshot.calls
        rate = call_rate(snapshot)
        text = (
            f"calls {calls.count}  {rate}  synced wall time:\n"
            f"p50 {ms(calls.p50_ms)}  p95 {ms(calls.p95_ms)}  max {ms(calls.max_ms)}"
        )
        if snapshot.enqueue is not None and snapshot.enqueue.count:
            # OpenCL: what a naive host timer would have shown.
            text += f"\nenqueue returns after p50 {ms(snapshot.enqueue.p50_ms)} (not synced)"
        show_text(self.query_one("#run-calls", Static), text)
        self.query_one("#run-sparkline", Sparkline).data = list(calls.recent_ms)
