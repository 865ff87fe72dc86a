"""The GPU's clocks with every window of calls (issue 47): the report's `calls.clocks`, the Run pane's line and
warning, `gputop compare`'s condition and the Prometheus gauges.

The readings are NVML's own, recorded on an H200 (bench/results/h200-2026-11-27-clocks/, `nvidia-smi -lms 50`
beside a torch-exported ResNet-20 run headless): on Vulkan the SM clock sat at its 345 MHz floor for most of
6000 calls with gpu_idle active throughout; on CUDA it held 1980 MHz. Where this machine has no NVIDIA GPU,
the real engine's no-clock path is tested instead, and the GPU test is skipped.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from conftest import run_gputop, run_json
from gputop.core.compare import compare_reports
from gputop.core.module.device_discovery import iree_devices
from gputop.core.records.base import to_json
from gputop.core.records.calls import CallStats
from gputop.core.records.clocks import ClockReading
from gputop.core.records.devices import DeviceInfo
from gputop.core.records.progress import Phases
from gputop.core.run.state.clocks import ClocksState
from gputop.core.serving.metrics import SnapshotCollector
from gputop.core.snapshot import RunSnapshot
from gputop.core.store.replay import read_snapshots
from gputop.core.store.report import snapshot_report
from gputop.core.watch.call_clocks import ClockSample, summarize_samples
from gputop.core.watch.clock_watch import THROTTLE_REASONS, gpu_clock_for
from gputop.core.watch.nvml import nvml_unavailable_reason
from gputop.core.wording import call_clocks_lines
from gputop.tui.panes.run import clock_line

H200 = Path(__file__).resolve().parent.parent / "bench" / "results" / "h200-2026-11-27-clocks"
GPU = "NVIDIA H200 (nvml:0)"
H200_MAX_SM_MHZ = 1980  # `nvidia-smi --query-gpu=clocks.max.sm` on that machine (log.txt's first line)


def recorded(name: str) -> list[ClockSample]:
    """The readings of `long_<name>.nvml.csv` as the clock watch hands them over: (seconds, ClockReading)."""
    samples = []
    with open(H200 / f"long_{name}.nvml.csv", encoding="utf-8") as handle:
        rows = csv.reader(handle, skipinitialspace=True)
        next(rows)  # timestamp, clocks.current.sm [MHz], clocks.current.memory [MHz], pstate, power, temp, reasons
        for stamp, sm, mem, pstate, power, temperature, reasons in rows:
            bits = int(reasons, 16)
            reading = ClockReading(
                sm_mhz=int(sm),
                mem_mhz=int(mem),
                max_sm_mhz=H200_MAX_SM_MHZ,
                max_mem_mhz=None,
                pstate=pstate,
                power_w=float(power),
                throttle_reasons=tuple(name for bit, name in THROTTLE_REASONS.items() if bits & bit),
                temperature_c=int(temperature),
            )
            samples.append((datetime.strptime(stamp, "%Y/%m/%d %H:%M:%S.%f").timestamp(), reading))
    return samples


def while_calls_ran(samples: list[ClockSample]) -> list[ClockSample]:
    """The readings from the first at full clock on: nvidia-smi started before gputop loaded the model, and the
    engine counts only readings taken while calls ran (the idle ones before the first call do not)."""
    first = next(i for i, (_, r) in enumerate(samples) if r.sm_mhz == H200_MAX_SM_MHZ)
    return samples[first:]


def test_the_h200_vulkan_run_warns_that_the_clock_fell_to_idle_between_submissions() -> None:
    """Fed to the run's state as the watch would feed it (a call between each two readings), the Vulkan
    readings give 345-1980 MHz with a median at the floor, gpu_idle, and a warning that says what to do."""
    state = ClocksState()
    state.set_source(GPU, None)
    samples = while_calls_ran(recorded("vulkan"))
    state.add((samples[0][0] - 1.0, samples[0][1]), calls=0)  # before the first call: counts for none
    for calls, sample in enumerate(samples, 1):
        state.add(sample, calls)
    clocks = state.summary()
    assert clocks is not None and clocks.readings == len(samples) == 668
    assert (clocks.sm_mhz_min, clocks.sm_mhz_median, clocks.sm_mhz_max) == (345, 345, 1980)
    assert (clocks.mem_mhz_min, clocks.mem_mhz_median, clocks.mem_mhz_max) == (3201, 3201, 3201)
    assert clocks.pstates == ("P0",) and clocks.throttle_reasons == ("gpu_idle",)
    assert clocks.throttled_readings == 668 and clocks.moved and clocks.part_max_sm_mhz == 1980
    assert clocks.power_w_min is not None and clocks.power_w_max is not None
    assert (clocks.power_w_min, clocks.power_w_max, clocks.temperature_c_max) == (79.3, 126.1, 40)
    assert clocks.warning == (
        "SM clock moved 345-1980 MHz over the calls (median 345 of 1980 MHz; gpu_idle), so their times mix "
        "clocks: the driver lowers the SM clock while the GPU idles between submissions (gpu_idle); a warm-up "
        "does not hold it up; locking the clocks (`nvidia-smi -lgc 1980,1980`, needs root; `nvidia-smi -rgc` "
        "undoes it) or a busier queue (more work per submission, async calls) does"
    )
    # A window of calls: the first 3.5 s held 1980 MHz (71 readings at 50 ms), then the clock fell.
    start = samples[0][0]
    early = state.over(start, start + 3.0)
    assert early is not None and (early.sm_mhz_min, early.sm_mhz_max) == (1980, 1980) and early.warning is None
    late = state.over(start + 10.0, start + 20.0)
    assert late is not None and late.sm_mhz_max == 345 and late.warning is not None
    assert late.warning.startswith("SM clock held at 345 MHz of 1980 MHz over the calls (gpu_idle): the driver")


def test_the_h200_cuda_run_holds_its_clock_and_says_nothing() -> None:
    clocks = summarize_samples(GPU, while_calls_ran(recorded("cuda")))
    assert clocks is not None and (clocks.sm_mhz_min, clocks.sm_mhz_median, clocks.sm_mhz_max) == (1980,) * 3
    assert clocks.throttle_reasons == () and not clocks.moved and clocks.warning is None
    # The idle readings before the first call, had they counted, would have been a warning of their own.
    with_idle = summarize_samples(GPU, recorded("cuda"))
    assert with_idle is not None and with_idle.moved and with_idle.sm_mhz_min == 345


def test_the_recorded_clocks_in_the_report_the_run_pane_and_the_metrics(tmp_path: Path) -> None:
    """The Vulkan readings through every face: the report's `calls.clocks`, its text, the Run pane, Prometheus."""
    clocks = summarize_samples(GPU, while_calls_ran(recorded("vulkan")))
    device = DeviceInfo("vulkan:0", "vulkan", "NVIDIA H200", 143155 * 2**20, ("--iree-hal-target-device=vulkan",), True)
    newest = recorded("vulkan")[-1][1]
    snap = dataclasses.replace(_blank(device), state="running", call_clocks=clocks, clock_now=newest)
    report = json.loads(json.dumps(snapshot_report(snap)))
    assert report["calls"]["clocks"]["sm_mhz_median"] == 345 and report["calls"]["clocks"]["moved"] is True
    lines = call_clocks_lines(report["calls"]["clocks"], "gpu")
    assert lines[0] == (
        "clocks    SM 345-1980 MHz (median 345), mem 3201 MHz, P0, 79-126 W, 40 °C (668 readings over 33.48 s)"
    )
    assert lines[1].startswith("WARNING   SM clock moved 345-1980 MHz over the calls (median 345 of 1980 MHz")
    assert clock_line(snap) == (  # in the pane, what happened; what to do is the Log's (the warning in full)
        "clock SM 345-1980 MHz (median 345), mem 3201 MHz, P0, 79-126 W, 40 °C, now 345 MHz\n"
        "⚠ SM clock moved 345-1980 MHz over the calls (median 345 of 1980 MHz; gpu_idle) (the Log says what to do)"
    )
    families = {f.name: f for f in SnapshotCollector(lambda: snap, {}).collect()}
    assert families["gputop_gpu_sm_clock_hertz"].samples[0].value == 345e6
    assert families["gputop_gpu_memory_clock_hertz"].samples[0].value == 3201e6
    assert families["gputop_gpu_power_watts"].samples[0].value == newest.power_w
    assert families["gputop_gpu_temperature_celsius"].samples[0].value == newest.temperature_c
    active = {s.labels["reason"]: s.value for s in families["gputop_gpu_clock_throttle_active"].samples}
    assert active["gpu_idle"] == 1.0 and active["sw_power_cap"] == 0.0 and len(active) == len(THROTTLE_REASONS)


