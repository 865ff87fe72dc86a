"""Calls in separate groups (issue 47): `calls.modes`, the Run pane's line, and compare's warning.

Every distribution here is a real one:

- `bench/results/h200-2026-11-27-clocks/long_vulkan.json`: a ResNet-20 on Vulkan on an H200, 6000 calls,
  every one kept in order under the report's `samples` key (min 2.20, p50 5.65 ms): the SM clock held
  1980 MHz for about 3.5 s, then fell to 345 MHz (`long_vulkan.nvml.csv`, NVML every 50 ms beside the run).
- `long_vulkan_calls.json` in that folder, where the lead has added it: the same run's session calls.json.
- `long_cuda_calls.json`: the same model on CUDA, 30000 calls of which 20000 are kept (a uniform reservoir;
  p50 0.338, p95 0.574 ms) at a steady 1980 MHz (`long_cuda.nvml.csv`).
- demo:mlp on local-task, run here by the test through `gputop run`.
"""

from __future__ import annotations

import csv
import datetime
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import run_gputop
from gputop.core.call_modes import find_modes, modes_text, modes_with_clocks
from gputop.core.call_times import WINDOW
from gputop.core.compare import compare_reports, comparison_text
from gputop.core.profiling.breakdown import breakdown_groups_text
from gputop.core.records.base import to_json
from gputop.core.records.calls import CALL_BUCKETS_MS, CallStats
from gputop.core.records.devices import DeviceInfo
from gputop.core.records.progress import Phases
from gputop.core.snapshot import RunSnapshot
from gputop.tui.panes.run import modes_line

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results" / "h200-2026-11-27-clocks"
VULKAN_REPORT = RESULTS / "long_vulkan.json"
VULKAN_CALLS = RESULTS / "long_vulkan_calls.json"  # the lead may add it: the tests use it where it is
CUDA_CALLS = RESULTS / "long_cuda_calls.json"


def vulkan_report() -> dict[str, Any]:
    return json.loads(VULKAN_REPORT.read_text())


def vulkan_sources() -> list[tuple[str, np.ndarray]]:
    """The real Vulkan call times: the report's kept samples, and the session's calls.json where present."""
    sources = [(VULKAN_REPORT.name, np.asarray(vulkan_report()["samples"]["calls"]["ms"]))]
    if VULKAN_CALLS.is_file():
        sources.append((VULKAN_CALLS.name, np.asarray(json.loads(VULKAN_CALLS.read_text())["calls"]["ms"])))
    return sources


def cuda_calls() -> np.ndarray:
    return np.asarray(json.loads(CUDA_CALLS.read_text())["calls"]["ms"])


@pytest.mark.parametrize("source", [name for name, _ in vulkan_sources()])
def test_vulkan_calls_fall_into_two_groups(source: str) -> None:
    """The H200's Vulkan calls: 14% at 2.86 ms while the clock held 1980 MHz, 86% at 5.71 ms after it fell."""
    values = dict(vulkan_sources())[source]
    modes = find_modes(values)
    assert len(modes) == 2
    fast, slow = modes
    assert fast.median_ms == pytest.approx(2.86, rel=0.05) and slow.median_ms == pytest.approx(5.71, rel=0.05)
    assert fast.share == pytest.approx(0.14, abs=0.03) and fast.share + slow.share == pytest.approx(1.0, abs=1e-3)
    assert fast.calls + slow.calls == len(values) and fast.max_ms < slow.min_ms
    # In time order (every call kept), the fast group is the run's first seconds: the clock's 1980 MHz.
    assert np.flatnonzero(values <= fast.max_ms).max() < fast.calls + 10
    text = modes_text(to_json(modes))
    assert text == f"2 groups: 14% at {fast.median_ms:.3f} ms, 86% at {slow.median_ms:.3f} ms"


# The bounds long_vulkan.json was counted over: sessions before issue 58, whose CALL_BUCKETS_MS began at 50 us.
BOUNDS_BEFORE_58_MS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 1e4)


