"""The GPU's clocks around a profile pass, a warning when they make its times misleading, and a warm-up.

The same kernel measured 46.9 µs in one pass and 237 µs in the next on an
H200: the SM clock was 1980 MHz in one and 345 MHz (idle) when the other
began. A kernel time means little without the clock it was taken at, so every
profile pass reads NVML's SM and memory clocks, performance state, power and
throttle reasons at its start and end (and every 50 ms between), and says when
the clock was under 80% of its maximum or moved during the pass. Before a pass
`warm_up` makes calls until the SM clock is steady, within a small budget.
Where NVML has no GPU (CPU devices, lavapipe, machines without an NVIDIA
driver) there are no clocks, a reason says why, and the warm-up costs nothing.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from gputop.core.records.clocks import ClockReading, PassClocks
from gputop.core.records.devices import DeviceInfo
from gputop.core.watch import nvml
from gputop.core.watch.watcher import Watcher

__all__ = ["ClockWatch", "GpuClock", "clock_warning", "combine_passes", "gpu_clock_for", "warm_up", "while_calls_ran"]

UNDER_MAX = 0.8  # a pass under 80% of the maximum SM clock is flagged
MOVED = 0.1  # ... and one whose SM clock moved by more than 10% of the maximum
SAMPLE_EVERY_S = 0.05
# NVML's clock event (throttle) reason bits, nvml.h: nvmlClocksEventReason*.
THROTTLE_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
NVML_CLOCK_SM = 1
T = TypeVar("T")
NVML_CLOCK_MEM = 2
NVML_TEMPERATURE_GPU = 0


@dataclass(frozen=True)
class GpuClock:
    """One GPU as NVML sees it, whose clocks can be read."""

    index: int
    name: str

    @property
    def label(self) -> str:
        return f"{self.name} (nvml:{self.index})"

    def read(self) -> ClockReading:
        """The GPU's clocks, performance state, power, temperature and throttle reasons now."""
        import pynvml

        handle = pynvml.nvmlDeviceGetHandleByIndex(self.index)
        return ClockReading(
            sm_mhz=int(pynvml.nvmlDeviceGetClockInfo(handle, NVML_CLOCK_SM)),
            mem_mhz=int(pynvml.nvmlDeviceGetClockInfo(handle, NVML_CLOCK_MEM)),
            max_sm_mhz=_optional(lambda: int(pynvml.nvmlDeviceGetMaxClockInfo(handle, NVML_CLOCK_SM))),
            max_mem_mhz=_optional(lambda: int(pynvml.nvmlDeviceGetMaxClockInfo(handle, NVML_CLOCK_MEM))),
            pstate=_optional(lambda: f"P{int(pynvml.nvmlDeviceGetPerformanceState(handle))}"),
            power_w=_optional(lambda: pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0),
            throttle_reasons=_reasons(_optional(lambda: _reason_bits(pynvml, handle)) or 0),
            temperature_c=_optional(lambda: int(pynvml.nvmlDeviceGetTemperature(handle, NVML_TEMPERATURE_GPU))),
        )


def _reason_bits(pynvml: object, handle: object) -> int:
    # nvidia-ml-py 12.535+ names it ClocksEventReasons; older ones ClocksThrottleReasons.
    for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
        function = getattr(pynvml, name, None)
        if function is not None:
            return int(function(handle))
    return 0


def _reasons(bits: int) -> tuple[str, ...]:
    return tuple(name for bit, name in THROTTLE_REASONS.items() if bits & bit)


def _optional(read: Callable[[], T]) -> T | None:
    """A reading some GPUs do not support (NVMLError_NotSupported): None instead of failing the pass."""
    try:
        return read()
    except Exception:  # pynvml raises its own NVMLError family
        return None


def gpu_clock_for(device: DeviceInfo) -> tuple[GpuClock | None, str | None]:
    """The NVML GPU behind `device`, or why its clocks cannot be read.

    A CPU device (or a software GPU on the CPU) has no GPU clock whatever NVML says: NVML is not tried
    for it, and its reason names no NVML library (a missing one is no news on a CPU run).
    """
    if device.kind != "gpu":
        what = "a software GPU on the CPU" if device.kind == "software-gpu" else "a CPU device"
        return None, f"{device.id} is {what}: no GPU clock to read"
    reason = nvml.nvml_unavailable_reason()
    if reason is not None:
        return None, f"no GPU clocks: {reason}"
    gpu = nvml.match_gpu(device.uuid, device.name)
    if gpu is None:
        return None, f"NVML sees no GPU matching {device.name}: no clocks"
    try:
        GpuClock(gpu.index, gpu.name).read()
    except Exception as exc:  # an NVML error on this GPU: the pass goes on without clocks
        return None, f"NVML cannot read the clocks of {gpu.name}: {exc}"
    return GpuClock(gpu.index, gpu.name), None


