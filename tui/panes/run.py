"""The Run pane: how long each phase took and how fast calls go now.

Phases (compile, load, parameters, context, first call, teardown) answer
"where did my start-up go?"; calls/s, p50 and p95 of the synced call time and
a sparkline of recent calls answer "is it steady, and is it fast?"; where the
calls fall into separate groups (a GPU clock that falls between submissions),
a line gives each group's share and median, since a p50 over them describes
neither. The
rate is the last few seconds' while the run goes (a pause shows as `paused`,
not as a falling average), and the whole run's once it has ended. On an
NVIDIA GPU a line says the clocks the calls ran at, with a warning where they
moved or were held down (a moving clock makes call times mix clocks). With a
baseline (`b`, `--baseline`), a line says how the recent calls compare with it.
On an NVIDIA GPU (CUDA) the GPU's own counters, sampled while the calls go on
(CUPTI PM sampling, issue 48), follow in two lines: SM, tensor and DRAM
throughput (percent of peak) and the SM clock, each a sparkline of the last
seconds with its newest value (`tui.text.pm_strip` writes them); `g` turns
them off and on. Where the column has rows to spare once the calls' chart has
some, each one's median and 95th percentile over the calls follow; while it
does not sample, one line says why. A CPU device shows none of it.
"""

from __future__ import annotations

import time

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Sparkline, Static

from gputop.tui.bridge import (
    LiveBaseline,
    PmSampling,
    RunSnapshot,
    breakdown_groups_text,
    call_clocks_text,
    modes_text,
    ms,
    seconds,
    to_json,
)
from gputop.tui.panes.box import BoxPane, show_text
from gputop.tui.text import PHASES, parameters_progress, pm_calls_lines, pm_strip_lines
from gputop.tui.text.program import program_calls_text

__all__ = ["RunPane", "baseline_line", "clock_line", "modes_line"]

BASELINE_EVERY_S = 1.0  # the test against the baseline is redone at most this often
# A sparkline's draw costs in proportion to its rows: the two-row one is redrawn with every frame, a taller
# one (spare rows, issue 29) as much less often, so the chart costs the viewer the same CPU at any height.
# Drawn every frame at 14 rows it took 5% of a core more on the 2-core machine (bench/perturbation.py).
SPARKLINE_ROW_PAIR_S = 0.08
# The PM strip's figures over the calls take spare rows only where the calls' chart keeps this many more than
# its own: at 80x24 the chart comes first, and the strip's own two lines say what the GPU does now.
PM_CALLS_AFTER_CHART_ROWS = 4


def baseline_line(baseline: LiveBaseline, snapshot: RunSnapshot) -> str:
    """`vs base p50 -12.3% [-14.0%, -10.1%]` (a real change), `vs base ~ (+0.8%)`, `vs base p50 (-30.2%)` (beyond
    chance, within the runs' own wander: `Change.within_wander`, as `gputop compare` marks it), and whose run it is.

    A baseline that ran on another device says which (`base 22.8 ms on local-task`): the change is then
    the devices' as much as the runs'.
    """
    other = baseline.other_device(snapshot.device.id if snapshot.device else None)
    where = f" on {other}" if other else ""
    change = baseline.calls_change(snapshot.calls.recent_ms)
    if change.change is None:
        return f"vs base {baseline.label}{where}: no calls yet"
    if not change.tested:
        return f"vs base p50 {change.change * 100:+.1f}% (untested: no kept samples){where}\n  {baseline.label}"
    mark = f"{change.mark} ({change.change * 100:+.1f}%)" if change.mark == "~" else change.mark
    interval = f" [{(change.low or 0) * 100:+.1f}%, {(change.high or 0) * 100:+.1f}%]" if change.significant else ""
    return f"vs base p50 {mark}{interval}, base {ms(change.a)}{where}\n  {baseline.label}"


def clock_line(snapshot: RunSnapshot) -> str | None:
    """`clock SM 345-1980 MHz (median 345), mem 3201 MHz, P0, 78-128 W, 41 °C` over the calls so far (and the
    SM clock now, while running), then `⚠ ...` where it moved or was held down; on a GPU without a clock to
    read, why; on a CPU device nothing (no GPU clock there is no news)."""
    clocks = snapshot.call_clocks
    if clocks is None:
        reason, device = snapshot.call_clocks_reason, snapshot.device
        return f"clock none: {reason}" if reason and device is not None and device.kind == "gpu" else None
    line = f"clock {call_clocks_text(to_json(clocks))}"
    if snapshot.state == "running" and snapshot.clock_now is not None:
        line += f", now {snapshot.clock_now.sm_mhz} MHz"
    # The warning's first clause (what happened); what to do about it is in the Log, in full.
    short = clocks.warning.split(", so ", 1)[0].split(": ", 1)[0] if clocks.warning else ""
    return line + (f"\n⚠ {short} (the Log says what to do)" if short else "")


