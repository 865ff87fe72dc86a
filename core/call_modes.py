"""Calls that fall into separate groups: where they are, and what tells the groups apart.

The same call of the same module can take one of two (or three) distinct
times: on Vulkan the driver lets the SM clock fall to 345 MHz between
submissions and every call from then on runs 1.8x slower (PLATFORM.md, seen
on an H100 and an H200). A p50 or mean over such a run says how many calls
each group caught, not how fast the calls are: a short run catches more fast
calls than a long one. This module finds the groups so the report
(`calls.modes`), the Run pane and `gputop compare` can say so.

The rule, on the logarithm of the call times (a group is a time give or take
a share of it, so log is the scale on which groups have like widths):

1. the calls' density is a histogram smoothed by a Gaussian of width
   `bandwidth` (Silverman's rule on the robust spread, at least 3% of a
   call's time), so a group is a hill and what parts two groups a valley;
2. a hill is a group of its own when the valley to its nearest higher hill
   falls to at most `VALLEY_DEPTH` (half) of its own height, and that dip is
   deeper than counting noise (`NOISE_SIGMAS` standard deviations of the
   calls counted within a bandwidth of each);
3. the groups are the calls between the valleys' lowest points, and each
   must hold at least `MIN_SHARE` of the calls (and `MIN_GROUP_CALLS`), its
   median more than `MEDIANS_APART` from its neighbour's: the hill of the
   smallest group that holds too few calls is merged into its neighbours
   first, then the less prominent of two hills whose medians are too close,
   then the least prominent while there are more than `MAX_GROUPS`.

The thresholds were set against real runs (tests/test_call_modes.py): an
H200's Vulkan calls, split 14%/86% by a falling clock, are two groups from
500 calls on; its CUDA calls, one group with a long tail and a shoulder of 8%
of the calls (a valley only 30% below it), stay one group at every size
sampled from 500 to 20000 calls.

A long tail (a few slow calls, gently thinning) is no group: it has no
valley. Fewer than `MIN_CALLS` calls are one group: too few to see a valley.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from gputop.core.records.calls import CallMode
from gputop.core.units import ms

__all__ = [
    "MAX_GROUPS",
    "MEDIANS_APART",
    "MIN_CALLS",
    "MIN_SHARE",
    "VALLEY_DEPTH",
    "ClockReadings",
    "assign_groups",
    "find_modes",
    "modes_from_json",
    "modes_text",
    "modes_with_clocks",
    "same_groups",
]

MIN_CALLS = 40  # fewer calls are one group
MIN_SHARE = 0.05  # a group holds at least this share of the calls
MIN_GROUP_CALLS = 10  # and at least this many
MEDIANS_APART = 0.15  # neighbouring groups' medians differ by more than this
VALLEY_DEPTH = 0.5  # the valley between two groups is at most this share of the lower one's peak
NOISE_SIGMAS = 5.0  # and lower than it by this many standard deviations of the counts
MAX_GROUPS = 3
BANDWIDTH_FLOOR = 0.03  # of log(ms): the density is never sharper than 3% of a call's time
GRID_POINTS_PER_BANDWIDTH = 4
MAX_GRID = 4096
SAME_MEDIANS = 0.10  # two runs' groups are the same groups where their medians are this close

# The GPU's SM clock readings to set the calls' groups against, oldest first: (perf_counter seconds when
# read, the calls' own clock, SM MHz). Asked only where there are groups; the run's clock watch keeps them
# (`RunState`, from `run.state.clocks.ClocksState.history`).
ClockReadings = Callable[[], Sequence[tuple[float, float]]]


def bandwidth(log_ms: np.ndarray) -> float:
    """Silverman's rule of thumb on the robust spread (the lesser of the SD and IQR/1.349), at least the floor."""
    q75, q25 = np.percentile(log_ms, [75, 25])
    spread = min(float(np.std(log_ms)), float(q75 - q25) / 1.349)
    return max(BANDWIDTH_FLOOR, 0.9 * spread * len(log_ms) ** -0.2)


def _density(xs: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray, float]:
    """(grid, smoothed calls per grid step, calls within one bandwidth per unit of density) of sorted log times."""
    step = h / GRID_POINTS_PER_BANDWIDTH
    span = float(xs[-1] - xs[0]) + 8 * h
    if span / step > MAX_GRID:  # a run from 0.1 ms to 10 s: a coarser grid, never a sharper density
        step = span / MAX_GRID
    edges = xs[0] - 4 * h + step * np.arange(int(span / step) + 2)
    counts, _ = np.histogram(xs, bins=edges)
    sigma = h / step
    offsets = np.arange(-math.ceil(4 * sigma), math.ceil(4 * sigma) + 1)
    kernel = np.exp(-0.5 * (offsets / sigma) ** 2)
    kernel /= kernel.sum()
    smoothed = np.convolve(counts, kernel, mode="same")
    centres = (edges[:-1] + edges[1:]) / 2
    # A density of d calls per step is about d * (width of the kernel in steps) calls within a bandwidth.
    per_window = math.sqrt(2 * math.pi) * sigma
    return centres, smoothed, per_window


