"""The small statistics a comparison of two runs needs, written with NumPy alone.

`gputop compare` must tell a real change from the noise of a shared machine,
as benchstat and Google Benchmark's compare.py do: a Mann-Whitney U test over
the samples of each side (no assumption about their distribution, which for
call times is skewed and has long tails) and a bootstrap confidence interval
of the relative change of a statistic (p50, p95 or mean). SciPy would bring
~100 MB for two functions; these are checked against SciPy's own documented
example (tests/test_compare.py).

`test_change` is the one test a comparison makes. A change counts as real
only when three things agree: the Mann-Whitney U test says the samples
differ (p < ALPHA), the bootstrap interval of the relative change excludes
zero, and the change is larger than the floor: the noise floor (3%), or the
sum of how far each run's own stretches of calls wandered (the range of its
ten block medians over their median), whichever is larger. Each run's level
can be off by about as much as it wanders within itself, so the difference
of two runs by about the sum (the A/A experiment in BENCHMARKS.md); thousands
of calls make any such offset "significant" to a test that sees only the
calls of two runs. A steadier run wanders less, and its floor stays nearer
3%. Anything else is shown as `~`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = [
    "ALPHA",
    "BLOCKS",
    "BLOCKS_NEEDED",
    "BOOTSTRAP_RESAMPLES",
    "DEFAULT_NOISE",
    "Change",
    "MannWhitney",
    "block_statistics",
    "bootstrap_change",
    "mann_whitney_u",
    "statistic",
    "test_change",
    "untested",
    "wander_of",
]

BOOTSTRAP_RESAMPLES = 1000
EXACT_MAX = 8  # both sides this small and no ties: the exact distribution of U, as SciPy's method="auto"
BLOCKS = 10  # consecutive blocks per side: the unit the tests count (see bootstrap_change)
BOOTSTRAP_MAX_N = 4000  # a side larger than this is bootstrapped from a uniform subsample of this size (wider CI)
BLOCKS_NEEDED = 2 * BLOCKS  # samples a side needs for the tests by stretches
ALPHA = 0.05
DEFAULT_NOISE = 0.03  # changes smaller than this are `~` (see `test_change`'s floor and BENCHMARKS.md)


@dataclass(frozen=True)
class MannWhitney:
    """The U statistic of the first sample and the two-sided p value, and how it was computed."""

    u: float
    p: float
    method: str  # exact | asymptotic


def _ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Average ranks (1-based; ties share their mean rank) and the sizes of the tie groups."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    # Group starts: where the sorted value changes.
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    sizes = np.diff(np.r_[starts, len(ordered)])
    mean_rank = starts + (sizes + 1) / 2.0  # the mean of ranks start+1 .. start+size
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.repeat(mean_rank, sizes)
    return ranks, sizes


def _exact_p(u: float, n1: int, n2: int) -> float:
    """Two-sided exact p value of U for samples without ties: counts of U over all rank arrangements."""
    # counts[k][j] = arrangements of k items of the first sample among k + j with U = index (the classic recurrence).
    total = n1 * n2
    table: dict[tuple[int, int], np.ndarray] = {}

    def counts(a: int, b: int) -> np.ndarray:
        key = (a, b)
        if key not in table:
            out = np.zeros(total + 1, dtype=np.float64)
            if a == 0 or b == 0:
                out[0] = 1.0
            else:
                out += np.r_[np.zeros(b), counts(a - 1, b)[: total + 1 - b]]  # the largest is from sample 1
                out += counts(a, b - 1)
            table[key] = out
        return table[key]

    dist = counts(n1, n2)
    dist = dist / dist.sum()
    low = min(u, total - u)
    p = 2.0 * float(dist[: math.floor(low) + 1].sum())
    return min(1.0, p)


def mann_whitney_u(a: np.ndarray, b: np.ndarray, *, continuity: bool = True, method: str = "auto") -> MannWhitney:
    """Two-sided Mann-Whitney U test; U is the first sample's, as SciPy's `mannwhitneyu` reports it.

    `method="auto"` takes the exact distribution when both samples have at most
    EXACT_MAX values and no ties, else the normal approximation with the tie
    correction (and the continuity correction unless `continuity` is False).
    """
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("Mann-Whitney U needs samples on both sides")
    ranks, ties = _ranks(np.concatenate((x, y)))
    u = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2.0)
    has_ties = bool((ties > 1).any())
    if method == "exact" or (method == "auto" and max(n1, n2) <= EXACT_MAX and not has_ties):
        return MannWhitney(u, _exact_p(u, n1, n2), "exact")
    n = n1 + n2
    mean = n1 * n2 / 2.0
    tie_term = float((ties.astype(np.float64) ** 3 - ties).sum())
    variance = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
    if variance <= 0:  # every value equal: nothing tells the samples apart
        return MannWhitney(u, 1.0, "asymptotic")
    distance = abs(u - mean) - (0.5 if continuity else 0.0)
    z = max(distance, 0.0) / math.sqrt(variance)
    return MannWhitney(u, min(1.0, math.erfc(z / math.sqrt(2.0))), "asymptotic")


def statistic(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """The statistic `name` (p50, p95, mean) of each row of a 2-D array."""
    if name == "mean":
        return lambda rows: rows.mean(axis=-1)
    if name in ("p50", "p95"):
        q = 50.0 if name == "p50" else 95.0
        return lambda rows: np.percentile(rows, q, axis=-1)
    raise ValueError(f"unknown statistic {name!r}: p50, p95 or mean")


def _blocks(values: np.ndarray, blocks: int, rng: np.random.Generator) -> np.ndarray:
    """`values` in time order as a (blocks, m) array of consecutive stretches (at most BOOTSTRAP_MAX_N in all)."""
    m = len(values) // blocks
    rows = values[: m * blocks].reshape(blocks, m)
    keep = BOOTSTRAP_MAX_N // blocks
    if m > keep:  # each block thinned to a uniform subsample of itself
        rows = np.take_along_axis(rows, np.sort(rng.random((blocks, m)).argsort(axis=1)[:, :keep], axis=1), axis=1)
    return rows


def block_statistics(values: np.ndarray, stat: str, blocks: int = BLOCKS) -> np.ndarray:
    """The statistic of each of `blocks` consecutive stretches of `values` (time order)."""
    x = np.asarray(values, dtype=np.float64).ravel()
    m = len(x) // blocks
    return statistic(stat)(x[: m * blocks].reshape(blocks, m))


def bootstrap_change(
    a: np.ndarray,
    b: np.ndarray,
    stat: str = "p50",
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    level: float = 0.95,
    seed: int = 0,
    blocks: int = 0,
) -> tuple[float, float, float]:
    """(change, low, high): B's statistic over A's, minus 1, and its percentile bootstrap interval.

    Each side is resampled with replacement on its own (the runs are
    independent); the interval is the central `level` of the resampled
    changes. With `blocks`, the samples are taken as a time series and
    resampled as that many consecutive stretches. Seeded, so the same two
    runs always give the same interval.
    """
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    fn = statistic(stat)
    base = float(fn(x[None, :])[0])
    if base <= 0:
        raise ValueError("the baseline's statistic is not positive")
    change = float(fn(y[None, :])[0]) / base - 1.0
    rng = np.random.default_rng(seed)
    if blocks and len(x) >= 2 * blocks and len(y) >= 2 * blocks:
        # A block bootstrap: samples in time order are not independent (the machine's load, the GPU's clock
        # drift over seconds), so whole stretches are resampled and a run that wandered gets a wide interval.
        bx, by = _blocks(x, blocks, rng), _blocks(y, blocks, rng)
        changes = np.empty(resamples, dtype=np.float64)
        for start in range(resamples):
            xa = fn(bx[rng.integers(0, blocks, blocks)].reshape(1, -1))[0]
            yb = fn(by[rng.integers(0, blocks, blocks)].reshape(1, -1))[0]
            changes[start] = yb / xa - 1.0 if xa > 0 else np.nan
        tail = (1.0 - level) / 2.0 * 100.0
        low, high = np.nanpercentile(changes, [tail, 100.0 - tail])
        return change, float(low), float(high)
    if len(x) > BOOTSTRAP_MAX_N:
        x = rng.choice(x, BOOTSTRAP_MAX_N, replace=False)
    if len(y) > BOOTSTRAP_MAX_N:
        y = rng.choice(y, BOOTSTRAP_MAX_N, replace=False)
    changes = np.empty(resamples, dtype=np.float64)
    chunk = max(1, 200_000 // max(len(x), len(y)))  # rows per batch: a few MB at most
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        xa = fn(x[rng.integers(0, len(x), size=(rows, len(x)))])
        yb = fn(y[rng.integers(0, len(y), size=(rows, len(y)))])
        with np.errstate(divide="ignore", invalid="ignore"):
            changes[start : start + rows] = yb / xa - 1.0
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.nanpercentile(changes, [tail, 100.0 - tail])
    return change, float(low), float(high)


# -- the test a comparison makes ---------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One statistic of A and of B, the relative change, its interval and whether it is real."""

    stat: str
    a: float | None
    b: float | None
    change: float | None  # b / a - 1
    low: float | None = None  # bootstrap interval of `change`
    high: float | None = None
    p: float | None = None  # Mann-Whitney U, two-sided
    significant: bool = False
    tested: bool = False  # False: no samples on one side, so only the numbers are shown
    n_a: int = 0
    n_b: int = 0
    floor: float | None = None  # the smallest change counted as real here: the noise floor or the runs' summed wander
    wander_a: float = 0.0  # how far each run's own stretches wandered (`wander_of`): the floor is their sum
    wander_b: float = 0.0
    noise: float = DEFAULT_NOISE  # the noise floor asked for (`--noise`): the floor is it or the wander

    @property
    def beyond_chance(self) -> bool:
        """The U test and the interval both say the samples differ (`p < ALPHA`, the interval excludes 0)."""
        return bool(
            self.tested and self.p is not None and self.p < ALPHA and self.low is not None and self.high is not None
            and (self.low > 0 or self.high < 0)
        )  # fmt: skip

    @property
    def within_wander(self) -> bool:
        """Beyond chance and above the noise floor, yet within the runs' own wander: not `~` (no change) but a
        change these runs cannot tell from how far their own calls wandered (issue 57 item 15)."""
        if self.significant or self.change is None or not self.beyond_chance:
            return False
        return self.noise <= abs(self.change) < self.wander_a + self.wander_b

    @property
    def mark(self) -> str:
        """`-31.0%` for a real change, `~` for none, `(+61.5%)` for one within the runs' wander (`within_wander`),
        `?` where it could not be tested."""
        if self.change is None:
            return "-"
        if not self.tested:
            return "?"
        if self.within_wander:
            return f"({self.change * 100:+.1f}%)"
        return f"{self.change * 100:+.1f}%" if self.significant else "~"

    def wander_text(self, what: str = "calls") -> str:
        """`A's calls wander by 109%`, or `B's calls wander by 159% and A's by 47% (a floor of 206%)`: how far
        each run's own stretches wandered, the larger first (the other where it is above the noise floor)."""
        sides = sorted((("A", self.wander_a), ("B", self.wander_b)), key=lambda side: -side[1])
        text = f"{sides[0][0]}'s {what} wander by {sides[0][1] * 100:.0f}%"
        if sides[1][1] > self.noise:
            text += f" and {sides[1][0]}'s by {sides[1][1] * 100:.0f}% (a floor of {(self.floor or 0) * 100:.0f}%)"
        return text


