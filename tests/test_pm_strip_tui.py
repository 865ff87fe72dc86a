"""The PM sampling strip in the TUI (issue 48): the Run pane's lines of the GPU's own counters, and `g`.

- The strip's text (`tui.text.pm_strip`) is built from a real snapshot: a `RunState` fed with the samples
  and calls captured on an H100 (tests/pm_records.py), so the series, the newest values and the calls'
  figures are the engine's own. Each line must fit the Run pane's width at 80 and at 120 columns, each
  value must be the snapshot's `newest` as the strip rounds it, and each sparkline must be the newest
  points of that metric's series (a blank where the series holds 0, the idle gaps between bursts; `MISSING`
  where it holds None, no samples: issue 57 item 8).
- `g` in the real app on a live local-task run (the real path on a machine without an NVIDIA GPU): the
  Log says, once, the CPU device's refusal, in the engine's own words from the snapshot.
- The Run pane drawn at 80x24 from a recorded snapshot carrying that strip on an H100: the two strip
  lines are on screen, inside the pane, with nothing pushed off it; at 200x60 the calls' figures follow.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from pm_records import DECODE_S, fed_state, pm_of
from tui_pilot import calls, live_app, screen_lines, wait_for

from gputop.core.records.devices import DeviceInfo
from gputop.core.records.pm import PmSampling
from gputop.core.snapshot import RunSnapshot
from gputop.core.store.replay import read_snapshots, write_snapshots
from gputop.tui.app import GputopApp
from gputop.tui.bridge import ReplaySource
from gputop.tui.panes.log import LogPane
from gputop.tui.text.pm_strip import BLOCKS, MISSING, pm_calls_lines, pm_strip_lines, sparkline

DATA = Path(__file__).parent / "data"
RUN_WIDTH_80 = 76  # the Run pane's text at 80 columns (the compact layout: the pane alone, framed and padded)
RUN_WIDTH_120 = 44  # at 120 columns (the left column's 2fr of 5, framed and padded)
MID_RUN_S = 3.2  # into the third busy phase of the recording: every metric has a newest value, SM's above 0
# The device the samples were captured on (the file's `made_by`): the strip is drawn only on a GPU.
H100 = DeviceInfo(
    id="cuda:0",
    backend="cuda",
    name="NVIDIA H100 80GB HBM3",
    memory_total_bytes=85520809984,
    compile_target=("--iree-hal-target-device=cuda",),
    available=True,
    kind="gpu",
)


def _fed(tmp_path: Path, until_s: float | None = MID_RUN_S) -> PmSampling:
    state, _ = fed_state("mm_f32", tmp_path, until_s=until_s)
    pm: PmSampling = pm_of(state.snapshot)
    return pm


def _shown(value: float, unit: str) -> str:
    return f"{value:.0f} MHz" if unit == "MHz" else f"{value:.1f}%"


def _spark_of(line: str, label: str, value: str) -> str:
    """The sparkline between `label` and `value` on a strip line, without the blanks it starts with (they read
    the same as the label's padding)."""
    match = re.search(rf"(?:^|  ){re.escape(label)} ([{BLOCKS}{MISSING} ]*) {re.escape(value)}(?:  |\s*$)", line)
    assert match is not None, (label, value, line)
    return match.group(1).lstrip()


@pytest.mark.parametrize(("width", "lines"), [(RUN_WIDTH_80, 2), (RUN_WIDTH_120, 4)], ids=["80cols", "120cols"])
def test_the_strip_of_a_fed_snapshot_fits_and_says_its_numbers(tmp_path: Path, width: int, lines: int) -> None:
    """Two metrics a line at 80 columns (the pane's two rows), one a line at 120 (a narrower pane, taller);
    each value is `newest` rounded as shown, each sparkline the series' newest points, newest at the right."""
    pm = _fed(tmp_path)
    assert pm.state == "sampling" and [m.label for m in pm.metrics] == ["SM", "tensor", "DRAM", "clock"]
    strip = pm_strip_lines(pm, "gpu", width)
    assert len(strip) == lines and all(len(line) <= width for line in strip), strip
    assert strip[0].startswith("SM ") and strip[-1].startswith(("DRAM ", "clock ")), strip
    for metric, newest, series in zip(pm.metrics, pm.newest, pm.series, strict=True):
        assert newest is not None
        value = _shown(newest, metric.unit)
        line = next(line for line in strip if re.search(rf"(?:^|  ){metric.label} ", line))
        spark = _spark_of(line, metric.label, value)
        read = [point for point in series if point is not None]
        if not any(point > 0 for point in read):  # tensor: the f32 matmul never used the tensor pipes
            assert set(spark) <= {MISSING, " "}, (metric.label, spark)
            continue
        assert newest > 0 and 10 <= len(spark) <= width, (metric.label, spark)  # mid-run: 3 s of samples
        # One character a point, the newest at the right: blank exactly where the series holds 0, MISSING where
        # it holds None (before the samples began: 3.2 s of a 15 s strip).
        points = series[len(series) - len(spark) :]
        assert [c == " " for c in spark] == [p == 0.0 for p in points], (metric.label, spark, points)
        assert [c == MISSING for c in spark] == [p is None for p in points], (metric.label, spark, points)
    # The idle half-seconds between the bursts of calls show as gaps in SM's sparkline.
    assert re.search(r"▁ +▁", _spark_of(strip[0], "SM", _shown(pm.newest[0] or 0.0, "%"))), strip[0]
    clock_line = next(line for line in strip if "clock " in line)
    clock = _spark_of(clock_line, "clock", _shown(pm.newest[3] or 0.0, "MHz"))
    # 1980-1995 MHz: a boost clock's wander is not drawn as a cliff
    assert set(clock.lstrip(MISSING)) <= {"▇", "█"}, clock
    if lines == 2:  # the sparklines of a column end together: SM's value and DRAM's start at one column
        assert strip[0].index(_shown(pm.newest[0] or 0.0, "%")) == strip[1].index(_shown(pm.newest[2] or 0.0, "%"))


def test_sparkline_scales_percent_to_the_peak_and_blanks_zero() -> None:
    """0..100 for a share of peak (50% is half way, 3% the lowest block, 0 nothing), the newest points kept."""
    assert sparkline([50.0, 100.0, 0.0, 3.0], "%", 4) == "▅█ ▁"
    assert sparkline([10.0, 50.0, 100.0], "%", 2) == "▅█"  # the newest two
    assert sparkline([345.0, 1980.0, 0.0], "MHz", 3) == "▁█ "  # a clock against its own range


def test_the_calls_figures_of_a_fed_snapshot_fit_and_match(tmp_path: Path) -> None:
    """`over N calls: SM p50 .. p95 ..`, N the calls samples covered, each figure the snapshot's own."""
    pm = _fed(tmp_path, until_s=None)
    for width in (RUN_WIDTH_80, RUN_WIDTH_120):
        lines = pm_calls_lines(pm, "gpu", width)
        assert lines and all(len(line) <= width for line in lines), lines
        text = "  ".join(lines)
        assert lines[0].startswith(f"over {pm.calls_aligned} calls: "), lines
        for metric in pm.metrics:
            figures = pm.figures(metric.name)
            assert figures is not None
            said = f"{metric.label} p50 {_shown(figures.p50, metric.unit)} p95 {_shown(figures.p95, metric.unit)}"
            assert said in text, (said, lines)


def test_not_sampling_is_one_line_on_a_gpu_and_nothing_on_a_cpu() -> None:
    """A pause says why in one line cut to the width; a CPU device's refusal is no news (no line)."""
    why = "a counters pass (ncu) holds the GPU's counters: the strip goes on when it ends"
    paused = PmSampling(state="paused", reason=why)
    assert pm_strip_lines(paused, "gpu", 200) == [f"pm  paused: {why}"]
    cut = pm_strip_lines(paused, "gpu", 40)
    assert len(cut) == 1 and len(cut[0]) == 40 and cut[0].startswith("pm  paused: a counters") and cut[0][-1] == "…"
    refused = PmSampling(state="refused", reason="PM sampling reads an NVIDIA GPU's counters through CUDA")
    assert pm_strip_lines(refused, "cpu", 76) == [] and pm_calls_lines(refused, "cpu", 76) == []
    assert pm_strip_lines(None, "gpu", 76) == []


async def test_g_on_a_cpu_run_says_the_devices_refusal() -> None:
    """The real app on a live local-task run: `g` asks the engine to sample, and the Log says why it cannot,
    once, in the words the snapshot's `pm_sampling.reason` holds; the Run pane shows no strip."""
    app = live_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 0)
        pm = app.snapshot.pm_sampling if app.snapshot is not None else None
        assert pm is not None and pm.state == "refused" and pm.reason, pm
        await pilot.press("g")

        def said() -> list[str]:
            return [m for m in app.query_one(LogPane).messages if "pm: " in m or "PM sampling o" in m]

        await wait_for(pilot, said, timeout=30)
        await pilot.pause(0.3)  # and nothing more said of it
        lines = said()
        assert len(lines) == 1 and lines[0].endswith(f"pm: {pm.reason}"), lines
        assert "local-task" in lines[0], lines
        assert not app.query_one("#run-pm").display