def _peaks(density: np.ndarray) -> list[int]:
    """Local maxima (a plateau counted once, at its left end)."""
    left = np.concatenate(([-1.0], density[:-1]))
    right = np.concatenate((density[1:], [-1.0]))
    return [int(i) for i in np.flatnonzero((density > left) & (density >= right))]


def _prominent(density: np.ndarray, peaks: list[int], per_window: float) -> list[tuple[float, int]]:
    """(dip, peak) of each hill that stands apart from its nearest higher hill on both sides (the highest
    hill always does, with an infinite dip), the dip being its key valley's noise-scaled depth."""
    kept: list[tuple[float, int]] = []
    heights = density[peaks]
    for k, index in enumerate(peaks):
        height = heights[k]
        saddle = 0.0
        higher_left = [j for j in range(k - 1, -1, -1) if heights[j] > height]
        higher_right = [j for j in range(k + 1, len(peaks)) if heights[j] >= height]
        if not higher_left and not higher_right:
            kept.append((math.inf, index))
            continue
        if higher_left:
            saddle = max(saddle, float(density[peaks[higher_left[0]] : index + 1].min()))
        if higher_right:
            saddle = max(saddle, float(density[index : peaks[higher_right[0]] + 1].min()))
        noise = math.sqrt((height + saddle) * per_window)
        dip = (height - saddle) * per_window / noise if noise > 0 else 0.0
        if saddle <= VALLEY_DEPTH * height and dip >= NOISE_SIGMAS:
            kept.append((dip, index))
    return kept


def _groups(xs: np.ndarray, grid: np.ndarray, density: np.ndarray, peaks: list[int]) -> list[tuple[int, int]]:
    """[start, end) index ranges of the sorted calls, cut at the lowest point between neighbouring peaks."""
    bounds = [0]
    for left, right in itertools.pairwise(peaks):
        valley = left + int(np.argmin(density[left : right + 1]))
        bounds.append(int(np.searchsorted(xs, grid[valley], side="right")))
    bounds.append(len(xs))
    return list(itertools.pairwise(bounds))


