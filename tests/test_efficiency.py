"""Peaks, clocks and the roofline arithmetic, on the numbers seen on the H200 and in datasheets.

These are pure functions of values: the datasheet table chosen by the names
NVML and IREE report, a CPU peak from /proc/cpuinfo text, the clock warning on
the 345 / 1980 MHz readings PLATFORM.md records, and a kernel rated against
them. Live clocks need an NVIDIA GPU: the last test reads them there and skips
elsewhere; `bench/gpu/roofline.sh` reproduces the warning on purpose.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conftest import run_json
from gputop.core.module.device_discovery import iree_devices
from gputop.core.profiling.work.dispatch_work import DispatchWork
from gputop.core.profiling.work.efficiency import rate_kernel, ridge_intensity
from gputop.core.profiling.work.peaks import at_clock, compute_peak_tflops, cpu_peaks, gpu_peaks, peaks_for
from gputop.core.records.clocks import ClockReading
from gputop.core.records.devices import DeviceInfo
from gputop.core.records.profile import KernelTiming
from gputop.core.run.profiling import restarts_table
from gputop.core.watch.clock_watch import (
    clock_warning,
    combine_passes,
    gpu_clock_for,
    summarize,
    warm_up,
    while_calls_ran,
)
from gputop.core.watch.nvml import nvml_unavailable_reason

CPUINFO = """processor\t: 0
model name\t: Test CPU
cpu MHz\t\t: 2600.000
flags\t\t: fpu sse sse2 avx avx2 fma avx512f
"""


@pytest.mark.parametrize(
    ("reported", "part", "f32", "bandwidth"),
    [
        ("NVIDIA H200", "NVIDIA H200 SXM", 66.9, 4800),
        ("NVIDIA H200 (NVIDIA 580.159.04)", "NVIDIA H200 SXM", 66.9, 4800),  # the Vulkan driver's name
        ("NVIDIA H200 NVL", "NVIDIA H200 NVL", 60.0, 4800),
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM", 66.9, 3350),
        ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe", 51.2, 2000),
        ("NVIDIA H100 NVL", "NVIDIA H100 NVL", 60.0, 3900),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB SXM", 19.5, 2039),
        ("NVIDIA A100 80GB PCIe", "NVIDIA A100 80GB PCIe", 19.5, 1935),
        ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 40GB", 19.5, 1555),
        ("NVIDIA L40S", "NVIDIA L40S", 91.6, 864),
        ("AMD Instinct MI300X", "AMD Instinct MI300X", 163.4, 5300),
    ],
)
def test_datasheet_peaks_are_chosen_by_the_reported_name(reported: str, part: str, f32: float, bandwidth: int) -> None:
    peaks = gpu_peaks(reported)
    assert peaks is not None and peaks.part == part
    assert peaks.f32_tflops == f32 and peaks.bandwidth_gbps == bandwidth
    assert peaks.source and peaks.boost_mhz


def test_an_unknown_part_says_so() -> None:
    assert gpu_peaks("NVIDIA GeForce GTX 1080") is None
    peaks, reason = peaks_for("gpu", ["NVIDIA GeForce GTX 1080"])
    assert peaks is None and reason and "no datasheet peaks for NVIDIA GeForce GTX 1080" in reason


def test_cpu_peak_is_cores_times_simd_times_fma_times_clock(tmp_path: Path) -> None:
    no_cpufreq = tmp_path  # a machine without cpufreq (a virtual machine): /proc/cpuinfo's clock
    peaks = cpu_peaks(CPUINFO, cores=2, bandwidth_gbps=20.0, sysfs=no_cpufreq)
    # 2 cores x 16 f32 lanes (AVX-512) x 2 (FMA) x 2 pipes x 2.6 GHz
    assert peaks.f32_tflops == pytest.approx(2 * 16 * 2 * 2 * 2.6e9 / 1e12)
    assert peaks.bandwidth_gbps == 20.0 and "AVX-512" in peaks.source
    assert peaks.estimate and peaks.source.startswith("estimate: ") and "turbo clock is unknown" in peaks.source
    avx2 = cpu_peaks(CPUINFO.replace(" avx512f", ""), cores=4, bandwidth_gbps=20.0, sysfs=no_cpufreq)
    assert avx2.f32_tflops == pytest.approx(4 * 8 * 2 * 2 * 2.6e9 / 1e12)
    h200 = gpu_peaks("NVIDIA H200")
    assert h200 is not None and not h200.estimate  # a datasheet's numbers


def test_cpu_peak_takes_cpufreqs_maximum_clock(tmp_path: Path) -> None:
    """/proc/cpuinfo's MHz is the clock now (2596 on the issue's machine), not the turbo clock a kernel
    runs at: where cpufreq says the maximum, the peak is taken at it (the highest of any core)."""
    for cpu, khz in (("cpu0", 3_700_000), ("cpu1", 3_500_000)):
        folder = tmp_path / cpu / "cpufreq"
        folder.mkdir(parents=True)
        (folder / "cpuinfo_max_freq").write_text(f"{khz}\n")
    peaks = cpu_peaks(CPUINFO, cores=2, bandwidth_gbps=20.0, sysfs=tmp_path)
    assert peaks.f32_tflops == pytest.approx(2 * 16 * 2 * 2 * 3.7e9 / 1e12)
    assert peaks.boost_mhz == 3700 and "@ 3700 MHz (cpufreq's maximum)" in peaks.source


def test_zen4_runs_avx512_on_two_256_bit_pipes(tmp_path: Path) -> None:
    """The issue's machine (AMD EPYC, family 25 model 17, avx512f: Zen 4) does one 512-bit FMA a cycle, not
    two: 2 cores x 16 lanes x 2 x 1 x 2596 MHz = 166 GFLOP/s, not the 332 that a kernel could beat."""
    zen4 = "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n" + CPUINFO.replace("2600.000", "2596.130")
    peaks = cpu_peaks(zen4, cores=2, bandwidth_gbps=25.4, sysfs=tmp_path)
    assert peaks.f32_tflops == pytest.approx(2 * 16 * 2 * 1 * 2.59613e9 / 1e12)
    assert "Zen 4" in peaks.source and "1 FMA pipe @" in peaks.source
    zen3 = zen4.replace(" avx512f", "")  # family 25 without AVX-512: Zen 3, two 256-bit pipes
    assert cpu_peaks(zen3, cores=2, bandwidth_gbps=25.4, sysfs=tmp_path).f32_tflops == pytest.approx(
        2 * 8 * 2 * 2 * 2.59613e9 / 1e12
    )


def test_peaks_scale_with_the_clock() -> None:
    h200 = gpu_peaks("NVIDIA H200")
    assert h200 is not None
    idle = at_clock(h200, 345, 2619, 2619)
    assert idle.compute_scale == pytest.approx(345 / 1980) and idle.bandwidth_scale == 1.0
    assert compute_peak_tflops(h200, "f32", True) == 66.9
    assert compute_peak_tflops(h200, "f16", True) == 989.4  # tensor cores for f16 contractions
    assert compute_peak_tflops(h200, "f16", False) == 66.9
    assert compute_peak_tflops(h200, "f64", True) == 33.5


def test_the_clock_warning_of_the_issue() -> None:
    assert clock_warning(345, 345, 345, 345, 345.0, 1980) == (
        "GPU at 345 MHz of 1980 MHz: kernel times are about 5.7x those at full clock"
    )
    moved = clock_warning(345, 1980, 345, 1980, 1100.0, 1980)
    assert moved and moved.startswith("GPU clock changed during the pass (345 -> 1980 MHz")
    assert clock_warning(1980, 1980, 1965, 1980, 1975.0, 1980) is None  # steady at full clock: no warning
    assert clock_warning(1700, 1710, 1700, 1710, 1705.0, 1980) is None  # 86%: steady, above 80%


def reading(sm: int, mem: int = 2619) -> ClockReading:
    return ClockReading(sm, mem, 1980, 2619, "P0", 120.0, ())


def test_passes_combine_their_clocks() -> None:
    cold = summarize("NVIDIA H200 (nvml:0)", [reading(345), reading(345)])
    warm = summarize("NVIDIA H200 (nvml:0)", [reading(1980), reading(1980)])
    assert cold.warning and "345 MHz" in cold.warning and warm.warning is None
    both = combine_passes([cold, warm])
    assert both is not None and both.min_sm_mhz == 345 and both.max_sm_mhz == 1980
    assert both.warning and "changed across the 2 merged passes (345 -> 1980 MHz" in both.warning


def test_a_steady_pass_after_a_cold_one_restarts_the_kernel_table() -> None:
    """Seen on the H200 (bench/clock_idle.py, vulkan): a pass starting at 510 MHz, then a steady one at 1980."""
    gpu = "NVIDIA H200 (nvml:0)"
    cold = summarize(gpu, [reading(510), reading(1200), reading(1980)])
    warm = summarize(gpu, [reading(1980), reading(1980)])
    assert cold.warning and restarts_table([cold], warm)  # the cold pass's times leave the table
    assert not restarts_table([], cold) and not restarts_table([warm], cold)  # a flagged pass never restarts it
    assert not restarts_table([warm], summarize(gpu, [reading(1965), reading(1980)]))  # same clock: merged
    steady_low = summarize(gpu, [reading(1700), reading(1700)])  # 86% of max: no warning, but another clock
    assert steady_low.warning is None and restarts_table([steady_low], warm)


def test_a_tool_pass_keeps_the_clocks_read_while_its_calls_ran() -> None:
    """Seen on the H200 (bench/clock_idle.py, vulkan, --warmup-s 2): iree-benchmark-module started with the
    GPU idle at 360 MHz and its calls' kernels then ran at 1980 MHz, 47.7 µs as in a steady pass; every
    reading of the tool's start-up had flagged the pass."""
    ms = 1_000_000
    readings = [(t * 50 * ms, reading(mhz)) for t, mhz in enumerate([1980, 795, 360, 360, 360, 360, 360])]
    readings += [(330 * ms, reading(1980)), (380 * ms, reading(1980)), (430 * ms, reading(1410))]
    everything = summarize("NVIDIA H200 (nvml:0)", [r for _, r in readings])
    assert everything.warning and "kernel times mix clocks" in everything.warning
    kept, line = while_calls_ran(readings, (310 * ms, 322 * ms))  # 12 ms of calls, between two readings
    assert [r.sm_mhz for r in kept] == [1980]  # the first reading after them
    assert summarize("NVIDIA H200 (nvml:0)", kept).warning is None
    assert line == (
        "clocks while the calls ran (12.0 ms): 1 of 10 readings; "
        "7 readings before them (the tool starting: 360-1980 MHz) left out"
    )
    slow, _ = while_calls_ran(readings, (100 * ms, 160 * ms))  # calls that did run at the idle clock
    assert [r.sm_mhz for r in slow] == [360, 360, 360]
    assert (summarize("NVIDIA H200 (nvml:0)", slow).warning or "").startswith("GPU at 360 MHz of 1980 MHz")