def modes_line(snapshot: RunSnapshot) -> str | None:
    """`2 groups: 34% at 2.300 ms, 66% at 5.600 ms (clock 1980 vs 345 MHz)` where the window's calls fall into
    separate groups (`calls.modes`), with what a profile pass saw differ between its own groups; else None."""
    breakdown = snapshot.profile.call_breakdown if snapshot.profile is not None else None
    differs = breakdown_groups_text(to_json(breakdown.groups)) if breakdown is not None else None
    return modes_text(to_json(snapshot.calls.modes), differs)


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
    TALLER_CHART = ("#run-sparkline", 2)  # the calls' times, taller where the column has room
    DEFAULT_CSS = """
    RunPane #run-phases { height: auto; }
    RunPane #run-calls { height: auto; }
    RunPane #run-pm { height: auto; display: none; }
    RunPane #run-pm-calls { height: auto; display: none; color: $text-muted; }
    RunPane Sparkline { margin-top: 1; }
    """

    _baseline_text = ""
    _baseline_at = 0.0
    _sparkline_at = 0.0
    _baseline_of: object = None
    _pm: tuple[PmSampling | None, str | None] = (None, None)  # the strip's state and the device's kind, drawn
    _pm_calls: tuple[str, ...] = ()  # the strip's figures over the calls, at the pane's width

    def compose(self) -> ComposeResult:
        yield Static(id="run-phases")
        yield Static(id="run-calls")
        yield Static(id="run-pm")  # the GPU's own counters (CUDA), or why not
        yield Static(id="run-pm-calls")  # their figures over the calls, where the column has the rows
        yield Sparkline([], id="run-sparkline", summary_function=max)

    # Rows to spare go to the PM strip's figures over the calls (whole or not at all) once the calls' chart
    # has a few of them, then to the chart.
    def rows_wanted(self) -> int:
        return len(self._pm_calls)

    def rows_in_use(self) -> int:
        figures = self.query_one("#run-pm-calls", Static)
        return super().rows_in_use() + (figures.outer_size.height if figures.display else 0)

    def take_rows(self, rows: int) -> None:
        wanted = self.rows_wanted()
        shown = wanted > 0 and rows >= wanted + PM_CALLS_AFTER_CHART_ROWS
        super().take_rows(rows - wanted if shown else rows)
        self.extra_rows = rows
        self.query_one("#run-pm-calls", Static).display = shown

    def on_resize(self) -> None:
        self._draw_pm()

    def _draw_pm(self) -> None:
        """The PM strip at the pane's width (before the pane has one, on_resize draws it)."""
        width = self.content_region.width
        if width <= 0:
            return
        pm, kind = self._pm
        strip = self.query_one("#run-pm", Static)
        lines = pm_strip_lines(pm, kind, width)
        strip.display = bool(lines)
        if lines:
            show_text(strip, Text("\n".join(lines), no_wrap=True, overflow="ellipsis"))
        self._pm_calls = tuple(pm_calls_lines(pm, kind, width))
        figures = self.query_one("#run-pm-calls", Static)
        if self._pm_calls:
            show_text(figures, Text("\n".join(self._pm_calls), no_wrap=True, overflow="ellipsis"))
        elif figures.display:  # none now (a new run): its rows go back to the chart
            self.take_rows(self.extra_rows)

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
        groups = modes_line(snapshot)
        if groups is not None:  # a p50 over two groups describes neither
            text += "\n" + groups
        if snapshot.program is not None:  # a watched program: every function it calls, the busiest first
            text = program_calls_text(to_json(snapshot.program), live=snapshot.state == "running")
        if snapshot.enqueue is not None and snapshot.enqueue.count:
            # OpenCL: what a naive host timer would have shown.
            text += f"\nenqueue returns after p50 {ms(snapshot.enqueue.p50_ms)} (not synced)"
        clock = clock_line(snapshot)
        if clock is not None:
            text += "\n" + clock
        baseline: LiveBaseline | None = getattr(self.app, "baseline", None)
        if baseline is not None and calls.count:
            now = time.monotonic()
            if baseline is not self._baseline_of or now - self._baseline_at >= BASELINE_EVERY_S:
                self._baseline_text = baseline_line(baseline, snapshot)
                self._baseline_at, self._baseline_of = now, baseline
            text += "\n" + self._baseline_text
        show_text(self.query_one("#run-calls", Static), text)
        self._pm = (snapshot.pm_sampling, snapshot.device.kind if snapshot.device is not None else None)
        self._draw_pm()
        sparkline = self.query_one("#run-sparkline", Sparkline)
        now = time.monotonic()
        every_s = SPARKLINE_ROW_PAIR_S * (max(2, sparkline.size.height) / 2 - 1)
        if now - self._sparkline_at >= every_s or snapshot.state != "running":
            sparkline.data = list(calls.recent_ms)
            self._sparkline_at = now