def test_change(stat: str, a: np.ndarray, b: np.ndarray, noise: float) -> Change:
    """`stat` of two sample sets: the change, its bootstrap interval, the U test, and whether it is real.

    Samples are a time series: the calls of a run, a kernel's dispatches over
    a profile pass. Where each side has enough of them, the test counts
    BLOCKS consecutive stretches per side, not single samples (the U test
    compares the stretches' statistics, the interval resamples stretches), so
    that load which comes and goes during a run is noise, not evidence.
    """
    wander_a = wander_b = 0.0
    if len(a) >= 2 * BLOCKS and len(b) >= 2 * BLOCKS:
        change, low, high = bootstrap_change(a, b, stat, blocks=BLOCKS)
        stretches_a, stretches_b = block_statistics(a, stat), block_statistics(b, stat)
        p = mann_whitney_u(stretches_a, stretches_b).p
        wander_a, wander_b = _wander(stretches_a), _wander(stretches_b)
    else:
        change, low, high = bootstrap_change(a, b, stat)
        p = mann_whitney_u(a, b).p
    a_value = float(np.percentile(a, 50 if stat == "p50" else 95)) if stat != "mean" else float(a.mean())
    b_value = float(np.percentile(b, 50 if stat == "p50" else 95)) if stat != "mean" else float(b.mean())
    floor = max(noise, wander_a + wander_b)
    real = p < ALPHA and (low > 0 or high < 0) and abs(change) >= floor
    return Change(
        stat, a_value, b_value, change, low, high, p, real, True, len(a), len(b), floor, wander_a, wander_b, noise
    )  # fmt: skip


def wander_of(values: np.ndarray, stat: str) -> float:
    """How far the stretches of one run's samples wandered (0 with too few samples for stretches)."""
    return _wander(block_statistics(values, stat)) if len(values) >= BLOCKS_NEEDED else 0.0


def _wander(stretches: np.ndarray) -> float:
    """How far a run's own stretches wandered: the range of their statistic over its median."""
    middle = float(np.median(stretches))
    return float(stretches.max() - stretches.min()) / middle if middle > 0 else 0.0


def untested(stat: str, a: float | None, b: float | None, n_a: int = 0, n_b: int = 0) -> Change:
    """The figures of a side without kept samples: the change is shown, never tested."""
    change = b / a - 1.0 if a and b is not None else None
    return Change(stat, a, b, change, n_a=n_a, n_b=n_b)
