"""The call breakdown: parts that add up to the synced call, none invented, none dropped.

The classifier is checked on hand-made calls and on random ones (hypothesis):
the segments tile the call's window exactly, each instant has the kind its
records give it, and device-busy time equals the union of the dispatches.
Then the real engine: `gputop run --profile` on local-task, lavapipe and PoCL,
with each pass's breakdown checked against the profile's raw records, read
independently here (`iree-profile export` JSON lines for IREE, the OpenCL
run's own events), and the Timeline view (`t`) driven in the app.
"""

from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from textual.geometry import Region
from tui_pilot import wait_for

from conftest import run_json
from gputop.core.profiling.breakdown import CallRecords, Interval, build_breakdown, classify_call, fit_clock
from gputop.core.profiling.ireeprof.tools import runtime_tool
from gputop.core.records.breakdown import SEGMENT_KINDS
from gputop.tui.app import GputopApp
from gputop.tui.bridge import ReplaySource
from gputop.tui.screens.timeline import TimelineScreen, TimelineView

PROFILED = Path(__file__).parent / "data" / "mlp_profiled_local_task.jsonl"


def test_a_call_seen_whole_is_split_by_priority() -> None:
    """Host work, a launch pending, two kernels with a gap, then the wait for the host to return."""
    call = CallRecords(
        wall_ns=100.0,
        start_ns=0.0,
        end_ns=100.0,
        api_calls=(Interval(5, 15, "cuLaunchKernel"), Interval(15, 25, "cuLaunchKernel"), Interval(30, 100, "sync")),
        queue_ops=(Interval(10, 20, "launch a", "gpu"), Interval(20, 60, "launch b", "gpu")),
        device_work=(Interval(20, 50, "a", "gpu"), Interval(60, 80, "b", "gpu")),
        kernel_ns=50.0,
    )
    segments, parts = classify_call(call)
    assert [(s.kind, s.name, round(s.start_ms * 1e6, 6), round(s.duration_ms * 1e6, 6)) for s in segments] == [
        ("host", "host work", 0, 5),
        ("host", "cuLaunchKernel", 5, 5),
        ("queue", "launch a", 10, 10),
        ("device_busy", "a", 20, 30),
        ("queue", "launch b", 50, 10),
        ("device_busy", "b", 60, 20),
        ("return_wait", "sync", 80, 20),
    ]
    assert parts["device_busy"] == 50 and parts["return_wait"] == 20 and parts["unaccounted"] == 0
    assert sum(parts.values()) == pytest.approx(100.0)


def test_a_call_without_boundaries_leaves_the_rest_unaccounted() -> None:
    """No call start or end in the records: what lies outside them is unaccounted, never host or wait."""
    call = CallRecords(
        wall_ns=1000.0,
        start_ns=None,
        end_ns=None,
        alloc_ops=(Interval(100, 300, "alloca"),),
        queue_ops=(Interval(310, 400, "execute", "dev"),),
        submissions=(Interval(400, 800, "execute", "dev"),),
        device_work=(Interval(450, 750, "dispatch", "dev"),),
        completion_seen_ns=850.0,
        kernel_ns=300.0,
    )
    segments, parts = classify_call(call)
    assert parts == {
        "host": 10.0,  # 300-310: nothing pending, the host preparing the execute
        "queue": 90.0,
        "alloc": 200.0,
        "device_busy": 300.0,
        "device_idle": 100.0,  # 400-450 and 750-800: inside the submission
        "return_wait": 50.0,  # 800-850: device done, the host saw it at 850
        "unaccounted": 250.0,  # 1000 - (850 - 100)
    }
    assert segments[-1].kind == "unaccounted" and segments[-1].start_ms * 1e6 == pytest.approx(750.0)