def test_the_reports_buckets_hold_the_groups() -> None:
    """long_vulkan.json's histogram over its bounds (BOUNDS_BEFORE_58_MS): every fast call in the buckets up to 5 ms."""
    calls = vulkan_report()["calls"]
    buckets = calls["buckets"]
    assert sum(buckets) == calls["count"] == 6000
    assert len(buckets) == len(BOUNDS_BEFORE_58_MS) + 1 and len(CALL_BUCKETS_MS) == 19  # 10 us to 10 s, 1-2-5
    up_to_5ms = sum(count for bound, count in zip(BOUNDS_BEFORE_58_MS, buckets, strict=False) if bound <= 5.0)
    fast, _ = find_modes(vulkan_report()["samples"]["calls"]["ms"])
    assert fast.max_ms < 5.0 and fast.calls <= up_to_5ms


def test_cuda_calls_are_one_group_with_a_tail() -> None:
    """long_cuda_calls.json: 92% of calls within 0.30-0.40 ms and a tail to 9 ms with a shoulder near 0.5 ms.

    Looked at honestly, not bimodal: the shoulder holds about 8% of the calls between 0.45 and 0.65 ms, and
    the density between it and the main group falls only about 30% below it (a separate group would need
    a valley under half its height); the SM clock stayed at 1980 MHz all run. One group, whichever real
    calls of it are taken.
    """
    values = cuda_calls()
    shoulder = np.mean((values > 0.45) & (values < 0.65))
    assert 0.05 < shoulder < 0.12
    (mode,) = find_modes(values)
    assert mode.share == 1.0 and mode.calls == 20000 and mode.median_ms == pytest.approx(0.332, abs=0.005)
    assert modes_text(to_json((mode,))) is None
    rng = np.random.default_rng(47)
    for size in (500, 2000, 5000, 10000):
        for _ in range(10):
            assert len(find_modes(rng.choice(values, size, replace=False))) == 1