def _recorded_on_the_h100(pm: PmSampling) -> RunSnapshot:
    """A recorded running snapshot of demo:mlp, on the H100 and with the strip the H100's samples made."""
    recorded = read_snapshots(DATA / "mlp_local_task.jsonl")
    running = [snapshot for snapshot in recorded if snapshot.state == "running"][-1]
    return replace(running, device=H100, pm_sampling=pm, call_clocks=None, call_clocks_reason=None)


async def test_the_run_pane_at_80x24_shows_the_two_strip_lines(tmp_path: Path) -> None:
    """The pane in front at 80x24: the strip's two lines, as the text module writes them at the pane's width,
    are rows of the screen inside the Run pane's frame, the pane still fits (nothing scrolls), and the
    calls' figures give way to the calls' chart; `g` on a recorded run says it is one."""
    pm = _fed(tmp_path)
    app = GputopApp(ReplaySource([_recorded_on_the_h100(pm)]))
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one("#run")
        strip = app.query_one("#run-pm")
        await wait_for(pilot, lambda: strip.display and strip.size.height == 2, timeout=10)
        width = pane.content_region.width
        assert width == RUN_WIDTH_80
        expected = pm_strip_lines(pm, "gpu", width)
        assert len(expected) == 2
        rows = screen_lines(app)
        top, bottom = pane.region.y, pane.region.bottom
        for line in expected:
            at = [i for i, row in enumerate(rows) if f"│ {line}" in row]
            assert len(at) == 1 and top < at[0] < bottom - 1, (line, at, rows)
        assert not app.query_one("#panes").max_scroll_y  # the pane fits: nothing below its frame is lost
        assert not app.query_one("#run-pm-calls").display
        assert app.query_one("#run-sparkline").size.height >= 2
        await pilot.press("g")
        await wait_for(pilot, lambda: any("pm: " in m for m in app.query_one(LogPane).messages), timeout=10)
        assert app.query_one(LogPane).messages[-1].endswith("pm: this is a recorded run")