class ClockWatch(Watcher[ClockReading]):
    """Reads a GPU's clocks at the start and end of a pass and every 50 ms between, on its own thread.

    Each reading keeps the CLOCK_MONOTONIC time it was taken at (IREE's host clock), so that a pass
    run by another process can keep only the readings taken while its calls ran (`pass_clocks`'s window).
    Without a GPU clock `start` starts nothing and `pass_clocks` is None.
    """

    def __init__(self, clock: GpuClock | None, every_s: float = SAMPLE_EVERY_S) -> None:
        super().__init__("gputop-clocks", every_s)
        self._clock = clock
        self._readings: list[tuple[int, ClockReading]] = []

    def _read(self) -> tuple[int, ClockReading]:
        assert self._clock is not None
        reading = self._clock.read()
        return time.monotonic_ns(), reading

    def start(self) -> None:
        if self._clock is None:
            return
        self._readings = [self._read()]
        super().start()

    def look(self) -> ClockReading:
        """One reading, kept for the pass."""
        at, reading = self._read()
        self._readings.append((at, reading))
        return reading

    def pass_clocks(self, warmup: str | None = None, window_ns: tuple[float, float] | None = None) -> PassClocks | None:
        """End the watch; the pass's clocks (None without a GPU clock, or once they were given).

        `window_ns` (CLOCK_MONOTONIC nanoseconds) is when the pass's calls ran, where the pass
        did more than run them: see `while_calls_ran`.
        """
        if self._clock is None or not self.running:
            return None
        self.stop()  # a `stop` after this one (the pass's `finally`) reads nothing more
        self._readings.append(self._read())
        if window_ns is None:
            return summarize(self._clock.label, [r for _, r in self._readings], warmup)
        kept, window = while_calls_ran(self._readings, window_ns)
        return replace(summarize(self._clock.label, kept, warmup), window=window)


def while_calls_ran(
    readings: list[tuple[int, ClockReading]], window_ns: tuple[float, float]
) -> tuple[list[ClockReading], str]:
    """The readings that describe the clock the calls ran at, and a line saying which they are.

    IREE's benchmark tool, which takes the non-CUDA passes, spends most of a pass creating its
    device and loading the module with the GPU idle: on an H200 the SM clock sat at 360 MHz then,
    while the calls' kernels, moments later, ran at 1980 MHz (47.7 µs, as in a steady pass). Those
    readings say nothing of the kernels. Kept: the readings taken while the calls ran, and the first
    one after them (the clock falls about a second after work ends, so it still shows the calls'
    clock; a pass's calls often take less than one 50 ms sampling interval).
    """
    start, end = window_ns
    during = [r for t, r in readings if start <= t <= end]
    after = next((r for t, r in readings if t > end), None)
    kept = during + ([after] if after is not None else [])
    if not kept:  # the window lies after every reading: keep the last one, the nearest
        kept = [readings[-1][1]]
    left = [r for t, r in readings if t < start]
    left_out = ""
    if left:
        low, high = min(r.sm_mhz for r in left), max(r.sm_mhz for r in left)
        span = f"{low} MHz" if low == high else f"{low}-{high} MHz"
        left_out = f"; {len(left)} readings before them (the tool starting: {span}) left out"
    return kept, (
        f"clocks while the calls ran ({(end - start) / 1e6:.1f} ms): {len(kept)} of {len(readings)} readings{left_out}"
    )


def summarize(gpu: str, readings: list[ClockReading], warmup: str | None = None) -> PassClocks:
    """A pass's clocks from its readings (first and last are its start and end)."""
    sm = [r.sm_mhz for r in readings]
    mem = [r.mem_mhz for r in readings]
    start, end = readings[0], readings[-1]
    max_clock = max((r.max_sm_mhz for r in readings if r.max_sm_mhz), default=None)
    return PassClocks(
        gpu=gpu,
        start=start,
        end=end,
        min_sm_mhz=min(sm),
        max_sm_mhz=max(sm),
        mean_sm_mhz=statistics.fmean(sm),
        mean_mem_mhz=statistics.fmean(mem),
        readings=len(readings),
        warning=clock_warning(start.sm_mhz, end.sm_mhz, min(sm), max(sm), statistics.fmean(sm), max_clock),
        warmup=warmup,
    )