def _weakest(xs: np.ndarray, groups: list[tuple[int, int]], dips: list[float]) -> int | None:
    """The hill (by position) to merge into its neighbours for the groups to hold, or None where they hold."""
    sizes = [end - start for start, end in groups]
    small = [i for i, size in enumerate(sizes) if size < max(MIN_GROUP_CALLS, MIN_SHARE * len(xs))]
    if small:
        return min(small, key=lambda i: sizes[i])
    medians = [float(xs[(start + end - 1) // 2]) for start, end in groups]
    for i, (a, b) in enumerate(itertools.pairwise(medians)):
        if b - a <= math.log1p(MEDIANS_APART):
            return i if dips[i] < dips[i + 1] else i + 1
    return None


def _mode(sorted_ms: np.ndarray, start: int, end: int) -> CallMode:
    part = sorted_ms[start:end]
    return CallMode(
        share=round((end - start) / len(sorted_ms), 4),
        median_ms=round(float(np.median(part)), 4),
        calls=end - start,
        min_ms=round(float(part[0]), 4),
        max_ms=round(float(part[-1]), 4),
    )


def find_modes(call_ms: Sequence[float] | np.ndarray) -> tuple[CallMode, ...]:
    """The calls' groups, fastest first (the module's docstring gives the rule); () without calls."""
    values = np.asarray(call_ms, dtype=np.float64)
    values = np.sort(values[np.isfinite(values) & (values > 0)])
    if not len(values):
        return ()
    if len(values) < MIN_CALLS or values[-1] <= values[0]:
        return (_mode(values, 0, len(values)),)
    xs = np.log(values)
    grid, density, per_window = _density(xs, bandwidth(xs))
    hills = sorted(_prominent(density, _peaks(density), per_window), key=lambda hill: hill[1])
    while len(hills) > 1:
        groups = _groups(xs, grid, density, [index for _, index in hills])
        dips = [dip for dip, _ in hills]
        weak = _weakest(xs, groups, dips)
        if weak is None and len(hills) <= MAX_GROUPS:
            return tuple(_mode(values, start, end) for start, end in groups)
        hills.pop(weak if weak is not None else dips.index(min(dips)))
    return (_mode(values, 0, len(values)),)


def assign_groups(call_ms: Sequence[float] | np.ndarray, modes: Sequence[CallMode]) -> np.ndarray:
    """Each call's group (an index into `modes`): the boundary between two groups is halfway (in log) between
    the slowest call of one and the fastest of the next."""
    values = np.asarray(call_ms, dtype=np.float64)
    bounds = [math.sqrt(a.max_ms * b.min_ms) for a, b in itertools.pairwise(modes)]
    return np.searchsorted(np.asarray(bounds), values, side="right")


def modes_with_clocks(
    modes: tuple[CallMode, ...],
    call_ms: np.ndarray,
    ended_at: np.ndarray,
    readings: ClockReadings | None,
) -> tuple[CallMode, ...]:
    """`modes` with each group's SM clock over its calls, where clock readings cover them.

    `call_ms` and `ended_at` (perf_counter seconds) are the window's calls in the order they ran. The calls
    of a group that ran one after another form a stretch; its clock is the mean of the readings taken
    during it and the first one after (the clock falls about a second after work ends, and a stretch
    shorter than the reading interval has none of its own: `watch.call_clocks.samples_between`'s rule). A
    group's clock is its stretches' clocks weighted by their calls; None where no stretch had a reading.
    """
    if readings is None or len(modes) < 2 or not len(call_ms):
        return modes
    pairs = np.asarray(readings(), dtype=np.float64).reshape(-1, 2)
    if not len(pairs):
        return modes
    times, mhz = pairs[:, 0], pairs[:, 1]
    summed = np.concatenate(([0.0], np.cumsum(mhz)))
    groups = assign_groups(call_ms, modes)
    changes = np.flatnonzero(np.diff(groups)) + 1
    firsts = np.concatenate(([0], changes))
    lasts = np.concatenate((changes, [len(groups)])) - 1
    starts = ended_at[firsts] - call_ms[firsts] / 1e3
    low = np.searchsorted(times, starts, side="left")
    high = np.minimum(np.searchsorted(times, ended_at[lasts], side="right") + 1, len(times))
    seen = high > low
    clock = np.where(seen, (summed[high] - summed[low]) / np.maximum(high - low, 1), 0.0)
    calls = lasts - firsts + 1
    out = []
    for number, mode in enumerate(modes):
        mine = seen & (groups[firsts] == number)
        weight = int(calls[mine].sum())
        out.append(_with_clock(mode, round(float((clock[mine] * calls[mine]).sum()) / weight, 1) if weight else None))
    return tuple(out)


def _with_clock(mode: CallMode, mhz: float | None) -> CallMode:
    return CallMode(mode.share, mode.median_ms, mode.calls, mode.min_ms, mode.max_ms, mhz)


def modes_text(modes: Sequence[Mapping[str, Any]] | None, differs: str | None = None) -> str | None:
    """`2 groups: 34% at 2.300 ms, 66% at 5.600 ms (clock 1980 vs 345 MHz)` from `calls.modes`' JSON form;
    None for a steady run.

    The clocks are shown where every group has one; `differs` is what else tells them apart (a profile
    pass's parts, `timeline.breakdown_groups_text`).
    """
    if not modes or len(modes) < 2:
        return None
    groups = ", ".join(f"{mode['share'] * 100:.0f}% at {ms(mode['median_ms'])}" for mode in modes)
    notes = []
    clocks = [mode.get("clock_sm_mhz") for mode in modes]
    if all(c is not None for c in clocks):
        notes.append("clock " + " vs ".join(f"{c:.0f}" for c in clocks if c is not None) + " MHz")
    if differs:
        notes.append(differs)
    return f"{len(modes)} groups: {groups}" + (f" ({'; '.join(notes)})" if notes else "")


NEEDED = ("share", "median_ms")  # what a row of `calls.modes` must hold to be read back


def modes_from_json(rows: Sequence[Any] | None) -> tuple[CallMode, ...]:
    """`calls.modes` of a report back into values (rows that lack a share or median are left out)."""
    modes = []
    for row in rows or ():
        if not isinstance(row, Mapping) or not all(isinstance(row.get(k), (int, float)) for k in NEEDED):
            continue
        median = float(row["median_ms"])
        clock = row.get("clock_sm_mhz")
        modes.append(
            CallMode(
                float(row["share"]), median, int(row.get("calls") or 0), float(row.get("min_ms") or median),
                float(row.get("max_ms") or median), float(clock) if isinstance(clock, (int, float)) else None,
            )
        )  # fmt: skip
    return tuple(modes)


def same_groups(a: Sequence[CallMode], b: Sequence[CallMode]) -> bool:
    """Whether two runs hold the same groups: as many, each median within SAME_MEDIANS of its match."""
    if len(a) < 2 or len(a) != len(b):
        return False
    return all(abs(y.median_ms / x.median_ms - 1) <= SAME_MEDIANS for x, y in zip(a, b, strict=True))
