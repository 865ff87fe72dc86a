"""One formatter for every face: the TUI and `gputop report` write a run's numbers alike.

The cross-face test renders one recorded run (a real profile pass of demo:mlp
on local-task, with each kernel's FLOPs, bytes and share of the CPU's peaks)
through the Textual app and through the report text, and compares what both
show of each kernel. One kernel is given the case that once split the faces:
a share of the bandwidth but no compute peak for its type (so no bound). The
formatters themselves are checked at their edges below.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gputop.core.snapshot import RunSnapshot
from gputop.core.store.replay import read_snapshots
from gputop.core.store.report import snapshot_report
from gputop.core.units import (
    BYTES,
    RATE,
    TIME_US,
    column,
    fixed,
    flop_per_byte,
    gbps,
    human_bytes,
    in_unit,
    mhz,
    ms,
    ms_fixed,
    pct_of_bound,
    percent,
    pick_unit,
    seconds,
    si,
    watts,
)
from gputop.core.wording import (
    clocks_text,
    limits_line,
    limits_lines,
    name_marked,
    peaks_text,
    unknown_work,
    work_lines,
)
from gputop.tui.app import GputopApp
from gputop.tui.bridge import ReplaySource
from gputop.tui.panes.table import KeyedTable
from gputop.tui.text import run_report

ROOFLINE_RECORDING = Path(__file__).parent / "data" / "mlp_local_task_roofline.jsonl"
UNBOUND = "mlp_dispatch_2_matmul_256x256x512_f32"


def recorded_snapshot() -> RunSnapshot:
    """The recorded run's last snapshot, one kernel with a bandwidth share and no compute peak."""
    snapshot = read_snapshots(ROOFLINE_RECORDING)[-1]
    profile = snapshot.profile
    assert profile is not None and profile.peaks is not None and len(profile.kernels) == 3
    kernels = tuple(
        replace(k, pct_peak_compute=None, peak_tflops=None, bound=None) if k.name == UNBOUND else k
        for k in profile.kernels
    )
    assert next(k for k in kernels if k.name == UNBOUND).pct_peak_bandwidth is not None
    return replace(snapshot, profile=replace(profile, kernels=kernels))