@st.composite
def random_calls(draw: st.DrawFn) -> CallRecords:
    def intervals(kind: str, device: str | None) -> tuple[Interval, ...]:
        found = []
        for index in range(draw(st.integers(0, 4))):
            start = draw(st.floats(0, 900, allow_nan=False))
            length = draw(st.floats(0, 300, allow_nan=False))
            found.append(Interval(start, start + length, f"{kind}{index}", device))
        return tuple(found)

    seen = draw(st.booleans())
    return CallRecords(
        wall_ns=draw(st.floats(1, 2000, allow_nan=False)),
        start_ns=0.0 if seen else None,
        end_ns=1000.0 if seen else None,
        api_calls=intervals("api", None),
        alloc_ops=intervals("alloc", "d"),
        queue_ops=intervals("queue", "d"),
        submissions=intervals("submit", "d"),
        device_work=intervals("work", "d"),
        completion_seen_ns=draw(st.none() | st.floats(0, 1200, allow_nan=False)),
    )


def _union_within(intervals: tuple[Interval, ...], lo: float, hi: float) -> float:
    spans = sorted((max(i.start, lo), min(i.end, hi)) for i in intervals if min(i.end, hi) > max(i.start, lo))
    total, end = 0.0, lo
    for start, stop in spans:
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


@settings(max_examples=300, deadline=None)
@given(random_calls())
def test_segments_tile_the_window_and_follow_the_records(call: CallRecords) -> None:
    segments, parts = classify_call(call)
    if call.start_ns is not None:
        window = 1000.0
        assert sum(parts.values()) == pytest.approx(window, abs=1e-6)
    else:
        assert sum(parts.values()) == pytest.approx(call.wall_ns, abs=1e-6)  # the parts make up the call
    # Contiguous: each segment starts where the last ended.
    for before, after in itertools.pairwise(segments):
        assert after.start_ms == pytest.approx(before.start_ms + before.duration_ms, abs=1e-9)
    if call.start_ns is not None:
        # Device busy is exactly the time some dispatch runs: not one instant invented or dropped.
        assert parts["device_busy"] == pytest.approx(_union_within(call.device_work, 0.0, 1000.0), abs=1e-6)
    for segment in segments:
        assert segment.kind in SEGMENT_KINDS and segment.duration_ms >= 0


def test_clock_fit_recovers_a_line_and_says_how_well() -> None:
    fit = fit_clock([(1000.0, 5000.0), (2000.0, 7000.5), (3000.0, 8999.5)])
    assert fit is not None and fit.slope == pytest.approx(2.0, rel=1e-3)
    assert "3 clock_correlation samples" in fit.description
    assert fit_clock([]) is None


def test_breakdown_totals_add_up_and_pick_the_median_call() -> None:
    calls = [
        CallRecords(wall_ns=w * 1e6, start_ns=0.0, end_ns=w * 1e6, device_work=(Interval(0, w * 5e5, "k", "d"),))
        for w in (1.0, 3.0, 2.0)
    ]
    breakdown = build_breakdown(calls, source="test", fit="none")
    assert breakdown is not None and breakdown.wall_ms == pytest.approx(2.0)
    totals = breakdown.totals
    assert sum(getattr(totals, f"{k}_ms") for k in SEGMENT_KINDS) == pytest.approx(breakdown.wall_ms)
    assert sum(s.duration_ms for s in breakdown.median_call) == pytest.approx(2.0)