def test_each_group_gets_the_clock_it_ran_at() -> None:
    """The Vulkan calls against the NVML readings taken beside them (long_vulkan.nvml.csv, every 50 ms).

    The calls kept no time stamps: each call's end is placed by summing the call times, with one stated
    alignment, that the first slow call began when the SM clock first left 1980 MHz (the fall that made
    them slow). The fast group then ran at about 1980 MHz by that alignment (the check is of the mechanics,
    not of the cause), and the slow group's clock is what the readings say of the 28 s after it: the ramp
    down from 930 MHz and the 345 MHz floor.
    """
    values = np.asarray(vulkan_report()["samples"]["calls"]["ms"])
    readings = []
    with (RESULTS / "long_vulkan.nvml.csv").open() as handle:
        for row in csv.DictReader(handle, skipinitialspace=True):
            stamp = datetime.datetime.strptime(row["timestamp"], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            readings.append((stamp, float(row["clocks.current.sm [MHz]"])))
    times = np.asarray([t for t, _ in readings])
    mhz = np.asarray([m for _, m in readings])
    high = np.flatnonzero(mhz == 1980)
    fell_at = times[high[-1] + 1]  # the first reading after the last at 1980 MHz
    modes = find_modes(values)
    first_slow = int(np.flatnonzero(values <= modes[0].max_ms).max()) + 1
    ends = np.cumsum(values) / 1e3
    ends += fell_at - (ends[first_slow] - values[first_slow] / 1e3)
    fast, slow = modes_with_clocks(modes, values, ends, lambda: readings)
    # 1980 MHz, but for the reading just after the group's last stretch that `samples_between`'s rule counts.
    assert fast.clock_sm_mhz is not None and 1900 < fast.clock_sm_mhz <= 1980
    assert slow.clock_sm_mhz is not None and 345 < slow.clock_sm_mhz < 450
    floor_share = np.mean(mhz[(times > fell_at) & (times < ends[-1])] == 345)
    assert floor_share > 0.8  # most of the slow calls ran at the floor
    text = modes_text(to_json((fast, slow)))
    assert text is not None and text.endswith(f"(clock {fast.clock_sm_mhz:.0f} vs {slow.clock_sm_mhz:.0f} MHz)")


def short_run(report: dict[str, Any], calls: int) -> dict[str, Any]:
    """The report as if its run had stopped after `calls` calls: its first calls are a shorter run's."""
    kept = report["samples"]["calls"]["ms"][:calls]
    values = np.asarray(kept)
    short = json.loads(json.dumps(report))
    short["samples"]["calls"].update(count=calls, kept=calls, ms=kept)
    short["calls"].update(
        count=calls, p50_ms=float(np.median(values)), p95_ms=float(np.percentile(values, 95)),
        mean_ms=float(values.mean()), modes=to_json(find_modes(values)),
    )  # fmt: skip
    return short


def test_compare_says_a_short_run_caught_more_fast_calls() -> None:
    """long_vulkan.json against its own first 1500 calls: the same two groups, 14%/86% against 54%/46%.

    The p50 is 46% lower and the mean 25% in the short run, though no call of it changed.
    """
    whole = vulkan_report()
    short = short_run(whole, 1500)
    comparison = compare_reports(whole, short)
    p50, mean = comparison.call("p50"), comparison.call("mean")
    assert p50 is not None and p50.change is not None and p50.change < -0.4
    assert mean is not None and mean.change is not None and mean.change < -0.2
    assert comparison.mixed_groups and len(comparison.modes_a) == len(comparison.modes_b) == 2
    (warning,) = [w for w in comparison.warnings if "same 2 groups" in w]
    assert "in other proportions (A 14%/86%, B 54%/46%)" in warning
    assert "not from the calls themselves" in warning
    assert comparison.verdict.startswith("the same groups of calls in other proportions: p50 -")
    assert "not a change of the calls" in comparison.verdict and "faster" not in comparison.verdict
    text = comparison_text(comparison)
    assert "  groups A 2 groups: 14% at" in text and "         B 2 groups: 54% at" in text
    # Without samples (an older session's calls.json lost), the reports' own calls.modes say the same.
    bare_a, bare_b = dict(whole), dict(short)
    bare_a["samples"] = bare_b["samples"] = None
    bare_a["calls"] = {**whole["calls"], "modes": to_json(find_modes(whole["samples"]["calls"]["ms"]))}
    assert compare_reports(bare_a, bare_b).mixed_groups


def test_compare_of_steady_runs_has_no_such_warning() -> None:
    """long_cuda_calls.json's first and second 10000 kept calls: one group each, nothing said of groups."""
    values = json.loads(CUDA_CALLS.read_text())["calls"]["ms"]
    report = {"target": "cnn", "calls": {"count": 10000}, "samples": {"calls": {"ms": values[:10000]}}}
    other = {"target": "cnn", "calls": {"count": 10000}, "samples": {"calls": {"ms": values[10000:]}}}
    comparison = compare_reports(report, other)
    assert not comparison.mixed_groups and len(comparison.modes_a) == len(comparison.modes_b) == 1
    assert not [w for w in comparison.warnings if "groups" in w]
    assert "groups A" not in comparison_text(comparison)


def test_the_run_pane_names_the_groups() -> None:
    """The Run pane's line from a snapshot whose calls are the real Vulkan run's."""
    values = vulkan_report()["samples"]["calls"]["ms"]
    modes = find_modes(values)
    device = DeviceInfo("vulkan", "vulkan", "NVIDIA H200", None, None, True)
    snapshot = RunSnapshot(
        "running", "cnn_vulkan.vmfb", "main_graph", device, Phases(), CallStats(count=len(values), modes=modes),
        None, (), (), (),
    )  # fmt: skip
    assert modes_line(snapshot) == f"2 groups: 14% at {modes[0].median_ms:.3f} ms, 86% at {modes[1].median_ms:.3f} ms"
    steady = RunSnapshot(
        "running", "cnn_cuda.vmfb", "main_graph", device, Phases(), CallStats(modes=find_modes(cuda_calls())),
        None, (), (), (),
    )  # fmt: skip
    assert modes_line(steady) is None


def test_a_pass_names_the_parts_that_differ_between_its_groups() -> None:
    """The words only: which of a pass's parts (`call_breakdown.groups`) tell its groups apart."""
    totals = dict.fromkeys(("host_ms", "queue_ms", "alloc_ms", "device_idle_ms", "unaccounted_ms"), 0.1)
    fast = {
        "share": 0.3,
        "median_ms": 2.9,
        "calls": 60,
        "totals": {**totals, "device_busy_ms": 2.1, "return_wait_ms": 0.2},
    }
    slow = {
        "share": 0.7,
        "median_ms": 5.7,
        "calls": 140,
        "totals": {**totals, "device_busy_ms": 4.9, "return_wait_ms": 0.3},
    }
    assert breakdown_groups_text([fast, slow]) == (
        "in the profile pass: device busy 2.100 ms vs 4.900 ms, return wait 0.200 ms vs 0.300 ms"
    )
    assert breakdown_groups_text([]) is None and breakdown_groups_text(None) is None


def test_a_cpu_run_reports_its_groups(tmp_path: Path) -> None:
    """demo:mlp on local-task, 300 calls: `calls.modes` in the report, exact over the session's calls.json."""
    report_path = tmp_path / "report.json"
    proc = run_gputop("run", "demo:mlp", "--device", "local-task", "-n", "300", "--json", str(report_path))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(report_path.read_text())
    modes = report["calls"]["modes"]
    assert modes and set(modes[0]) == {
        "share", "median_ms", "calls", "min_ms", "max_ms", "clock_sm_mhz", "host_other_cores", "gpu_others",
        "stretches",
    }  # fmt: skip
    assert sum(m["calls"] for m in modes) == report["calls"]["count"] == 300
    assert sum(m["share"] for m in modes) == pytest.approx(1.0, abs=1e-3)
    assert all(m["clock_sm_mhz"] is None for m in modes)  # no GPU clock on the CPU
    # The report's groups are those of every call the run made (the session's calls.json keeps all 300).
    kept = json.loads((Path(report["session_dir"]) / "calls.json").read_text())["calls"]["ms"]
    assert to_json(find_modes(kept)) == modes
    # A CPU's calls on a quiet host are one group; a host busy with others' work may split them (a real
    # second group then, which the run's neighbours warning names).
    busy = (report.get("neighbours") or {}).get("warning")
    if not busy:
        assert len(modes) == 1 and modes[0]["share"] == 1.0
        assert "\ngroups    " not in proc.stdout
    else:
        assert (len(modes) > 1) == ("\ngroups    " in proc.stdout)


# -- issue 57 item 7: groups the clock does not explain ------------------------------------------------------------

H100_CNN = Path(__file__).resolve().parents[1] / "bench" / "results" / "h100-2026-11-27-pm-1ms" / "run_cnn.json"
H200_CLOCKS = Path(__file__).resolve().parents[1] / "bench" / "results" / "h200-2026-11-27-call-clocks" / "calls.json"


def test_groups_at_one_clock_say_the_clock_does_not_part_them() -> None:
    """Two real GPU runs whose calls fell into two groups at one SM clock (NVML read 1980 MHz for both, and in
    every reading of the run: `clocks` beside them): a ResNet-20 on CUDA on an H100 (93%/7%) and on an H200
    (94%/6%). Recorded before gputop kept what ran beside each group, so the text says the clock is not what
    parts them and that nothing else of each group was recorded; never the bare `(clock 1980 vs 1980 MHz)`."""
    h100 = json.loads(H100_CNN.read_text())["calls"]
    h200 = json.loads(H200_CLOCKS.read_text())["cuda"]
    for calls in (h100, h200):
        assert calls["clocks"]["sm_mhz_min"] == calls["clocks"]["sm_mhz_max"] == 1980  # the independent reading
        text = modes_text(calls["modes"])
        assert text is not None and text.endswith(
            "(clock 1980 vs 1980 MHz: the same, so not what parts them; nothing else of each group recorded)"
        ), text
    # Where a profile pass saw its own groups' parts differ, that is what the text names after the clock.
    differs = "in the profile pass: device busy 0.300 ms vs 0.600 ms"
    text = modes_text(h100["modes"], differs)
    assert text is not None and text.endswith(f"(clock 1980 vs 1980 MHz: the same, so not what parts them; {differs})")
    # Clocks apart still say only the clocks (the Vulkan run's fall from 1980 to 345 MHz).
    apart = [{**h100["modes"][0], "clock_sm_mhz": 1980.0}, {**h100["modes"][1], "clock_sm_mhz": 345.0}]
    assert (modes_text(apart) or "").endswith("(clock 1980 vs 345 MHz)")


ROWSUM_DYNAMIC = """
module @rowsum {
  func.func @main(%x: tensor<?x1024xf32>) -> tensor<?xf32> {
    %c0 = arith.constant 0 : index
    %n = tensor.dim %x, %c0 : tensor<?x1024xf32>
    %zero = arith.constant 0.0 : f32
    %empty = tensor.empty(%n) : tensor<?xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<?xf32>) -> tensor<?xf32>
    %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                            iterator_types = ["parallel", "reduction"]}
        ins(%x : tensor<?x1024xf32>) outs(%acc : tensor<?xf32>) {
      ^bb0(%in: f32, %out: f32):
        %add = arith.addf %in, %out : f32
        linalg.yield %add : f32
    } -> tensor<?xf32>
    return %sum : tensor<?xf32>
  }
}
"""


def test_a_program_whose_groups_nothing_gputop_sees_explains(tmp_path: Path) -> None:
    """`gputop run -- python tests/programs/two_sizes.py`: one function called on 16 and 1024 rows in turns
    for 4 s on local-sync. Its calls are two groups (three where the busy machine splits the large calls once
    more; the program's own timers, printed on its stdout, are the independent source of each group's time),
    every other call the slow one; gputop saw the same host load
    beside both (the same neighbour views count for both: every stretch is one call) and no GPU, so the
    report says that nothing it sees differs between them, what it looked at, and that the slow calls came
    in hundreds of stretches among the others'."""
    from iree.compiler import compile_str

    vmfb = tmp_path / "rowsum.vmfb"
    flags = ["--iree-llvmcpu-target-cpu=generic"]
    vmfb.write_bytes(compile_str(ROWSUM_DYNAMIC, target_backends=["llvm-cpu"], extra_args=flags))
    report_path = tmp_path / "report.json"
    program = Path(__file__).parent / "programs" / "two_sizes.py"
    proc = run_gputop(
        "run", "--json", str(report_path), "--", sys.executable, str(program), str(vmfb), "4", "--rows", "16", "1024",
        timeout=180,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    own = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith('{"calls"')))
    report = json.loads(report_path.read_text())
    modes = report["calls"]["modes"]
    # Two groups, the sizes; on the busy shared machine the large calls may split once more (a third group).
    assert 2 <= len(modes) <= 3, modes
    fast, slow = modes[0], modes[-1]
    # The groups are found over the newest WINDOW calls (10,000): a quiet machine makes more in 4 s.
    assert sum(m["calls"] for m in modes) == min(own["calls"], WINDOW) and own["calls"] == report["calls"]["count"]
    assert fast["median_ms"] < own["small_p50_ms"] * 3 < modes[1]["min_ms"] <= own["large_p50_ms"] <= slow["max_ms"]
    assert all(m["clock_sm_mhz"] is None for m in modes)  # no GPU clock on the CPU
    assert all(m["gpu_others"] is None for m in modes)  # no GPU watched: not "nobody"
    host = {m["host_other_cores"] for m in modes}
    assert len(host) == 1 and None not in host  # the same views count for every group: each stretch one call
    assert sum(m["stretches"] for m in modes) >= 0.95 * min(own["calls"], WINDOW) and slow["stretches"] > 50  # in turns
    text = modes_text(modes)
    assert text is not None
    cores = " vs ".join(f"{m['host_other_cores']:.2f}" for m in modes)
    assert text.endswith(
        f"(nothing gputop sees differs between them: others on the host {cores} cores, "
        f"the {slow['median_ms']:.3f} ms calls in {slow['stretches']} stretches among the others')"
    ), text
    assert f"  rowsum.main: {text}" in proc.stderr  # the report's text (stderr: stdout is the program's) names them


def test_groups_beside_another_process_on_the_gpu_name_it_first() -> None:
    """Issue 57 item 7 on an H200: a second run on the GPU split the calls 34%/66% at 1980 vs 1980 MHz, both
    groups beside it (242 stretches each). The line names the other process as what may part them, not as one
    more thing that does not differ; the second source is the run itself (its `others` line: python3, 79% SM)."""
    recorded = json.loads((Path(__file__).parent / "data" / "groups" / "cuda_neighbour_h200.json").read_text())
    text = modes_text(recorded["modes"])
    assert text is not None and "clock 1980 vs 1980 MHz: the same, so not what parts them" in text, text
    assert "but 1 other process used the GPU over every group" in text, text
    assert "others on the host 1.17 vs 1.17 cores" in text, text