def report_kernel_rows(text: str) -> tuple[str, dict[str, list[str]]]:
    """The report's kernel table: its header line, and each kernel's cells by full name."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:3] == ["kernel", "from", "count"])
    rows = {}
    for line in lines[start + 1 :]:
        words = line.split()
        # The `from` cell (mlp.mlir:7:9 +1) is one or two words: the count, a plain number, follows it.
        count = next((i for i, word in enumerate(words[1:], start=1) if word.isdigit()), len(words))
        cells = [*words[:1], *words[count:]]
        if not line.startswith("  ") or len(cells) != 12:
            break
        rows[cells[0]] = cells
    return lines[start], rows


async def test_the_tui_and_the_report_show_a_kernel_alike() -> None:
    snapshot = recorded_snapshot()
    report_text = run_report(snapshot_report(snapshot))
    header, report_rows = report_kernel_rows(report_text)
    app = GputopApp(ReplaySource([snapshot]))
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause(0.5)
        table = app.query_one("#kernels-table", KeyedTable)
        summary = str(app.query_one("#kernels-summary").render())
        calls_text = str(app.query_one("#run-calls").render())
        memory_text = str(app.query_one("#memory-device").render())
        assert table.row_keys and set(table.row_keys) == set(report_rows)
        for name in ("avg", "min", "max", "FLOP/s", "B/s"):  # each column in the same unit in both
            assert str(table.columns[name].label) in header, (name, header)
        for key in table.row_keys:
            tui = table.row_cells(key)
            _, count, avg, low, high, share, _, _, flops, rate, pct, bound = report_rows[key]
            assert (count, avg, low, high, share) == (tui["count"], tui["avg"], tui["min"], tui["max"], tui["share"])
            assert (flops, rate, pct, bound) == (tui["FLOP/s"], tui["B/s"], tui["%peak"], tui["bound"]), key
        # The kernel without a bound: both show its share of the one peak known, not '-' in one face.
        assert table.row_cells(UNBOUND)["%peak"] == report_rows[UNBOUND][10] != "-"
    # The device's peaks, the kernel time per call, the calls' times and the memory read alike.
    profile = snapshot.profile
    assert profile is not None
    peaks = [line for line in report_text.splitlines() if line.startswith("peaks")]
    assert len(peaks) == 1 and f"peak {peaks[0].split(': ', 1)[1].split(' (')[0]}" in summary
    assert f"{ms_fixed(profile.call_kernel_ms)} per call" in summary
    assert f"{ms_fixed(profile.call_kernel_ms)} kernel time per call" in report_text
    for name in ("p50", "p95", "max"):
        value = ms(getattr(snapshot.calls, f"{name}_ms"))
        assert f"{name} {value}" in calls_text and f"{name} {value}" in report_text
    device = snapshot.memory.devices[0] if snapshot.memory else None
    assert device is not None and device.device_used_bytes is not None
    used = f"device {human_bytes(device.device_used_bytes)} / {human_bytes(device.device_total_bytes)}"
    assert used in memory_text and used in report_text


async def test_a_kernel_above_an_estimated_peak_shows_clamped_and_marked() -> None:
    """The issue's `%peak` of 103%: against a CPU's estimated peak a kernel's share above 100% shows as
    `>100%*` in the Kernels pane, the roofline's legend and the report, each saying the peaks are estimates;
    the JSON keeps 103.4 and `estimate: true`. A datasheet's peak is not marked."""
    from gputop.tui.screens.roofline import render_roofline

    snapshot = recorded_snapshot()
    profile = snapshot.profile
    assert profile is not None and profile.peaks is not None
    fast = profile.kernels[0]
    kernels = (replace(fast, pct_peak_compute=103.4, bound="compute"), *profile.kernels[1:])
    estimated = replace(profile, kernels=kernels, peaks=replace(profile.peaks, estimate=True))
    snapshot = replace(snapshot, profile=estimated)
    report = snapshot_report(snapshot)
    assert report["profile"]["peaks"]["estimate"] is True
    assert next(k for k in report["kernels"] if k["name"] == fast.name)["pct_peak_compute"] == 103.4
    text = run_report(report)
    _, rows = report_kernel_rows(text)
    assert rows[fast.name][10] == ">100%*" and "103.4%" not in text
    assert "*estimates: a kernel may beat them" in text
    legend = render_roofline(estimated, 120, 40, snapshot.function or "").plain
    assert ">100%* of its compute roof" in legend and "(estimates: a kernel may beat them)" in legend
    assert "103.4%" not in legend
    app = GputopApp(ReplaySource([snapshot]))
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause(0.5)
        table = app.query_one("#kernels-table", KeyedTable)
        assert table.row_cells(fast.name)["%peak"] == ">100%*"
        assert "(*estimates: a kernel may beat them)" in str(app.query_one("#kernels-summary").render())
    datasheet = replace(estimated, peaks=replace(profile.peaks, estimate=False))
    assert "103.4% of its compute roof" in render_roofline(datasheet, 120, 40, snapshot.function or "").plain


# -- each formatter at its edges ----------------------------------------------------------------------


def test_fixed_never_prints_a_negative_zero() -> None:
    assert fixed(None) == "-"
    assert fixed(-0.0004, 3) == "0.000" and fixed(-0.0004, 0) == "0" and fixed(-0.04) == "0.0"
    assert fixed(-0.06) == "-0.1" and fixed(0) == "0.0" and fixed(1e15, 0) == "1000000000000000"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "-"),
        (0, "0 B"),
        (-0.4, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (7.5 * 2**20, "7.5 MiB"),
        (-3 * 2**30, "-3.0 GiB"),
        (2**40, "1.0 TiB"),
        (5 * 2**50, "5120.0 TiB"),  # past the largest unit: more of it
    ],
)
def test_human_bytes(value: float | None, text: str) -> None:
    assert human_bytes(value) == text


def test_human_bytes_with_two_decimals_for_sizes_set_side_by_side() -> None:
    assert human_bytes(3 * 2**30, 2) == "3.00 GiB" and human_bytes(2**31 - 2**20, 2) == "2.00 GiB"
    assert human_bytes(512, 2) == "512 B"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "-"),
        (0, "0 s"),  # a number a person reads names its unit
        (-0.0000004, "0 s"),  # rounding noise
        (4e-7, "0 s"),
        (19e-6, "19 µs"),
        (0.000999, "999 µs"),
        (0.0464, "46.4 ms"),
        (0.9999, "999.9 ms"),
        (1.25, "1.25 s"),
        (86400, "86400.00 s"),
        (-0.5, "-500.0 ms"),
    ],
)
def test_seconds(value: float | None, text: str) -> None:
    assert seconds(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "-"),
        (0, "0.000 ms"),
        (-0.0004, "0.000 ms"),
        (9.301, "9.301 ms"),
        (9.9996, "10.000 ms"),  # below 10: to the microsecond
        (152.455, "152.5 ms"),
        (1e9, "1000000000.0 ms"),
    ],
)
def test_ms(value: float | None, text: str) -> None:
    assert ms(value) == text


