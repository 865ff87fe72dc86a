"""The physical limits a kernel is measured against: a device's peak FLOP rates and memory bandwidth.

"287 µs" says nothing until it is set against what the part can do. GPUs get
their peaks from a table of vendor datasheets, chosen by the name NVML (or
IREE) reports, every number with its source; the numbers are dense (without
2:4 sparsity) and hold at the datasheet's boost clock, so they scale with the
SM clock NVML reads during a pass ("peak at this clock"). CPUs (and software
GPUs such as lavapipe, which run on them) get theirs from cores x SIMD lanes x
FMA x the highest clock, read from /proc/cpuinfo and cpufreq, and a memory
bandwidth measured once by a large copy (no table can know a machine's
memory); those are estimates and say so (`DevicePeaks.estimate`). A part that
is in no table says so instead of borrowing a neighbour's numbers.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path

from gputop.core.paths import cache_dir
from gputop.core.records.clocks import DevicePeaks

__all__ = ["GPU_PEAKS", "GpuPart", "compute_peak_tflops", "cpu_peaks", "gpu_peaks", "peaks_for"]


@dataclass(frozen=True)
class GpuPart:
    """One row of the datasheet table: dense peaks at the boost clock (TFLOP/s; GB/s)."""

    pattern: str  # a regular expression over the reported name (case-insensitive)
    part: str
    f32: float
    f64: float
    tf32_tensor: float | None
    f16_tensor: float | None
    bf16_tensor: float | None
    bandwidth_gbps: float
    boost_mhz: int
    source: str


# Most specific first: "H100 NVL" and "H100 PCIe" before plain "H100". Datasheets state tensor
# rates "with sparsity"; the dense rates below are half of those, as the datasheets' footnotes say.
GPU_PEAKS: tuple[GpuPart, ...] = (
    # NVIDIA H200 NVL datasheet (nvidia.com/en-us/data-center/h200): FP64 30, FP32 60, TF32 835*,
    # BF16/FP16 1,671* TFLOPS (*sparse), 4.8 TB/s; max boost 1785 MHz.
    GpuPart(r"H200 NVL", "NVIDIA H200 NVL", 60.0, 30.0, 417.5, 835.5, 835.5, 4800, 1785,
            "NVIDIA H200 NVL datasheet"),
    # NVIDIA H200 SXM datasheet: FP64 34, FP32 67, TF32 989*, BF16/FP16 1,979* TFLOPS, 4.8 TB/s HBM3e;
    # the same GH100 die and clocks as H100 SXM (boost 1980 MHz, seen as NVML's max SM clock on the H200).
    GpuPart(r"H200", "NVIDIA H200 SXM", 66.9, 33.5, 494.7, 989.4, 989.4, 4800, 1980,
            "NVIDIA H200 datasheet; Hopper whitepaper (H100 SXM5 rates)"),
    # NVIDIA H100 NVL datasheet: FP64 30, FP32 60, TF32 835*, BF16/FP16 1,671* TFLOPS, 3.9 TB/s.
    GpuPart(r"H100 NVL", "NVIDIA H100 NVL", 60.0, 30.0, 417.5, 835.5, 835.5, 3900, 1785,
            "NVIDIA H100 NVL datasheet"),
    # NVIDIA H100 PCIe datasheet: FP64 26, FP32 51, TF32 756*, BF16/FP16 1,513* TFLOPS, 2.0 TB/s HBM2e;
    # boost 1755 MHz.
    GpuPart(r"H100 PCIe", "NVIDIA H100 PCIe", 51.2, 25.6, 378.0, 756.5, 756.5, 2000, 1755,
            "NVIDIA H100 PCIe datasheet"),
    # NVIDIA H100 SXM5 datasheet and Hopper whitepaper: FP64 33.5, FP32 66.9, TF32 494.7, BF16/FP16
    # 989.4 TFLOPS dense, 3.35 TB/s HBM3; boost 1980 MHz. NVML names it "NVIDIA H100 80GB HBM3".
    GpuPart(r"H100", "NVIDIA H100 SXM", 66.9, 33.5, 494.7, 989.4, 989.4, 3350, 1980,
            "NVIDIA H100 SXM5 datasheet; Hopper whitepaper"),
    # NVIDIA A100 datasheet: FP64 9.7, FP32 19.5, TF32 156, BF16/FP16 312 TFLOPS dense; boost 1410 MHz.
    # Bandwidth: 80GB SXM 2,039 GB/s, 80GB PCIe 1,935 GB/s, 40GB 1,555 GB/s.
    GpuPart(r"A100.*80GB.*PCIe|A100 80GB PCIe", "NVIDIA A100 80GB PCIe", 19.5, 9.7, 156.0, 312.0, 312.0, 1935,
            1410, "NVIDIA A100 datasheet"),
    GpuPart(r"A100.*80GB", "NVIDIA A100 80GB SXM", 19.5, 9.7, 156.0, 312.0, 312.0, 2039, 1410,
            "NVIDIA A100 datasheet"),
    GpuPart(r"A100", "NVIDIA A100 40GB", 19.5, 9.7, 156.0, 312.0, 312.0, 1555, 1410, "NVIDIA A100 datasheet"),
    # NVIDIA L40S datasheet: FP32 91.6, TF32 183 (366*), BF16/FP16 362.05 (733*) TFLOPS, 864 GB/s GDDR6;
    # boost 2520 MHz; FP64 is 1/64 of FP32 (1.43 TFLOPS, Ada whitepaper).
    GpuPart(r"L40S", "NVIDIA L40S", 91.6, 1.43, 183.0, 362.05, 362.05, 864, 2520, "NVIDIA L40S datasheet"),
    # NVIDIA L40 datasheet: FP32 90.5, TF32 90.5 (181*), BF16/FP16 181.05 (362.1*) TFLOPS, 864 GB/s.
    GpuPart(r"L40\b", "NVIDIA L40", 90.5, 1.41, 90.5, 181.05, 181.05, 864, 2490, "NVIDIA L40 datasheet"),
    # NVIDIA L4 datasheet: FP32 30.3, TF32 60 (120*), BF16/FP16 121 (242*) TFLOPS, 300 GB/s; boost 2040 MHz.
    GpuPart(r"\bL4\b", "NVIDIA L4", 30.3, 0.47, 60.0, 121.0, 121.0, 300, 2040, "NVIDIA L4 datasheet"),
    # NVIDIA A10 datasheet: FP32 31.2, TF32 62.5 (125*), BF16/FP16 125 (250*) TFLOPS, 600 GB/s; boost 1695 MHz.
    GpuPart(r"\bA10\b", "NVIDIA A10", 31.2, 0.98, 62.5, 125.0, 125.0, 600, 1695, "NVIDIA A10 datasheet"),
    # AMD Instinct MI325X datasheet: FP64 vector 81.7, FP32 vector 163.4, TF32 matrix 653.7, FP16/BF16
    # 1,307.4 TFLOPS dense, 6 TB/s HBM3E; peak engine clock 2100 MHz.
    GpuPart(r"MI325X", "AMD Instinct MI325X", 163.4, 81.7, 653.7, 1307.4, 1307.4, 6000, 2100,
            "AMD Instinct MI325X datasheet"),
    # AMD Instinct MI300X datasheet: FP64 vector 81.7, FP32 vector 163.4, TF32 matrix 653.7, FP16/BF16
    # 1,307.4 TFLOPS dense (2,614.9 sparse), 5.3 TB/s HBM3; peak engine clock 2100 MHz.
    GpuPart(r"MI300X", "AMD Instinct MI300X", 163.4, 81.7, 653.7, 1307.4, 1307.4, 5300, 2100,
            "AMD Instinct MI300X datasheet"),
    # AMD Instinct MI250X datasheet: FP64/FP32 vector 47.9, FP16/BF16 matrix 383 TFLOPS, 3.2 TB/s HBM2e;
    # no TF32; peak engine clock 1700 MHz.
    GpuPart(r"MI250X", "AMD Instinct MI250X", 47.9, 47.9, None, 383.0, 383.0, 3277, 1700,
            "AMD Instinct MI250X datasheet"),
)  # fmt: skip


def gpu_peaks(name: str) -> DevicePeaks | None:
    """The datasheet peaks of the GPU `name` (as NVML or IREE reports it), or None for a part not in the table."""
    for row in GPU_PEAKS:
        if re.search(row.pattern, name, re.IGNORECASE):
            return DevicePeaks(
                part=row.part,
                source=row.source,
                f32_tflops=row.f32,
                f64_tflops=row.f64,
                tf32_tensor_tflops=row.tf32_tensor,
                f16_tensor_tflops=row.f16_tensor,
                bf16_tensor_tflops=row.bf16_tensor,
                bandwidth_gbps=float(row.bandwidth_gbps),
                boost_mhz=row.boost_mhz,
            )
    return None


# -- CPUs --------------------------------------------------------------------------------------------------

FMA_PIPES = 2  # two FMA pipes per core: Intel server cores since Skylake-SP, AMD since Zen 2 (see cpu_peaks)
BANDWIDTH_BYTES = 64 * 2**20
SYSFS_CPU = Path("/sys/devices/system/cpu")


def cpu_peaks(
    cpuinfo: str | None = None,
    cores: int | None = None,
    bandwidth_gbps: float | None = None,
    sysfs: Path = SYSFS_CPU,
) -> DevicePeaks:
    """This machine's CPU: cores x f32 SIMD lanes x 2 (FMA) x FMA pipes x the highest clock, and its
    measured bandwidth; an estimate, and marked as one (`estimate`).

    The SIMD width comes from the flags in /proc/cpuinfo (avx512f: 16 f32 lanes, avx2: 8, else SSE: 4);
    FMA counts 2 FLOPs when the `fma` flag is there. Two FMA pipes per core is an assumption for server
    cores, except where the part is known to do less: AMD Zen 4 (family 25 with avx512f) runs each 512-bit
    op as two 256-bit halves on its two 256-bit FMA pipes, one 512-bit FMA a cycle. The clock is the
    highest cpufreq allows (`cpuinfo_max_freq`, the turbo clock where the kernel knows it); without
    cpufreq (virtual machines) it is the highest "cpu MHz" /proc/cpuinfo reports, which is the clock
    now, not the turbo one: a kernel may then beat the estimate, and its share shows as `>100%*`.
    """
    text = cpuinfo if cpuinfo is not None else _read("/proc/cpuinfo")
    flags = set(_field(text, "flags").split())
    model = _field(text, "model name") or "CPU"
    mhz, clock_source = _max_clock(text, sysfs)
    count = cores or _physical_cores()
    lanes, isa = (16, "AVX-512") if "avx512f" in flags else (8, "AVX2") if "avx2" in flags else (4, "SSE")
    fma = 2 if "fma" in flags else 1
    pipes = FMA_PIPES
    if lanes == 16 and _field(text, "vendor_id") == "AuthenticAMD" and _field(text, "cpu family") == "25":
        pipes, isa = 1, "AVX-512 on Zen 4's 256-bit pipes"
    f32 = count * lanes * fma * pipes * mhz * 1e6 / 1e12 if mhz else None
    bandwidth = bandwidth_gbps if bandwidth_gbps is not None else measured_bandwidth_gbps()
    how = (
        f"estimate: {count} cores x {lanes} f32 lanes ({isa}) x {'2 (FMA)' if fma == 2 else '1'} x {pipes} "
        f"FMA pipe{'s' if pipes > 1 else ''} @ {mhz:.0f} MHz ({clock_source}); "
        f"bandwidth measured by a {BANDWIDTH_BYTES >> 20} MiB copy"
        if mhz
        else "no clock in cpufreq or /proc/cpuinfo: compute peak unknown"
    )
    return DevicePeaks(
        part=f"{model} ({count} cores)",
        source=how,
        f32_tflops=f32,
        f64_tflops=f32 / 2 if f32 else None,
        tf32_tensor_tflops=None,
        f16_tensor_tflops=None,
        bf16_tensor_tflops=None,
        bandwidth_gbps=bandwidth,
        boost_mhz=int(mhz) if mhz else None,
        estimate=True,
    )


def _max_clock(cpuinfo: str, sysfs: Path) -> tuple[float | None, str]:
    """The highest clock a core may run at (MHz) and where it was read: cpufreq's maximum (kHz), else
    the highest of /proc/cpuinfo's "cpu MHz" lines (the clock at the moment it was read)."""
    highest = 0
    for path in sysfs.glob("cpu[0-9]*/cpufreq/cpuinfo_max_freq"):
        with contextlib.suppress(OSError, ValueError):
            highest = max(highest, int(path.read_text().strip()))
    if highest:
        return highest / 1000, "cpufreq's maximum"
    clocks = [float(m) for m in re.findall(r"^cpu MHz\s*:\s*([0-9.]+)", cpuinfo, re.MULTILINE)]
    if clocks:
        return max(clocks), "/proc/cpuinfo's clock; no cpufreq, so the turbo clock is unknown"
    return None, "none"


