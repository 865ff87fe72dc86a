"""The GPU's clocks with every window of calls, not only with profile passes, and what would keep them up.

On an H200 a Vulkan run of a ResNet-20 spent 544 of 703 NVML readings at
345 MHz, the SM clock's idle floor, and 71 at 1980 MHz, every one with the
clock event reason gpu_idle: the driver let the clock fall between
submissions, and its calls took 2.5 times as long at the floor. The same
model on CUDA held 1980 MHz through 30000 calls. A call time means little
without the clock it ran at, so while a run's calls go `CallClockWatch` reads
its GPU (found by UUID, CUDA and Vulkan alike: `clocks.gpu_clock_for`) at the
run's sample interval, and `ClockTally` sums the readings taken while calls
ran into a `CallClocks`: the SM and memory clocks' range and median, the
performance states, the clock event reasons, power and temperature, and a
warning that says what the clock did, why, and what the user can do about it.
The tally counts each value it saw, so it is exact over a run of days in the
space of a few hundred numbers.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from gputop.core.records.clocks import CallClocks, ClockReading
from gputop.core.watch.clock_watch import THROTTLE_REASONS, GpuClock
from gputop.core.watch.watcher import Watcher

__all__ = [
    "MOVED_SHARE",
    "CallClockWatch",
    "ClockSample",
    "ClockTally",
    "call_clocks_warning",
    "counted_quantile",
    "samples_between",
    "summarize_samples",
]

MOVED_SHARE = 0.05  # an SM clock that moved by more than this share of the part's maximum mixed the calls' clocks
HELD_LOW = 0.95  # a median SM clock under this share of the maximum, with a reason active, held the calls down
# Reasons that slow the GPU whatever the clock did over the window: always worth a warning. The others
# (gpu_idle, applications_clocks_setting, sync_boost, display_clock_setting) only where the clock moved or
# stayed low: gpu_idle is active between the submissions of a run that still holds its full clock.
SLOWING = frozenset(
    {"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
)

ClockSample = tuple[float, ClockReading]  # (time.perf_counter() when read, the reading): the calls' own clock


class CallClockWatch(Watcher[ClockSample]):
    """Reads `clock` every `every_s` on its own thread and hands each reading, with its time, to `on_update`."""

    def __init__(self, clock: GpuClock, every_s: float, on_update: Callable[[ClockSample], None]) -> None:
        super().__init__("gputop-call-clocks", every_s, on_update)
        self.clock = clock

    def look(self) -> ClockSample:
        reading = self.clock.read()
        return time.perf_counter(), reading


class ClockTally:
    """The readings taken while calls ran, counted by value: min, median and max stay exact in bounded space."""

    def __init__(self) -> None:
        self.readings = 0
        self.first_at: float | None = None
        self.last_at: float | None = None
        self.sm: Counter[int] = Counter()
        self.mem: Counter[int] = Counter()
        self.deciwatts: Counter[int] = Counter()  # power in tenths of a watt: a few thousand values at most
        self.pstates: Counter[str] = Counter()
        self.reasons: Counter[str] = Counter()
        self.throttled = 0
        self.temperature_max: int | None = None
        self.part_max_sm: int | None = None

    def add(self, at_s: float, reading: ClockReading) -> None:
        self.readings += 1
        self.first_at = at_s if self.first_at is None else min(self.first_at, at_s)
        self.last_at = at_s if self.last_at is None else max(self.last_at, at_s)
        self.sm[reading.sm_mhz] += 1
        self.mem[reading.mem_mhz] += 1
        if reading.power_w is not None:
            self.deciwatts[round(reading.power_w * 10)] += 1
        if reading.pstate:
            self.pstates[reading.pstate] += 1
        self.reasons.update(reading.throttle_reasons)
        self.throttled += bool(reading.throttle_reasons)
        if reading.temperature_c is not None:
            known = self.temperature_max
            self.temperature_max = reading.temperature_c if known is None else max(known, reading.temperature_c)
        if reading.max_sm_mhz:
            self.part_max_sm = max(self.part_max_sm or 0, reading.max_sm_mhz)

    def summary(self, gpu: str) -> CallClocks | None:
        """The window's clocks, and a warning where they moved or were held down; None before any reading."""
        if not self.readings:
            return None
        sm_low, sm_mid, sm_high = _spread(self.sm)
        mem_low, mem_mid, mem_high = _spread(self.mem)
        power = _spread(self.deciwatts) if self.deciwatts else None
        reasons = tuple(name for name in THROTTLE_REASONS.values() if self.reasons[name])
        top = self.part_max_sm or sm_high
        moved = sm_high - sm_low > MOVED_SHARE * top
        return CallClocks(
            gpu=gpu,
            readings=self.readings,
            seconds=(self.last_at or 0.0) - (self.first_at or 0.0),
            sm_mhz_min=sm_low,
            sm_mhz_median=sm_mid,
            sm_mhz_max=sm_high,
            mem_mhz_min=mem_low,
            mem_mhz_median=mem_mid,
            mem_mhz_max=mem_high,
            part_max_sm_mhz=self.part_max_sm,
            pstates=tuple(sorted(self.pstates, key=_pstate_number)),
            throttle_reasons=reasons,
            throttled_readings=self.throttled,
            power_w_min=power[0] / 10 if power else None,
            power_w_median=power[1] / 10 if power else None,
            power_w_max=power[2] / 10 if power else None,
            temperature_c_max=self.temperature_max,
            moved=moved,
            warning=call_clocks_warning(sm_low, sm_mid, sm_high, top, reasons, moved, self.temperature_max),
        )


