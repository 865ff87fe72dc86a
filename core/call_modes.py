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
from dataclasses import replace
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
    "NeighbourReadings",
    "assign_groups",
    "find_modes",
    "modes_from_json",
    "modes_text",
    "modes_with_clocks",
    "modes_with_neighbours",
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
# The neighbour watch's views to set the groups against, oldest first: (perf_counter seconds when seen, the cores
# other processes took of the host over the view, other processes on the GPU; None where not seen). The run's
# neighbours part keeps them (`run.state.neighbours.NeighboursState.readings`).
NeighbourReadings = Callable[[], Sequence[tuple[float, float | None, int | None]]]
CLOCK_APART = 0.05  # two groups' clocks this close (of the lower) are the same clock: it does not part them
HOST_APART_CORES = 0.25  # others' load on the host differs between groups by at least this (a quarter core)


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


def _stretches(
    modes: Sequence[CallMode], call_ms: np.ndarray, ended_at: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The window's stretches of consecutive calls of one group: (each one's group, calls, start, end), in
    perf_counter seconds, the calls in the order they ran."""
    groups = assign_groups(call_ms, modes)
    changes = np.flatnonzero(np.diff(groups)) + 1
    firsts = np.concatenate(([0], changes))
    lasts = np.concatenate((changes, [len(groups)])) - 1
    return groups[firsts], lasts - firsts + 1, ended_at[firsts] - call_ms[firsts] / 1e3, ended_at[lasts]


def _readings_of(times: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[low, high) of the readings that count for each stretch: those taken during it and the first after
    (`watch.call_clocks.samples_between`'s rule: a stretch shorter than the interval has none of its own)."""
    low = np.searchsorted(times, starts, side="left")
    high = np.minimum(np.searchsorted(times, ends, side="right") + 1, len(times))
    return low, high


def _covered(low: np.ndarray, high: np.ndarray, count: int) -> np.ndarray:
    """Which of `count` readings fall in any of the ranges [low, high)."""
    marks = np.zeros(count + 1, dtype=np.int64)
    np.add.at(marks, low, 1)
    np.add.at(marks, high, -1)
    return np.cumsum(marks[:-1]) > 0


def modes_with_clocks(
    modes: tuple[CallMode, ...],
    call_ms: np.ndarray,
    ended_at: np.ndarray,
    readings: ClockReadings | None,
    neighbours: NeighbourReadings | None = None,
) -> tuple[CallMode, ...]:
    """`modes` with each group's SM clock over its calls, where clock readings cover them, and what the
    neighbour watch saw over them (`modes_with_neighbours`), where it looked.

    `call_ms` and `ended_at` (perf_counter seconds) are the window's calls in the order they ran. The calls
    of a group that ran one after another form a stretch; its clock is the mean of the readings taken
    during it and the first one after (the clock falls about a second after work ends, and a stretch
    shorter than the reading interval has none of its own: `watch.call_clocks.samples_between`'s rule). A
    group's clock is its stretches' clocks weighted by their calls; None where no stretch had a reading.
    """
    if len(modes) < 2 or not len(call_ms):
        return modes
    groups, calls, starts, ends = _stretches(modes, call_ms, ended_at)
    modes = tuple(replace(mode, stretches=int((groups == n).sum())) for n, mode in enumerate(modes))
    modes = modes_with_neighbours(modes, (groups, starts, ends), neighbours)
    pairs = np.asarray(readings() if readings is not None else (), dtype=np.float64).reshape(-1, 2)
    if not len(pairs):
        return modes
    times, mhz = pairs[:, 0], pairs[:, 1]
    summed = np.concatenate(([0.0], np.cumsum(mhz)))
    low, high = _readings_of(times, starts, ends)
    seen = high > low
    clock = np.where(seen, (summed[high] - summed[low]) / np.maximum(high - low, 1), 0.0)
    out = []
    for number, mode in enumerate(modes):
        mine = seen & (groups == number)
        weight = int(calls[mine].sum())
        mhz_of = round(float((clock[mine] * calls[mine]).sum()) / weight, 1) if weight else None
        out.append(replace(mode, clock_sm_mhz=mhz_of))
    return tuple(out)


def modes_with_neighbours(
    modes: tuple[CallMode, ...],
    stretches: tuple[np.ndarray, np.ndarray, np.ndarray],
    neighbours: NeighbourReadings | None,
) -> tuple[CallMode, ...]:
    """Each group with the mean of the cores others took of the host, and the most other processes on the GPU,
    over the neighbour watch's views that count for its stretches (`_readings_of`); unchanged without views."""
    rows = list(neighbours()) if neighbours is not None else []
    if not rows:
        return modes
    times = np.asarray([row[0] for row in rows], dtype=np.float64)
    host = np.asarray([np.nan if row[1] is None else row[1] for row in rows], dtype=np.float64)
    gpu = np.asarray([-1 if row[2] is None else row[2] for row in rows], dtype=np.int64)
    groups, starts, ends = stretches
    low, high = _readings_of(times, starts, ends)
    out = []
    for number, mode in enumerate(modes):
        mine = (groups == number) & (high > low)
        covered = _covered(low[mine], high[mine], len(times))
        host_seen = host[covered & ~np.isnan(host)]
        gpu_seen = gpu[covered & (gpu >= 0)]
        out.append(
            replace(
                mode,
                host_other_cores=round(float(host_seen.mean()), 3) if len(host_seen) else None,
                gpu_others=int(gpu_seen.max()) if len(gpu_seen) else None,
            )
        )
    return tuple(out)