def test_ms_fixed_keeps_its_places_so_parts_add_up() -> None:
    assert ms_fixed(None) == "-" and ms_fixed(48.0224) == "48.022 ms" and ms_fixed(-0.0004) == "0.000 ms"
    assert ms_fixed(1.234, 2) == "1.23 ms" and ms_fixed(123456.7891) == "123456.789 ms"


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (0, "B/s", "0.00 B/s"),
        (-0.0004, "B/s", "0.00 B/s"),
        (0.5, "FLOP/s", "0.50 FLOP/s"),
        (999.4, "B/s", "999 B/s"),
        (1.87e12, "FLOP/s", "1.87 TFLOP/s"),
        (3.33e11, "FLOP/s f32", "333 GFLOP/s f32"),
        (9.919e9, "B/s", "9.92 GB/s"),
        (12.34e6, "B/s", "12.3 MB/s"),
        (-1.5e6, "FLOP/s", "-1.50 MFLOP/s"),
        (5e21, "FLOP/s", "5000000 PFLOP/s"),
        (1e11, "", "100G"),
        (0.1, "", "0.1"),
    ],
)
def test_si(value: float, unit: str, text: str) -> None:
    assert si(value, unit) == text


def test_rates_and_clocks_in_their_fixed_units() -> None:
    assert gbps(None) == "-" and gbps(25.34) == "25.3 GB/s" and gbps(0.04) == "0.0 GB/s" and gbps(-0.01) == "0.0 GB/s"
    assert flop_per_byte(None) == "-" and flop_per_byte(85.2345) == "85.2 FLOP/B" and flop_per_byte(0) == "0 FLOP/B"
    assert mhz(None) == "?" and mhz(1979.6) == "1980 MHz" and watts(None) == "?" and watts(299.5) == "300 W"


def test_percent() -> None:
    assert percent(None) == "-" and percent(0) == "0.0%" and percent(-0.0004) == "0.0%"
    assert percent(4.94) == "4.9%" and percent(100) == "100.0%" and percent(12345.67, 0) == "12346%"


@pytest.mark.parametrize(
    ("bound", "compute", "bandwidth", "share"),
    [
        ("compute", 4.9, 0.2, 4.9),
        ("memory", 1.0, 80.0, 80.0),
        (None, None, 12.5, 12.5),  # no compute peak for its type: the bandwidth's share (the old report: None)
        (None, 30.0, None, 30.0),  # no bandwidth known: the compute share
        (None, 30.0, 60.0, 60.0),  # both known, no bound said: the lower roof's, the larger share
        (None, None, None, None),
        ("memory", 7.0, None, 7.0),  # a bound whose share is missing: the one known
        ("compute", 0.0, 0.0, 0.0),
    ],
)
def test_pct_of_bound_has_one_rule(
    bound: str | None, compute: float | None, bandwidth: float | None, share: float | None
) -> None:
    assert pct_of_bound(bound, compute, bandwidth) == share


def test_a_column_picks_one_unit_for_all_its_cells() -> None:
    assert column("avg", [32915.8, 1326.0, None], TIME_US) == ("avg ms", ["32.9", "1.33", "-"])
    assert column("avg", [None, None], TIME_US) == ("avg µs", ["-", "-"])
    assert column("avg", [0.0, -0.0004, 0.0004], TIME_US) == ("avg µs", ["0", "0", "0.0004"])  # noise: 0
    assert column("", [1.63e10, 5.06e10], RATE) == (" G", ["16.3", "50.6"])
    assert column("live", [7.5 * 2**20, 512], BYTES) == ("live MiB", ["7.50", "0.000488"])
    assert column("FLOP/s", [1e30], RATE)[1] == ["1000000000000000"]  # past the largest prefix: more of it
    assert pick_unit([999.4], TIME_US) == (1.0, "µs") and pick_unit([999.6], TIME_US) == (1e3, "ms")
    assert in_unit(None, 1.0) == "-" and in_unit(0, 1e3) == "0" and in_unit(99.96, 1.0) == "100"


CLOCKS = {
    "gpu": "NVIDIA H200 (nvml:0)",
    "start": {"sm_mhz": 345, "max_sm_mhz": 1980, "pstate": "P0", "power_w": None, "throttle_reasons": ["gpu_idle"]},
    "end": {"sm_mhz": 1980, "max_sm_mhz": 1980, "pstate": "P0", "power_w": 299.6, "throttle_reasons": []},
    "mean_sm_mhz": 1410.2,
    "mean_mem_mhz": 2619.0,
    "warning": "GPU clock changed during the pass (345 -> 1980 MHz)",
    "warmup": None,
}
PEAKS = {
    "part": "NVIDIA H200 SXM",
    "source": "datasheet",
    "f32_tflops": 66.8,
    "bandwidth_gbps": 4800.0,
    "sm_mhz": 1410.2,
    "compute_scale": 0.5,
    "bandwidth_scale": 1.0,
}