def summarize_samples(gpu: str, samples: Iterable[ClockSample]) -> CallClocks | None:
    """The clocks of these readings (all of them taken while calls ran); None for none."""
    tally = ClockTally()
    for at_s, reading in samples:
        tally.add(at_s, reading)
    return tally.summary(gpu)


def samples_between(samples: Iterable[ClockSample], start_s: float, end_s: float) -> list[ClockSample]:
    """The readings that tell the clock calls between `start_s` and `end_s` (perf_counter seconds) ran at.

    Those taken in the window, and the first one after it: the clock falls about a second after work
    ends, so that one still shows the calls' clock, and a window shorter than the sample interval
    (a few fast calls) has no reading of its own.
    """
    kept: list[ClockSample] = []
    for sample in samples:
        if sample[0] < start_s:
            continue
        kept.append(sample)
        if sample[0] > end_s:
            break
    return kept


def call_clocks_warning(
    low: int,
    median: int,
    high: int,
    top: int,
    reasons: tuple[str, ...],
    moved: bool,
    temperature_c: int | None = None,
) -> str | None:
    """What the SM clock did to the calls, why (NVML's clock event reasons), and what the user can do; None
    when it held steady with nothing slowing it.

    A warning when the clock moved by more than 5% of the part's maximum, when a reason was active while
    the clock stayed under 95% of it, or when a reason that always slows the GPU (power or heat) was active.
    """
    held_low = median < HELD_LOW * top
    named = tuple(r for r in reasons if r in SLOWING or moved or held_low)
    if not moved and not named:
        return None
    why = "; ".join(named)
    if moved:
        what = (
            f"SM clock moved {low}-{high} MHz over the calls (median {median} of {top} MHz"
            f"{'; ' + why if why else ''}), so their times mix clocks"
        )
    elif held_low:
        what = f"SM clock held at {median} MHz of {top} MHz over the calls ({why})"
    else:
        what = f"SM clock {median} MHz of {top} MHz over the calls with {why} active"
    remedies = [_remedy(reason, top, temperature_c) for reason in named] or [
        "it changed with no reason NVML names (a ramp as work began): a few seconds of calls before those "
        "you measure, or persistence mode (`nvidia-smi -pm 1`, needs root) so the driver keeps the GPU "
        "set up between runs, steadies it"
    ]
    return f"{what}: " + "; ".join(dict.fromkeys(remedies))


def _remedy(reason: str, top: int, temperature_c: int | None) -> str:
    """Why NVML's `reason` slows the clock and what, if anything, the user can do about it."""
    hot = f", {temperature_c} °C at most" if temperature_c is not None else ""
    return {
        "gpu_idle": (
            "the driver lowers the SM clock while the GPU idles between submissions (gpu_idle); a warm-up "
            f"does not hold it up; locking the clocks (`nvidia-smi -lgc {top},{top}`, needs root; "
            "`nvidia-smi -rgc` undoes it) or a busier queue (more work per submission, async calls) does"
        ),
        "applications_clocks_setting": (
            "an application clocks setting caps the SM clock (applications_clocks_setting): "
            "`nvidia-smi -rac` resets it (needs root)"
        ),
        "sw_power_cap": (
            "the GPU lowers its clock to stay under its power limit (sw_power_cap): less work at once, or a "
            "higher limit where the board allows (`nvidia-smi -pl WATTS`, needs root)"
        ),
        "hw_slowdown": (
            "the hardware slowed the clock to protect itself (hw_slowdown: power or heat): check the GPU's "
            "cooling and power; no setting of the run stops it"
        ),
        "hw_power_brake_slowdown": (
            "the system's power supply braked the GPU (hw_power_brake_slowdown): no setting of the run stops it"
        ),
        "sw_thermal_slowdown": f"the GPU slowed to cool down (sw_thermal_slowdown{hot}): better cooling, or pauses",
        "hw_thermal_slowdown": f"the GPU slowed to cool down (hw_thermal_slowdown{hot}): better cooling, or pauses",
        "sync_boost": "sync boost holds the GPU to the clock of the others in its group (sync_boost)",
        "display_clock_setting": "a display clock setting limits the SM clock (display_clock_setting)",
    }.get(reason, f"NVML names {reason}")


def _spread(counts: Counter[int]) -> tuple[int, int, int]:
    """Min, median (the lower middle: a value that was read) and max of counted values."""
    values = sorted(counts)
    return values[0], counted_quantile(counts, 0.5), values[-1]


def counted_quantile(counts: Counter[Any], q: float) -> Any:
    """The `q` quantile of values counted by value: the smallest value with at least `q` of the count at or
    under it (the lower middle for 0.5: a value that was seen). A tally of a run of days stays exact this way."""
    values = sorted(counts)
    total = sum(counts.values())
    seen = 0
    for value in values:
        seen += counts[value]
        if seen >= q * total:
            return value
    return values[-1]


def _pstate_number(pstate: str) -> int:
    digits = pstate.removeprefix("P")
    return int(digits) if digits.isdigit() else 99