# -- the real engine, checked against the raw records ------------------------------------------------------
def _export(bundle: Path) -> list[dict[str, Any]]:
    """The bundle's records, read here independently of gputop's parser."""
    proc = subprocess.run(
        [runtime_tool("iree-profile"), "export", "--format=ireeperf-jsonl", "--output=-", str(bundle)],
        capture_output=True,
        text=True,
        check=True,
    )
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def _check_against_records(report: dict[str, Any], calls: int) -> None:
    breakdown = report["call_breakdown"]
    assert breakdown is not None, report.get("hints")
    totals, wall = breakdown["totals"], breakdown["wall_ms"]
    assert set(totals) == {f"{k}_ms" for k in SEGMENT_KINDS}
    assert sum(totals.values()) == pytest.approx(wall, rel=1e-9), "the parts must add up to the call"
    assert all(v >= -1e-9 for v in totals.values())
    # The call's window is its benchmark timer's stretch (call marks); the tool's own figure agrees.
    assert breakdown["calls"] == calls and wall == pytest.approx(report["call_wall_ms"], rel=0.05)
    assert f"{calls} of {calls} calls' windows from the benchmark timer's marks" in breakdown["fit"]
    # The truth: the dispatches' own time per call from the raw records.
    records = _export(Path(report["profile"]["profile_path"]))
    kernel_ns = sum(
        r["duration_ns"]
        for r in records
        if r["record_type"] in ("dispatch_event", "host_execution_event")
        and r.get("key")
        and r.get("op") in (None, "dispatch")
        and r.get("valid", True)
    )
    assert breakdown["kernel_ms"] == pytest.approx(kernel_ns / calls / 1e6, rel=1e-6)
    # Device busy is at most the summed dispatch time (equal when no two overlap), never more; device
    # ticks go through the clock fit, whose slope is 1 only to a few parts in a million.
    assert totals["device_busy_ms"] <= breakdown["kernel_ms"] * (1 + 1e-4) + 1e-9
    # Every queue operation the records hold is in some call's window: as many a call as the records have.
    queue_ops = [r for r in records if r["record_type"] == "queue_event"]
    assert len(queue_ops) % calls == 0 and f"{len(queue_ops) // calls} queue operations a call" in breakdown["fit"]
    assert abs(sum(totals.values()) - report["call_wall_ms"]) < 0.05 * report["call_wall_ms"]


def _mostly_accounted(report: dict[str, Any]) -> bool:
    """The issue's bar: what the records cannot see is under 10% of the call, in the mean and the median call."""
    breakdown = report["call_breakdown"]
    median = breakdown["median_call"]
    hidden = sum(s["duration_ms"] for s in median if s["kind"] == "unaccounted")
    return bool(
        breakdown["totals"]["unaccounted_ms"] < 0.10 * breakdown["wall_ms"]
        and hidden < 0.10 * sum(s["duration_ms"] for s in median)
    )


def _profiled_run(*args: str, calls: int, timeout: float = 600) -> dict[str, Any]:
    """`gputop run --profile`, checked against its records, whose unaccounted time meets the bar.

    A 2-core machine running other work can deschedule the benchmark tool after the device finished
    (seen here: 8 ms in one call of ten, while other test suites ran); such a pass is taken once
    more, and the bar must hold then.
    """
    for attempt in range(2):
        # A full pass: the breakdown explains the one run whose records are checked (a default pass on a busy
        # lavapipe may find that run over 5% and explain a second one without dispatch timestamps).
        proc, report = run_json(*args, "-n", str(calls), "--profile=full", timeout=timeout)
        assert proc.returncode == 0, proc.stderr
        _check_against_records(report, calls)
        if _mostly_accounted(report) or attempt == 1:
            assert _mostly_accounted(report), report["call_breakdown"]["totals"]
            return report
    raise AssertionError("unreachable")


def test_local_task_breakdown_matches_the_records() -> None:
    report = _profiled_run("demo:mlp", "--device", "cpu", calls=10)
    assert report["call_breakdown"]["totals"]["device_busy_ms"] > 0.5 * report["call_breakdown"]["wall_ms"]
    # The Chrome trace carries the same segments: a host track and a device track, on one time axis.
    trace = json.loads(Path(report["profile"]["trace_path"]).read_text())["traceEvents"]
    segments = [e for e in trace if e.get("ph") == "X" and e.get("tid") == 0]
    host_kinds = {e["cat"] for e in segments if e["pid"] == 0}
    device_kinds = {e["cat"] for e in segments if e["pid"] != 0}
    assert "device_busy" in device_kinds and not device_kinds - {"device_busy", "device_idle"}
    assert host_kinds <= {"host", "queue", "alloc", "return_wait", "unaccounted"} and host_kinds
    assert len([e for e in trace if e.get("cat") == "call"]) == 10
    busy_ms = sum(e["dur"] for e in segments if e["cat"] == "device_busy") / 1e3 / 10
    assert busy_ms == pytest.approx(report["call_breakdown"]["totals"]["device_busy_ms"], rel=1e-6)