def test_the_limits_in_one_line_and_in_the_reports_lines() -> None:
    assert clocks_text(CLOCKS) == "SM 1410/1980 MHz, mem 2619 MHz, P0, 300 W"
    assert clocks_text(CLOCKS, over_pass=True) == "SM 345 -> 1980 MHz (mean 1410, max 1980), memory 2619 MHz, P0, 300 W"
    # The peaks at the pass's clock: what each kernel's share is against.
    assert peaks_text(PEAKS) == "33.4 TFLOP/s f32, 4.80 TB/s"
    assert peaks_text({**PEAKS, "f32_tflops": None, "bandwidth_gbps": None}) == "f32 unknown, bandwidth unknown"
    line = limits_line({"clocks": CLOCKS, "peaks": PEAKS}, [{"flops": None}])
    assert line == "SM 1410/1980 MHz, mem 2619 MHz, P0, 300 W; peak 33.4 TFLOP/s f32, 4.80 TB/s"
    assert limits_line({"clocks": None, "peaks": None, "peaks_reason": "no peaks", "clocks_reason": "a CPU"}) == (
        "no peaks; a CPU"
    )
    assert limits_line({"work_source": "vmfb"}, [{"flops": None}]) == "FLOPs unknown: vmfb"
    # Each kernel's own reason where it has one (work read from names that say too little).
    unknown = [{"name": "a", "flops": None, "work": "unknown: conv: why"}, {"name": "b", "flops": None, "work": "x"}]
    assert limits_line({"work_source": "names"}, unknown) == "FLOPs unknown: conv: why (and 1 other reasons)"
    assert limits_line({}) == ""
    lines = limits_lines({"clocks": CLOCKS, "peaks": PEAKS, "work_source": "vmfb"})
    assert lines == [
        "clocks    NVIDIA H200 (nvml:0): SM 345 -> 1980 MHz (mean 1410, max 1980), memory 2619 MHz, P0, 300 W",
        "          clock event reasons: gpu_idle",
        "WARNING   GPU clock changed during the pass (345 -> 1980 MHz)",
        "peaks     NVIDIA H200 SXM: 33.4 TFLOP/s f32, 4.80 TB/s, at 1410 MHz: x0.50 of the datasheet's (datasheet)",
        "work      vmfb",
    ]
    assert limits_lines({"clocks_reason": "a CPU", "peaks_reason": "none known"}) == [
        "clocks    none: a CPU",
        "peaks     none: none known",
    ]


def test_work_read_from_names_is_marked_and_unknown_work_says_why() -> None:
    rows = [  # name, flops, work, work_source
        ("m_dispatch_0_matmul_8x8x8_f32", 1024, "matmul", "name"),
        ("m_dispatch_1_elementwise_64_f32", None, "unknown: elementwise: why", "name"),
        ("m_dispatch_2_elementwise_32_f32", None, "unknown: elementwise: why", "name"),
        ("m_dispatch_3_sort_64xf32", None, "unknown: sort is not counted", "ir"),
        ("m_dispatch_4_matmul_4x4x4_f32", 128, "matmul", "ir"),
    ]
    kernels = [dict(zip(("name", "flops", "work", "work_source"), row, strict=True)) for row in rows]
    assert [name_marked(k) for k in kernels] == [True, False, False, False, False]
    assert unknown_work(kernels[1]) == "elementwise: why" and unknown_work(kernels[0]) is None
    assert work_lines(kernels) == [
        "work      * work read from the dispatch name: its op and loop sizes (work fused beside that op is not seen)",
        "unknown   2 kernels: elementwise: why",
        "unknown   m_dispatch_3_sort_64xf32: sort is not counted",
    ]
    assert work_lines(kernels[4:]) == []


def test_the_call_breakdown_line_never_reads_minus_zero() -> None:
    """`unaccounted -0.000 ms` was rounding noise (parts summed in floating point), printed with its sign."""
    from gputop.core.profiling.breakdown import breakdown_line
    from gputop.core.records.breakdown import BreakdownTotals, CallBreakdown

    totals = BreakdownTotals(host_ms=0.03, device_busy_ms=25.057, unaccounted_ms=-0.0000004)
    line = breakdown_line(CallBreakdown(1, 25.087, 25.0, totals, (), "ireeprof", "exact"))
    assert "-0.000" not in line and "unaccounted 0.000 ms" in line, line