def test_periodic_profiling_keeps_the_newest_passes_files(tmp_path: Path) -> None:
    """Every file of the newest KEEP_PASSES passes stays, across midnight (the stamps start again)."""
    import os

    from gputop.core.run.profiling import KEEP_PASSES, _keep_newest_passes

    stamps = ["235930", "235940", "235950", "000000", "000010", "000020", "000030"]  # oldest first
    suffixes = (".ireeprof", "-calls.json", "-marks.txt", ".log", ".trace.json")
    for age, stamp in enumerate(reversed(stamps)):
        for suffix in suffixes:
            path = tmp_path / f"profile-{stamp}{suffix}"
            path.write_text("x")
            os.utime(path, (1_000_000 - age * 10, 1_000_000 - age * 10))
    _keep_newest_passes(tmp_path)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(f"profile-{s}{x}" for s in stamps[-KEEP_PASSES:] for x in suffixes)


def test_warm_up_without_a_gpu_clock_costs_nothing() -> None:
    calls: list[int] = []
    started = time.perf_counter()
    note = warm_up(None, lambda: calls.append(1), 2.0, "no GPU clocks: NVML unavailable")
    assert time.perf_counter() - started < 0.01 and not calls
    assert note == "warm-up skipped: no GPU clocks: NVML unavailable"
    assert warm_up(None, lambda: calls.append(1), 0.0) == "warm-up off (--warmup 0)"