def _blank(device: DeviceInfo) -> RunSnapshot:
    return RunSnapshot("running", "cnn_vulkan.vmfb", "main_graph", device, Phases(), CallStats(), None, (), (), ())


def _with_clocks(report: dict[str, Any], samples: list[ClockSample]) -> dict[str, Any]:
    clocks = summarize_samples(GPU, samples)
    return {**report, "calls": {**report["calls"], "clocks": to_json(clocks)}}


def test_compare_warns_when_the_two_sides_ran_at_other_clocks() -> None:
    """The H200's two real reports (the same model on CUDA and on Vulkan), each with the clocks recorded beside it."""
    cuda = json.loads((H200 / "long_cuda.json").read_text())
    vulkan = json.loads((H200 / "long_vulkan.json").read_text())
    a = _with_clocks(cuda, while_calls_ran(recorded("cuda")))
    b = _with_clocks(vulkan, while_calls_ran(recorded("vulkan")))
    comparison = compare_reports(a, b)
    assert (
        "the GPU ran the calls at other clocks: median SM 1980 MHz in A, 345 MHz in B "
        "(calls at a lower clock are slower whatever the code)"
    ) in comparison.warnings
    assert any(w.startswith("B's calls: SM clock moved 345-1980 MHz") for w in comparison.warnings)
    row = next(c for c in comparison.conditions if c.what == "SM clock (calls)")
    assert (row.a, row.b, row.differs, row.warning) == ("median 1980 MHz", "median 345 MHz (345-1980)", True, True)
    # Both sides at the same steady clock: the row is there, nothing differs, nothing is said.
    same = compare_reports(a, _with_clocks(cuda, while_calls_ran(recorded("cuda"))))
    row = next(c for c in same.conditions if c.what == "SM clock (calls)")
    assert not row.differs and not any("clock" in w for w in same.warnings)