@pytest.mark.vulkan
def test_lavapipe_breakdown_matches_the_records(vulkan_device: str) -> None:
    report = _profiled_run("demo:mlp", "--device", vulkan_device, calls=4, timeout=900)
    fit = report["call_breakdown"]["fit"]
    assert "clock_correlation samples" in fit  # device ticks put on the host clock by a fitted line
    median = report["call_breakdown"]["median_call"]
    assert {s["kind"] for s in median} >= {"device_busy", "queue"}
    assert {s["device"] for s in median if s["kind"] == "device_busy"} == {vulkan_device}


@pytest.mark.opencl
def test_pocl_breakdown_comes_from_every_calls_events(opencl_device: str) -> None:
    proc, report = run_json("demo:opencl-chain", "--device", opencl_device, "-n", "20")
    assert proc.returncode == 0, proc.stderr
    breakdown = report["call_breakdown"]
    totals, wall = breakdown["totals"], breakdown["wall_ms"]
    assert sum(totals.values()) == pytest.approx(wall, rel=1e-9)
    assert totals["unaccounted_ms"] == pytest.approx(0.0, abs=1e-9)  # the call's start and end are seen
    # Against the events: the kernels' summed time per call is the kernel table's.
    assert breakdown["kernel_ms"] == pytest.approx(report["call_kernel_ms"], rel=0.05)
    assert totals["device_busy_ms"] > 0.5 * wall
    kernel_names = {k["name"] for k in report["kernels"]}
    assert {s["name"] for s in breakdown["median_call"] if s["kind"] == "device_busy"} <= kernel_names


