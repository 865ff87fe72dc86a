"""PM sampling (issue 48): the engine's handling of real samples, its refusals on the real code paths, the GPU test.

The samples are those a `Sampler` decoded on an H100 while a process called
a 4096-cube matmul in three busy phases (tests/data/pm_sampling/, with the
command that made them; `pm_records.fed_state` plays them into a real
RunState as the engine's PM watch does). Second sources: each call's mean is
checked against a plain loop over the samples (overlap by overlap), the busy
phases against the calls' own windows, and the SM throughput inside the kernel
against ncu's counters pass on the same kernel (7.64%, in the file's notes).
The refusals run the real paths on this machine: a CPU device, and a machine
without CUPTI's libraries (this one: cupti-python is not installed here).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pm_records import DECODE_S, fed_state, load, pm_of

from conftest import assert_one_line_error, run_gputop, run_json
from gputop.core.profiling.cupti.pm_sampler import LIBRARIES, library_folder
from gputop.core.records.devices import DeviceInfo
from gputop.core.run.parts import pm_refusal_for
from gputop.core.run.state.pm import BIN_S, NEWEST_S, STRIP_S, window_means
from gputop.core.store.report import pm_sampling_json
from gputop.core.watch.pm_watch import PmWatch

SM = "TriageCompute.sm__throughput.avg.pct_of_peak_sustained_elapsed"
TENSOR = "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed"
DRAM = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
CLOCK = "gpc__cycles_elapsed.avg.per_second"


def naive_means(rows: np.ndarray, start: float, end: float) -> np.ndarray | None:
    """One window's mean of each metric, sample by sample: the overlap-weighted mean over the covered time."""
    total = np.zeros(rows.shape[1] - 2)
    covered = 0.0
    for row in rows:
        overlap = min(row[1], end) - max(row[0], start)
        if overlap > 0:
            total += row[2:] * overlap
            covered += overlap
    return total / covered if covered > 0 else None


def test_each_calls_mean_is_the_overlap_weighted_mean_of_its_samples() -> None:
    data = load("mm_f32")
    rows, calls = data["rows"], data["calls"]
    means, covered = window_means(rows, calls[:, 0], calls[:, 1])
    checked = 0
    for i, (start, end) in enumerate(calls):
        expected = naive_means(rows, start, end)
        if expected is None:
            assert covered[i] == 0
            continue
        np.testing.assert_allclose(means[i], expected, rtol=1e-9)
        checked += 1
    assert checked == len(calls) > 50


def test_the_samples_fall_in_the_busy_phases_on_the_calls_clock() -> None:
    """The sampler's timestamps, turned into perf_counter time on the GPU, line up with the calls' own windows:
    samples inside a busy phase read the SMs busy, those between phases read them idle."""
    data = load("mm_f32")
    rows = data["rows"]
    busy = np.zeros(len(rows), bool)
    idle = np.ones(len(rows), bool)
    for start, end in data["busy_phases"]:
        busy |= (rows[:, 0] >= start) & (rows[:, 1] <= end)
        idle &= (rows[:, 1] < start) | (rows[:, 0] > end)
    sm = data["metrics"].index(SM)
    assert busy.sum() > 2500 and idle.sum() > 1000
    assert rows[busy, 2 + sm].mean() > 4.0
    assert rows[idle, 2 + sm].max() == 0.0