async def test_the_calls_figures_follow_where_the_column_has_rows(tmp_path: Path) -> None:
    """At 200x60 the left column has rows to spare: the strip's figures over the calls are drawn under it,
    as the text module writes them at the pane's width."""
    pm = _fed(tmp_path, until_s=None)
    app = GputopApp(ReplaySource([_recorded_on_the_h100(pm)]))
    async with app.run_test(size=(200, 60)) as pilot:
        figures = app.query_one("#run-pm-calls")
        await wait_for(pilot, lambda: figures.display, timeout=10)
        await pilot.pause(0.3)
        pane = app.query_one("#run")
        expected = pm_calls_lines(pm, "gpu", pane.content_region.width)
        assert len(expected) == 2, expected
        rows = screen_lines(app)
        for line in expected:
            at = [i for i, row in enumerate(rows) if f"│ {line}" in row]
            assert len(at) == 1 and pane.region.y < at[0] < pane.region.bottom - 1, (line, at, rows)


def test_a_pause_in_the_samples_is_missing_not_idle(tmp_path: Path) -> None:
    """Issue 57 item 8: the H100's recorded samples with the watch paused for a second (as a counters pass
    pauses it): the quarter seconds of the pause hold None in the engine's series, and survive the session's
    record (`samples.jsonl` back through `gputop open`'s reader) as null, not 0; the idle gaps the GPU really
    had (its counters read 0 between the bursts, tests/pm_records.py) stay 0. The recording's own timestamps
    are the independent source: which bins have samples is counted from its rows here."""
    state, data = fed_state("mm_f32", tmp_path, until_s=MID_RUN_S, paused=(1.0, 2.0))
    pm: PmSampling = pm_of(state.snapshot)
    first = data["rows"][0, 0]
    kept = state.pm.kept()  # the samples the watch was handed: none that end inside the pause
    assert not ((kept[:, 1] > first + 1.0 + DECODE_S) & (kept[:, 1] <= first + 2.0)).any()
    newest_end, bins = kept[-1, 1], len(pm.series[0])
    index = set((np.floor((kept[:, 1] - newest_end) / pm.bin_s).astype(int) + bins - 1).tolist())
    sm = pm.series[0]
    assert [point is not None for point in sm] == [i in index for i in range(bins)]
    assert sum(point is None for point in sm[-13:]) >= 3, sm  # the pause: about a second in the last 3.2 s
    assert any(point == 0.0 for point in sm)  # the idle gaps between bursts: read, and 0
    # The record keeps the gap as null: `gputop open` draws the same strip.
    write_snapshots(tmp_path / "copy.jsonl", [state.snapshot])
    (back,) = read_snapshots(tmp_path / "copy.jsonl")
    assert back.pm_sampling is not None and back.pm_sampling.series == pm.series
    # Drawn: the paused quarter seconds are MISSING, the idle ones blank, nowhere the other's mark.
    spark = sparkline(sm, "%", len(sm))
    assert [c == MISSING for c in spark] == [p is None for p in sm]
    assert [c == " " for c in spark] == [p == 0.0 for p in sm]
    assert sparkline([None, 0.0, 50.0], "%", 3) == f"{MISSING} ▅"
    assert sparkline([None, 1980.0, 345.0], "MHz", 3) == f"{MISSING}█▁"


async def test_the_run_pane_draws_the_pause_as_missing(tmp_path: Path) -> None:
    """The real app at 80x24 from a recorded snapshot whose strip has the pause: the SM line on screen holds
    MISSING where the series holds None (the newest points, newest at the right), blanks where it holds 0."""
    state, _ = fed_state("mm_f32", tmp_path, until_s=MID_RUN_S, paused=(1.0, 2.0))
    pm: PmSampling = pm_of(state.snapshot)
    app = GputopApp(ReplaySource([_recorded_on_the_h100(pm)]))
    async with app.run_test(size=(80, 24)) as pilot:
        strip = app.query_one("#run-pm")
        await wait_for(pilot, lambda: strip.display and strip.size.height == 2, timeout=10)
        (row,) = [row for row in screen_lines(app) if "│ SM " in row]
        value = _shown(pm.newest[0] or 0.0, "%")
        spark = _spark_of(row.split("│ ", 1)[1], "SM", value)  # its label's padding left out
        points = pm.series[0][len(pm.series[0]) - len(spark) :]
        assert MISSING in spark and [c == MISSING for c in spark] == [p is None for p in points], (spark, points)
        assert [c == " " for c in spark] == [p == 0.0 for p in points], (spark, points)