def test_no_gpu_clock_on_a_cpu_device_is_said_in_the_report_and_nowhere_noisy() -> None:
    """The real engine on local-task: `calls.clocks` is only the reason; the printout and the Run pane say nothing."""
    proc, report = run_json("demo:mlp", "--device", "local-task", "-n", "3")
    assert proc.returncode == 0, proc.stderr
    device = report["device"]["id"]
    assert report["calls"]["clocks"] == {"reason": f"{device} is a CPU device: no GPU clock to read"}
    assert report["calls"]["count"] == 3  # every other key of `calls` is kept
    snapshots = read_snapshots(Path(report["session_dir"]) / "samples.jsonl")
    last = snapshots[-1]
    assert last.call_clocks is None and last.call_clocks_reason == report["calls"]["clocks"]["reason"]
    assert clock_line(last) is None
    # The text report says nothing of clocks for a CPU device.
    printed = run_gputop("run", "demo:mlp", "--device", "local-task", "-n", "3")
    assert printed.returncode == 0, printed.stderr
    assert "clocks" not in printed.stdout + printed.stderr
    # A GPU whose clocks cannot be read here (no NVIDIA driver on this machine) says why, in one line.
    gpu = DeviceInfo("vulkan:0", "vulkan", "Some GPU", None, ("--iree-hal-target-device=vulkan",), True)
    clock, reason = gpu_clock_for(gpu)
    if clock is None:
        assert reason is not None
        assert clock_line(dataclasses.replace(last, device=gpu, call_clocks_reason=reason)) == f"clock none: {reason}"


@pytest.mark.gpu
def test_calls_clocks_are_read_on_an_nvidia_gpu() -> None:
    if nvml_unavailable_reason() is not None or not iree_devices("cuda")[0].available:
        pytest.skip("needs an NVIDIA GPU with NVML and CUDA")
    # The GPU machines have no compiler (PLATFORM.md): there the PM strip's carried module serves
    # (bench/gpu/pm_strip.sh sets GPUTOP_TEST_PM_VMFB to bench/prepare_pm_bundle.py's pm_cuda.vmfb).
    carried = os.environ.get("GPUTOP_TEST_PM_VMFB")
    if carried:
        target = [carried, "--device", "cuda", "--function", "mm_f16"]
    elif importlib.util.find_spec("iree.compiler") is not None:
        target = ["demo:mlp", "--device", "cuda"]
    else:
        pytest.skip("needs iree-base-compiler to compile demo:mlp for CUDA, or GPUTOP_TEST_PM_VMFB")
    proc, report = run_json(*target, "-n", "500")
    assert proc.returncode == 0, proc.stderr
    clocks = report["calls"]["clocks"]
    assert "reason" not in clocks, clocks
    assert clocks["readings"] >= 1 and "(nvml:" in clocks["gpu"]
    assert 0 < clocks["sm_mhz_min"] <= clocks["sm_mhz_median"] <= clocks["sm_mhz_max"] <= clocks["part_max_sm_mhz"]
    assert clocks["mem_mhz_median"] > 0 and clocks["pstates"] and clocks["power_w_median"] > 0
    assert clocks["temperature_c_max"] > 0