def test_the_run_state_gives_each_metric_over_the_calls(tmp_path: Path) -> None:
    state, data = fed_state("mm_f32", tmp_path)
    pm = pm_of(state.snapshot)
    assert pm.state == "sampling" and pm.source == "CUPTI PM sampling 13.4.1"
    assert pm.samples == len(data["rows"])
    rows, calls = data["rows"], data["calls"]
    inside = (calls[:, 0] >= rows[0, 0]) & (calls[:, 1] <= rows[-1, 1])
    assert pm.calls_aligned == int(inside.sum())
    # The p50 of the calls' own means, from the plain loop: the state's tally rounds them to 0.01%.
    naive = sorted(m[data["metrics"].index(SM)] for m in (naive_means(rows, *c) for c in calls[inside]))
    sm = pm.figures(SM)
    assert sm is not None and sm.p50 == pytest.approx(naive[(len(naive) - 1) // 2], abs=0.011)
    assert 4.0 < sm.p50 <= sm.p95 < 7.64  # a call holds its kernel (ncu: 7.64%) and the copy of its result
    tensor = pm.figures(TENSOR)
    assert tensor is not None and tensor.p95 == 0.0  # f32 FMA: the tensor pipes stay idle
    clock = pm.figures(CLOCK)
    assert clock is not None and 1500 < clock.p50 < 2100  # MHz, from cycles per second
    assert {m.name: m.unit for m in pm.metrics}[CLOCK] == "MHz"


def test_a_tensor_kernel_reads_its_sm_throughput_on_the_tensor_pipes(tmp_path: Path) -> None:
    state, _ = fed_state("mm_f16", tmp_path)
    pm = pm_of(state.snapshot)
    sm, tensor = pm.figures(SM), pm.figures(TENSOR)
    assert sm is not None and tensor is not None
    assert tensor.p50 > 0.5 and tensor.p50 == pytest.approx(sm.p50, abs=0.02)


def test_the_strip_holds_the_newest_seconds_and_the_newest_value(tmp_path: Path) -> None:
    state, data = fed_state("mm_f32", tmp_path, until_s=2.0)  # in the first busy phase
    pm = pm_of(state.snapshot)
    rows = data["rows"]
    fed = rows[: pm.samples]  # in time order: the first decodes' samples
    assert rows[0, 0] + 2.0 - DECODE_S <= fed[-1, 1] <= rows[0, 0] + 2.0 + DECODE_S
    newest_end = fed[-1, 1]
    recent = fed[fed[:, 1] >= newest_end - NEWEST_S]
    sm = data["metrics"].index(SM)
    assert pm.newest[sm] == pytest.approx(recent[:, 2 + sm].mean())
    assert all(len(series) == int(STRIP_S / BIN_S) for series in pm.series)
    strip = pm.series[sm]
    # No samples that long ago (None, not an idle 0); the busy phase at the end.
    assert strip[0] is None and max(p for p in strip if p is not None) > 4.0


def test_the_report_block_has_the_issues_keys(tmp_path: Path) -> None:
    state, data = fed_state("mm_f32", tmp_path)
    block = pm_sampling_json(state.snapshot.pm_sampling)
    assert list(block)[:5] == ["metrics", "interval_ms", "calls", "source", "reason"]
    assert block["metrics"] == data["metrics"] and block["interval_ms"] == 1.0 and block["reason"] is None
    assert set(block["calls"]) == set(data["metrics"])
    assert all(set(f) == {"p50", "p95"} for f in block["calls"].values())
    json.dumps(block)


# -- refusals, on the real code paths ------------------------------------------------------------------


def test_a_cpu_run_says_why_it_has_no_gpu_counters(tmp_path: Path) -> None:
    _, report = run_json("demo:mlp", "--device", "local-task", "-n", "3", "--session-dir", str(tmp_path / "s"))
    block = report["pm_sampling"]
    assert block["metrics"] == [] and block["calls"] is None and block["interval_ms"] is None
    assert block["source"] is None
    assert "CPU device" in block["reason"] and "CUDA" in block["reason"]


def test_no_pm_sampling_turns_it_off_and_a_bad_interval_is_a_usage_error(tmp_path: Path) -> None:
    _, report = run_json(
        "demo:mlp", "--device", "local-task", "-n", "2", "--no-pm-sampling", "--session-dir", str(tmp_path / "s")
    )
    assert report["pm_sampling"]["reason"].startswith("turned off (--no-pm-sampling")
    proc = run_gputop("run", "demo:mlp", "--device", "local-task", "-n", "1", "--pm-interval-ms", "0")
    assert_one_line_error(proc, 2, "--pm-interval-ms")


def test_other_devices_are_refused_with_what_to_use_instead() -> None:
    vulkan = DeviceInfo("vulkan:0", "vulkan", "NVIDIA H100 80GB HBM3", None, ("x",), True)
    assert "--device cuda" in (pm_refusal_for(vulkan) or "")
    amd = DeviceInfo("hip:0", "hip", "AMD Instinct MI300X", None, ("x",), True)
    assert "rocprofv3" in (pm_refusal_for(amd) or "")
    lavapipe = DeviceInfo("vulkan:1", "vulkan", "llvmpipe", None, ("x",), True, kind="software-gpu")
    assert "software GPU" in (pm_refusal_for(lavapipe) or "")
    cuda = DeviceInfo("cuda:0", "cuda", "NVIDIA H100 80GB HBM3", None, ("x",), True)
    assert pm_refusal_for(cuda) is None


class Listener:
    """What a PmWatch tells, kept; `done` once it stops sampling for good."""

    def __init__(self) -> None:
        self.told: list[tuple[str, Any]] = []
        self.done = threading.Event()

    def pm_ready(self, info: dict[str, Any]) -> None:
        self.told.append(("ready", info))

    def pm_samples(self, rows: np.ndarray, overflow: bool, decode_s: float) -> None:
        self.told.append(("samples", len(rows)))

    def pm_not_sampling(self, state: str, reason: str) -> None:
        self.told.append((state, reason))
        if state in ("refused", "ended"):
            self.done.set()


@pytest.mark.skipif(library_folder(sys.path)[0] is not None, reason="CUPTI's libraries are here")
def test_without_cuptis_libraries_the_watch_says_where_it_looked() -> None:
    listener = Listener()
    watch = PmWatch(listener, None)
    watch.start()
    assert listener.done.wait(30)
    watch.stop()
    [(state, reason)] = listener.told
    assert state == "refused" and watch.refused is not None and watch.refused.kind == "libraries"
    assert all(name in reason for name in LIBRARIES) and "looked in" in reason and "gputop[cuda]" in reason


def test_the_library_folder_is_the_wheels(tmp_path: Path) -> None:
    folder = tmp_path / "site" / "nvidia" / "cu13" / "lib"
    folder.mkdir(parents=True)
    for name in LIBRARIES[:-1]:
        (folder / name).touch()
    assert library_folder([str(tmp_path / "site")])[0] is None  # one library short
    (folder / LIBRARIES[-1]).touch()
    found, looked = library_folder(["/nonexistent", str(tmp_path / "site")])
    assert found == folder.resolve() and looked[0] == "/nonexistent/nvidia/cu13/lib"


# -- the real thing, on a GPU -------------------------------------------------------------------------


@pytest.mark.gpu
def test_a_cuda_run_samples_its_own_calls(tmp_path: Path) -> None:
    """On the GPU machine (bench/gpu/pm_strip.sh): GPUTOP_TEST_PM_VMFB names bench/prepare_pm_bundle.py's module."""
    vmfb = os.environ.get("GPUTOP_TEST_PM_VMFB")
    if not vmfb or library_folder(sys.path)[0] is None:
        pytest.skip("no CUDA module (GPUTOP_TEST_PM_VMFB) or no CUPTI libraries: the GPU machine's test")
    _, report = run_json(
        vmfb, "--device", "cuda", "--function", "mm_f32", "-n", "40", "--session-dir", str(tmp_path / "s")
    )
    block = report["pm_sampling"]
    assert block["reason"] is None, block
    assert block["state"] == "ended" and block["samples"] > 50 and block["calls_aligned"] >= 35  # 10 ms samples
    sm = next(m for m, role in block["roles"].items() if role == "sm")
    assert 2.0 < block["calls"][sm]["p50"] < 10.0  # ncu: 7.64% in the kernel; a call also copies its result
