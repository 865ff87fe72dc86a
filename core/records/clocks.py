"""How fast a GPU could go during a profile pass or a window of calls: its clocks, and the peaks they scale.

`PassClocks` (NVML readings over a pass, `ClockReading` each) and
`DevicePeaks` (a datasheet's or a CPU's peak rates, scaled to the pass's
clock) are what a kernel's share of the roofline is measured against
(`profiling.work.efficiency`). Together because the peaks are only meaningful at
the clock the pass ran at. `CallClocks` is the same GPU's clocks over the
run's plain calls (`watch.call_clocks`): a call time means little without the
clock it ran at either.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputop.core.records.base import now

__all__ = ["CallClocks", "ClockReading", "DevicePeaks", "PassClocks"]


@dataclass(frozen=True)
class ClockReading:
    """One NVML reading of a GPU's clocks, performance state, power and throttle reasons."""

    sm_mhz: int
    mem_mhz: int
    max_sm_mhz: int | None
    max_mem_mhz: int | None
    pstate: str | None  # P0 (full performance) .. P12 (idle)
    power_w: float | None
    throttle_reasons: tuple[str, ...]  # NVML clock event reasons: gpu_idle, sw_power_cap, hw_slowdown, ...
    timestamp: float = field(default_factory=now)
    temperature_c: int | None = None  # the GPU's core temperature


@dataclass(frozen=True)
class PassClocks:
    """A GPU's clocks over one profile pass: at its start and end, the SM clock's range between, and a warning."""

    gpu: str  # the NVML device, e.g. "NVIDIA H200 (nvml:0)"
    start: ClockReading
    end: ClockReading
    min_sm_mhz: int  # over every reading taken during the pass (start and end included)
    max_sm_mhz: int
    mean_sm_mhz: float
    mean_mem_mhz: float
    readings: int
    warning: str | None  # under 80% of the maximum clock, or changed during the pass
    warmup: str | None = None  # what the warm-up before the pass did
    # Which readings count, when not all the pass's: those while its calls ran, and what was left out.
    window: str | None = None


@dataclass(frozen=True)
class CallClocks:
    """A GPU's clocks over a window of calls: the readings taken while calls ran, summed up, and a warning.

    Every range is over those readings (min, median, max; a median is a value one of them had). `moved`
    says the SM clock moved by more than 5% of the part's maximum: the calls' times then mix clocks.
    """

    gpu: str  # the NVML device, e.g. "NVIDIA H200 (nvml:0)"
    readings: int
    seconds: float  # from the first reading to the last
    sm_mhz_min: int
    sm_mhz_median: int
    sm_mhz_max: int
    mem_mhz_min: int
    mem_mhz_median: int
    mem_mhz_max: int
    part_max_sm_mhz: int | None  # the most the part's SM clock can reach (NVML), what `moved` is measured against
    pstates: tuple[str, ...]  # every performance state seen, P0 (full performance) first
    throttle_reasons: tuple[str, ...]  # every NVML clock event reason active in any reading
    throttled_readings: int  # readings with any reason active
    power_w_min: float | None
    power_w_median: float | None
    power_w_max: float | None
    temperature_c_max: int | None
    moved: bool
    warning: str | None  # what the clock did to the calls, why, and what would stop it; None when steady
    timestamp: float = field(default_factory=now)


@dataclass(frozen=True)
class DevicePeaks:
    """A device's peak rates: from its datasheet (GPUs) or its cores, SIMD width and clock (CPUs)."""

    part: str  # the part matched, e.g. "NVIDIA H200 SXM", or the CPU's model
    source: str  # where the numbers come from (a datasheet, or how a CPU's were computed)
    f32_tflops: float | None  # vector (non-tensor) FP32: what an f32 matmul without TF32 can reach
    f64_tflops: float | None
    tf32_tensor_tflops: float | None  # dense, without sparsity
    f16_tensor_tflops: float | None
    bf16_tensor_tflops: float | None
    bandwidth_gbps: float | None  # memory bandwidth
    boost_mhz: int | None  # the clock the datasheet's numbers are for
    sm_mhz: float | None = None  # the clock of the pass, where NVML read one
    compute_scale: float = 1.0  # sm_mhz / boost_mhz: the peaks at the pass's clock are the numbers times this
    bandwidth_scale: float = 1.0  # memory clock / its maximum
    # True where the numbers are this machine's estimate (a CPU's cores x lanes x FMA x clock, a copy's
    # bandwidth), not a datasheet's: a kernel can beat them (a turbo clock, a working set in cache), and
    # a share above 100% of them is shown as `>100%*`, never as a figure above the ceiling.
    estimate: bool = False