def measured_bandwidth_gbps() -> float | None:
    """Copy bandwidth (bytes read + written per second) of a large copy on every core, best of five.

    Measured once per machine and cached: a table cannot know a host's memory. One thread per core
    (at most 8) copies its own slice, as the many workers of a CPU dispatch do.
    """
    key = re.sub(r"[^0-9A-Za-z]+", "-", f"{_field(_read('/proc/cpuinfo'), 'model name')}-{os.cpu_count()}")
    cache = cache_dir() / "peaks" / f"bandwidth-{key}.json"
    try:
        return float(json.loads(cache.read_text())["gbps"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    workers = max(1, min(os.cpu_count() or 1, 8))
    source = np.ones(BANDWIDTH_BYTES // 8)
    target = np.empty_like(source)
    slices = [slice(i * len(source) // workers, (i + 1) * len(source) // workers) for i in range(workers)]

    def copy(part: slice) -> None:
        np.copyto(target[part], source[part])  # NumPy lets go of the GIL for a copy this large

    best = float("inf")
    # the one pool the profiling rooms make (tests/test_house.py): joined before this returns, nothing of it
    # runs beside the calls, and one thread would measure a core's bandwidth rather than the memory's
    with ThreadPoolExecutor(workers) as pool:
        for _ in range(5):
            started = time.perf_counter()
            list(pool.map(copy, slices))
            best = min(best, time.perf_counter() - started)
    gbps = 2 * BANDWIDTH_BYTES / best / 1e9
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"gbps": gbps, "threads": workers, "measured_at": time.time()}))
    except OSError:
        pass
    return gbps


def _physical_cores() -> int:
    try:
        import psutil

        return psutil.cpu_count(logical=False) or os.cpu_count() or 1
    except ImportError:
        return os.cpu_count() or 1


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _field(text: str, name: str) -> str:
    match = re.search(rf"^{re.escape(name)}\s*:\s*(.*)$", text, re.MULTILINE)
    return match.group(1).strip() if match else ""


# -- choosing ----------------------------------------------------------------------------------------------


def peaks_for(kind: str, names: list[str]) -> tuple[DevicePeaks | None, str | None]:
    """The peaks of a device of `kind` (gpu, cpu, software-gpu) called any of `names`; else why there are none."""
    if kind in ("cpu", "software-gpu", "host"):
        return cpu_peaks(), None
    for name in names:
        if name:
            found = gpu_peaks(name)
            if found is not None:
                return found, None
    shown = next((n for n in names if n), "this device")
    return None, f"no datasheet peaks for {shown}: efficiency unknown (gputop knows {_known_parts()})"


def _known_parts() -> str:
    return ", ".join(dict.fromkeys(row.part.removeprefix("NVIDIA ").removeprefix("AMD Instinct ") for row in GPU_PEAKS))


def at_clock(peaks: DevicePeaks, sm_mhz: float | None, mem_mhz: float | None, max_mem_mhz: int | None) -> DevicePeaks:
    """`peaks` scaled to the clocks a pass ran at: compute with the SM clock, bandwidth with the memory clock."""
    compute = sm_mhz / peaks.boost_mhz if sm_mhz and peaks.boost_mhz else 1.0
    memory = mem_mhz / max_mem_mhz if mem_mhz and max_mem_mhz else 1.0
    return replace(peaks, sm_mhz=sm_mhz, compute_scale=min(compute, 1.0), bandwidth_scale=min(memory, 1.0))


def compute_peak_tflops(peaks: DevicePeaks, dtype: str | None, contraction: bool) -> float | None:
    """The datasheet ceiling for work of element type `dtype`: tensor units for f16/bf16 contractions."""
    if dtype in ("f16", "bf16") and contraction:
        rate = peaks.f16_tensor_tflops if dtype == "f16" else peaks.bf16_tensor_tflops
        return rate if rate is not None else peaks.f32_tflops
    if dtype == "tf32" and contraction and peaks.tf32_tensor_tflops is not None:
        return peaks.tf32_tensor_tflops  # measured on the tensor path (ncu/kernel_counters.py): f32 data, TF32 units
    if dtype == "f64":
        return peaks.f64_tflops
    # f32 (and f16 outside contractions): IREE's f32 matmuls use FMA, not TF32, unless asked to.
    return peaks.f32_tflops