def test_a_cpu_device_has_no_gpu_clock() -> None:
    device = DeviceInfo("local-task", "local-task", "CPU", None, (), True, kind="cpu")
    clock, reason = gpu_clock_for(device)
    assert clock is None and reason and reason.startswith("local-task is a CPU device: no GPU clock to read")


def kernel(avg_us: float) -> KernelTiming:
    return KernelTiming("k", 1, avg_us, avg_us, avg_us, avg_us, avg_us, 1.0, 1.0, None, None, "cupti", "device")


def test_a_kernel_is_rated_against_its_roof() -> None:
    """The issue's example: 2·256·1024·1024 FLOP in 287 µs on an H200 is 1.9 TFLOP/s, under 3% of f32."""
    h200 = gpu_peaks("NVIDIA H200")
    assert h200 is not None
    flops = 2 * 256 * 1024 * 1024
    work = DispatchWork("k", flops, 5 * 2**20, 2**20, ("matmul",), "f32", True)
    rated = rate_kernel(kernel(287.0), work, h200, "")
    assert rated.achieved_tflops == pytest.approx(flops / 287e-6 / 1e12)
    assert rated.achieved_tflops == pytest.approx(1.87, abs=0.01)
    assert rated.pct_peak_compute == pytest.approx(100 * 1.8706 / 66.9, rel=1e-3)
    assert rated.intensity == pytest.approx(flops / (6 * 2**20))
    # 85 FLOP/B is above the H200's f32 ridge (66.9 TFLOP/s over 4.8 TB/s = 13.9 FLOP/B): compute bound.
    assert ridge_intensity(66.9, 4800) == pytest.approx(13.94, abs=0.01)
    assert rated.bound == "compute"
    copy = rate_kernel(kernel(10.0), DispatchWork("k", 0, 2**20, 2**20, ("copy",), "f32", False), h200, "")
    assert copy.bound == "memory" and copy.pct_peak_bandwidth == pytest.approx(100 * 2**21 / 10e-6 / 1e9 / 4800)
    # At 345 MHz the same time is a larger share of the (lower) peak at that clock.
    idle = rate_kernel(kernel(287.0), work, at_clock(h200, 345, None, None), "")
    assert idle.pct_peak_compute == pytest.approx(rated.pct_peak_compute * 1980 / 345)
    unknown = rate_kernel(kernel(5.0), None, h200, "no executable sources")
    assert unknown.flops is None and unknown.work == "no executable sources"