def test_without_call_marks_the_ends_of_a_call_are_unaccounted(tmp_path: Path) -> None:
    """No marks library (no C compiler): the pass still breaks calls down, and what it cannot see is said."""
    from conftest import run_gputop

    proc = run_gputop(
        "run", "demo:mlp", "--device", "cpu", "-n", "3", "--profile", "--quiet", "--json", "-",
        env={"GPUTOP_CALL_MARKS_LIB": str(tmp_path / "absent.so")},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    breakdown = json.loads(proc.stdout)["call_breakdown"]
    assert "call boundaries unseen" in breakdown["fit"] and "absent.so: no such file" in breakdown["fit"]
    assert breakdown["totals"]["unaccounted_ms"] > 0
    assert sum(breakdown["totals"].values()) == pytest.approx(breakdown["wall_ms"], rel=1e-9)


def test_call_marks_are_the_benchmark_timers_stretches(tmp_path: Path) -> None:
    """The marks library, loaded into iree-benchmark-module, stamps each timed call on IREE's clock."""
    from gputop.core.profiling.ireeprof.call_marks import marks_environment, marks_library, read_marks
    from gputop.core.profiling.ireeprof.tools import benchmark_call_ms

    library, why = marks_library()
    assert library is not None, why
    vmfb = tmp_path / "m.vmfb"
    compiled = run_json("demo:mlp", "--device", "cpu", "-n", "0")[1]["compile"]["vmfb"]
    vmfb.write_bytes(Path(compiled).read_bytes())
    marks, timings = tmp_path / "marks.txt", tmp_path / "calls.json"
    subprocess.run(
        [runtime_tool("iree-benchmark-module"), f"--module={vmfb}", "--device=local-task", "--function=mlp",
         *[f"--input={s}xf32=1" for s in ("256x1024", "1024x1024", "1024x512", "512x256")],
         "--benchmark_min_time=1x", "--benchmark_repetitions=3", f"--benchmark_out={timings}",
         "--benchmark_out_format=json"],
        env=marks_environment(library, marks), check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    pairs = read_marks(marks)
    walls = benchmark_call_ms(timings)
    calls = [stop - start for start, stop in pairs if (stop - start) / 1e6 > 0.5 * min(walls)]
    assert len(calls) == 3
    # Google Benchmark's own figure: the same stretch, read with its wall clock a few instructions from
    # the marks' reads. A 2-core machine running other work can deschedule the tool between the two
    # (seen in CI: 12.50 against 12.63 ms): each call within 3%, their median within 1%.
    ratios = sorted(marked / 1e6 / wall for marked, wall in zip(calls, walls, strict=True))
    assert all(ratio == pytest.approx(1.0, rel=0.03) for ratio in ratios), ratios
    assert ratios[len(ratios) // 2] == pytest.approx(1.0, rel=0.01), ratios


def test_the_calls_window_is_on_this_processs_monotonic_clock(tmp_path: Path) -> None:
    """A non-CUDA pass's clocks are those read while its calls ran: the window from the tool's records
    must be on the clock the clock watch stamps its readings with (CLOCK_MONOTONIC, `time.monotonic_ns`).
    Checked against this process's own stamps around the tool, and Google Benchmark's own wall times."""
    import time

    from gputop.core.module.device_discovery import resolve_device
    from gputop.core.profiling.ireeprof.tool_pass import profile_with_ireeprof
    from gputop.core.profiling.ireeprof.tools import benchmark_call_ms

    vmfb = tmp_path / "m.vmfb"
    compiled = run_json("demo:mlp", "--device", "cpu", "-n", "0")[1]["compile"]["vmfb"]
    vmfb.write_bytes(Path(compiled).read_bytes())
    inputs = [f"{s}xf32=1" for s in ("256x1024", "1024x1024", "1024x512", "512x256")]
    before = time.monotonic_ns()
    summary, _events, window = profile_with_ireeprof(vmfb, [resolve_device("local-task")], "mlp", inputs, 3, tmp_path)
    after = time.monotonic_ns()
    assert window is not None
    start, end = window
    assert before < start < end < after  # inside the tool's run, on this process's clock
    [timings] = tmp_path.glob("profile-*-calls.json")
    walls_ns = sum(benchmark_call_ms(timings)) * 1e6
    assert walls_ns <= (end - start) * 1.01  # the three calls lie inside it
    assert end - start < after - before  # ... and the tool's start-up and teardown outside it
    assert summary.call_breakdown is not None


def test_run_prints_the_breakdown_after_the_kernels() -> None:
    from conftest import run_gputop

    proc = run_gputop("run", "demo:mlp", "--device", "cpu", "-n", "4", "--profile", "--quiet")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    kernels = next(i for i, line in enumerate(lines) if line.startswith("kernels"))
    breakdown = next(i for i, line in enumerate(lines) if line.startswith("breakdown"))
    assert breakdown > kernels
    assert any("<- largest" in line for line in lines[breakdown:])
    assert any(line.strip().startswith("unaccounted") for line in lines[breakdown:])


# -- the Timeline view ------------------------------------------------------------------------------------
async def test_t_opens_the_timeline_of_the_newest_pass() -> None:
    app = GputopApp(ReplaySource.from_file(PROFILED))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.5)
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.query_one(TimelineView))
        await pilot.pause(0.3)  # laid out at the window's size
        view = app.screen.query_one(TimelineView)
        lines = view.render_lines(Region(0, 0, view.size.width, view.size.height))
        rendered = "\n".join("".join(segment.text for segment in line) for line in lines)
        assert "median call" in rendered and "local-task" in rendered and "unaccounted" in rendered
        assert max(len(line.rstrip()) for line in rendered.splitlines()) <= 80
        await pilot.press("t")
        await wait_for(pilot, lambda: not isinstance(app.screen, TimelineScreen), timeout=5.0)