def modes_text(modes: Sequence[Mapping[str, Any]] | None, differs: str | None = None) -> str | None:
    """`2 groups: 34% at 2.300 ms, 66% at 5.600 ms (clock 1980 vs 345 MHz)` from `calls.modes`' JSON form;
    None for a steady run.

    The clocks are shown where every group has one. Where they are the same (within CLOCK_APART), the clock
    does not explain the groups (issue 57 item 7), and the text says so and what else gputop saw differ
    between them: the host's load by others, other processes on the GPU, and `differs` (a profile pass's
    parts, `profiling.breakdown.breakdown_groups_text`); or that nothing it sees does, with what it looked
    at and how the groups' calls fell in time. Groups with nothing recorded of them but their times (an
    older report, a comparison's kept samples) are named alone, as before.
    """
    if not modes or len(modes) < 2:
        return None
    groups = ", ".join(f"{mode['share'] * 100:.0f}% at {ms(mode['median_ms'])}" for mode in modes)
    notes = []
    clocks = _all(modes, "clock_sm_mhz")
    same_clock = clocks is not None and max(clocks) <= min(clocks) * (1 + CLOCK_APART)
    if clocks is not None:
        clock = "clock " + " vs ".join(f"{c:.0f}" for c in clocks) + " MHz"
        notes.append(clock + (": the same, so not what parts them" if same_clock else ""))
    others = _other_differences(modes) + ([differs] if differs else [])
    if others:
        notes.extend(others)
    elif clocks is None or same_clock:
        seen = _nothing_differs(modes, with_clock=same_clock)
        if seen:
            notes.append(seen)
    return f"{len(modes)} groups: {groups}" + (f" ({'; '.join(notes)})" if notes else "")


def _all(modes: Sequence[Mapping[str, Any]], key: str) -> list[float] | None:
    """Every group's `key` as numbers, or None where a group lacks it."""
    values = [mode.get(key) for mode in modes]
    return [float(v) for v in values if isinstance(v, (int, float))] if all(
        isinstance(v, (int, float)) for v in values
    ) else None  # fmt: skip


def _host_text(host: list[float]) -> str:
    return "others on the host " + " vs ".join(f"{h:.2f}" for h in host) + " cores"


def _other_differences(modes: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the neighbour watch saw differ between the groups: the host's load by others, the GPU's others."""
    out = []
    host = _all(modes, "host_other_cores")
    if host is not None and max(host) - min(host) >= HOST_APART_CORES:
        out.append(_host_text(host))
    gpu = _all(modes, "gpu_others")
    if gpu is not None and len(set(gpu)) > 1:
        out.append("other processes on the GPU " + " vs ".join(f"{g:.0f}" for g in gpu))
    return out


def _nothing_differs(modes: Sequence[Mapping[str, Any]], *, with_clock: bool) -> str | None:
    """`nothing else gputop sees differs between them: ...`, naming what it looked at and how the slowest
    group's calls fell (one stretch: a period of the run; many: among the others'); None where it recorded
    nothing of the groups but their times and no clock either (an older report: nothing to say)."""
    seen = []
    host = _all(modes, "host_other_cores")
    if host is not None:
        seen.append(_host_text(host))
    gpu = _all(modes, "gpu_others")
    shared = None
    if gpu is not None:
        if any(gpu):
            # Seen on an H200: a second run on the GPU split the calls 34%/66% at one clock, and both groups
            # ran beside it (the watch looks once a second; the groups interleave in 242 stretches). The GPU's
            # others are then the cause nothing here can rule out: said first, not listed as a difference.
            others = f"{max(gpu):.0f} other process{'es' if max(gpu) > 1 else ''}"
            shared = f"{others} used the GPU over every group, and work of theirs between the calls can part them"
        else:
            seen.append("nobody else on the GPU")
    if shared is not None:
        rest = f" ({', '.join(seen)})" if seen else ""
        return f"nothing else gputop sees differs between them, but {shared}{rest}"
    if not seen:
        return "nothing else of each group recorded" if with_clock else None
    stretches = _all(modes, "stretches")
    if stretches is not None and stretches[-1] > 0:
        count = int(stretches[-1])
        where = "in one stretch" if count == 1 else f"in {count} stretches among the others'"
        seen.append(f"the {ms(modes[-1]['median_ms'])} calls {where}")
    return f"nothing {'else ' if with_clock else ''}gputop sees differs between them: " + ", ".join(seen)


NEEDED = ("share", "median_ms")  # what a row of `calls.modes` must hold to be read back
CONDITIONS = ("clock_sm_mhz", "host_other_cores", "gpu_others", "stretches")  # what else a row may hold


def modes_from_json(rows: Sequence[Any] | None) -> tuple[CallMode, ...]:
    """`calls.modes` of a report back into values (rows that lack a share or median are left out)."""
    modes = []
    for row in rows or ():
        if not isinstance(row, Mapping) or not all(isinstance(row.get(k), (int, float)) for k in NEEDED):
            continue
        median = float(row["median_ms"])
        clock, host, gpu, stretches = (
            row.get(k) for k in ("clock_sm_mhz", "host_other_cores", "gpu_others", "stretches")
        )
        modes.append(
            CallMode(
                float(row["share"]), median, int(row.get("calls") or 0), float(row.get("min_ms") or median),
                float(row.get("max_ms") or median), float(clock) if isinstance(clock, (int, float)) else None,
                float(host) if isinstance(host, (int, float)) else None, gpu if isinstance(gpu, int) else None,
                stretches if isinstance(stretches, int) else None,
            )
        )  # fmt: skip
    return tuple(modes)


def same_groups(a: Sequence[CallMode], b: Sequence[CallMode]) -> bool:
    """Whether two runs hold the same groups: as many, each median within SAME_MEDIANS of its match."""
    if len(a) < 2 or len(a) != len(b):
        return False
    return all(abs(y.median_ms / x.median_ms - 1) <= SAME_MEDIANS for x, y in zip(a, b, strict=True))