@pytest.mark.gpu
def test_clocks_are_read_around_a_pass_on_an_nvidia_gpu() -> None:
    if nvml_unavailable_reason() is not None or not iree_devices("cuda")[0].available:
        pytest.skip("needs an NVIDIA GPU with NVML and CUDA")
    proc, report = run_json("demo:mlp", "--device", "cuda", "-n", "20", "--profile", "--warmup", "2")
    assert proc.returncode == 0, proc.stderr
    clocks = report["profile"]["clocks"]
    assert clocks is not None and clocks["start"]["sm_mhz"] > 0 and clocks["readings"] >= 2
    assert report["profile"]["peaks"] is not None and all(k["flops"] for k in report["kernels"])


def test_a_kernel_beating_a_cpu_estimate_keeps_its_share_and_the_peaks_say_estimate(tmp_path: Path) -> None:
    """The issue's case: 2 cores at /proc/cpuinfo's 2596 MHz; a kernel reached 343 GFLOP/s, 103% of the 332
    computed then. The peak stays what the CPU's width, pipes and clock give (no kernel moves it between
    passes), the share stays as computed in the JSON, and the peaks say they are an estimate: every face
    shows that share as `>100%*` (test_units.py)."""
    peaks = cpu_peaks(CPUINFO.replace("2600.000", "2596.000"), cores=2, bandwidth_gbps=25.4, sysfs=tmp_path)
    assert peaks.f32_tflops == pytest.approx(0.332, abs=0.001) and peaks.estimate
    flops = 2 * 256 * 1024 * 1024
    work = DispatchWork("k", flops, 5 * 2**20, 2**20, ("matmul",), "f32", True)
    fast = rate_kernel(kernel(flops / 0.343e12 * 1e6), work, peaks, "")
    assert fast.pct_peak_compute == pytest.approx(103.3, abs=0.1) and fast.peak_tflops == peaks.f32_tflops
    # The real engine on local-task: the JSON's peaks say they are an estimate, and how it was made.
    proc, report = run_json("demo:mlp", "--device", "local-task", "-n", "3", "--profile")
    assert proc.returncode == 0, proc.stderr
    live = report["profile"]["peaks"]
    assert live["estimate"] is True and live["source"].startswith("estimate: ") and " MHz (" in live["source"]