def clock_warning(
    start_mhz: int,
    end_mhz: int,
    low_mhz: int,
    high_mhz: int,
    mean_mhz: float,
    max_mhz: int | None,
    during: str = "during the pass",
) -> str | None:
    """Why a pass's times may mislead: its SM clock under 80% of the maximum, or moving during the pass."""
    if not max_mhz:
        return None
    notes = []
    if high_mhz - low_mhz > MOVED * max_mhz:
        between = (
            f", {low_mhz}-{high_mhz} MHz between" if (low_mhz, high_mhz) != tuple(sorted((start_mhz, end_mhz))) else ""
        )
        notes.append(
            f"GPU clock changed {during} ({start_mhz} -> {end_mhz} MHz{between} of {max_mhz} MHz): "
            "kernel times mix clocks"
        )
    if mean_mhz < UNDER_MAX * max_mhz:
        notes.append(
            f"GPU at {mean_mhz:.0f} MHz of {max_mhz} MHz: kernel times are about "
            f"{max_mhz / max(mean_mhz, 1.0):.1f}x those at full clock"
        )
    return "; ".join(notes) or None


def combine_passes(passes: list[PassClocks]) -> PassClocks | None:
    """The clocks of merged passes: the first's start, the last's end, the range and warning over all."""
    if not passes:
        return None
    if len(passes) == 1:
        return passes[0]
    readings = sum(p.readings for p in passes)
    mean_sm = sum(p.mean_sm_mhz * p.readings for p in passes) / readings
    low, high = min(p.min_sm_mhz for p in passes), max(p.max_sm_mhz for p in passes)
    first, last = passes[0], passes[-1]
    max_clock = max((r.max_sm_mhz for p in passes for r in (p.start, p.end) if r.max_sm_mhz), default=None)
    return PassClocks(
        gpu=last.gpu,
        start=first.start,
        end=last.end,
        min_sm_mhz=low,
        max_sm_mhz=high,
        mean_sm_mhz=mean_sm,
        mean_mem_mhz=sum(p.mean_mem_mhz * p.readings for p in passes) / readings,
        readings=readings,
        warning=clock_warning(
            first.start.sm_mhz,
            last.end.sm_mhz,
            low,
            high,
            mean_sm,
            max_clock,
            f"across the {len(passes)} merged passes",
        ),
        warmup=last.warmup,
        window=last.window,
    )


def warm_up(
    clock: GpuClock | None,
    call: Callable[[], object],
    budget_s: float,
    no_clock_reason: str | None = None,
    *,
    every_s: float = SAMPLE_EVERY_S,
) -> str:
    """Make calls until the SM clock is steady (or `budget_s` runs out); returns what it did, in one line.

    Steady: the last readings over at least 0.25 s lie within 2% of the maximum clock of each other,
    and the clock is at 90% of its maximum or has had 0.5 s to get there (a power-capped GPU is steady
    below its maximum). Without a GPU clock it makes no call at all.
    """
    if budget_s <= 0:
        return "warm-up off (--warmup 0)"
    if clock is None:
        return f"warm-up skipped: {no_clock_reason or 'no GPU clock'}"
    started = time.monotonic()
    first = clock.read()
    max_mhz = first.max_sm_mhz or first.sm_mhz
    readings: list[tuple[float, int]] = [(0.0, first.sm_mhz)]
    calls = 0
    steady = _steady(readings, max_mhz)
    next_read = every_s
    while not steady and time.monotonic() - started < budget_s:
        call()
        calls += 1
        elapsed = time.monotonic() - started
        if elapsed >= next_read:
            readings.append((elapsed, clock.read().sm_mhz))
            next_read = elapsed + every_s
            steady = _steady(readings, max_mhz)
    elapsed = time.monotonic() - started
    how = "steady" if steady else f"not steady after the {budget_s:g} s budget"
    return (
        f"warm-up: {calls} calls in {elapsed:.2f} s, SM clock {first.sm_mhz} -> {readings[-1][1]} MHz "
        f"of {max_mhz} MHz ({how})"
    )


def _steady(readings: list[tuple[float, int]], max_mhz: int) -> bool:
    last_time, last_mhz = readings[-1]
    if last_mhz >= 0.97 * max_mhz:
        return True  # at the top already: nowhere higher to go
    window = [mhz for at, mhz in readings if at >= last_time - 0.25]
    spans = readings[0][0] <= last_time - 0.25
    if not spans or max(window) - min(window) > 0.02 * max_mhz:
        return False
    return last_mhz >= 0.9 * max_mhz or last_time >= 0.5
