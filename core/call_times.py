"""Call-time statistics that stay cheap over a run of hours.

The TUI runs calls in a loop for as long as the user watches, so keeping
every call time forever would grow without bound. This keeps exact count,
min and max, plus a window of the most recent calls for percentiles and the
sparkline; reports of finite runs (under the window size) are exact.
Beside them, a uniform reservoir of at most `RESERVOIR` call times is kept
for `gputop compare`: every call of the run has the same chance to be in it
(all of them while the run has made fewer calls than that), so the session
can keep its call distribution in bounded space.
The rate shown live is taken over the calls that ended in the last
`RATE_WINDOW_S` seconds, so it follows what the run does now (a pause, a
slower phase) instead of averaging the whole run. The window's calls are also
looked at for separate groups (`call_modes.py`): that costs as much again as
the rest of a snapshot, so it is redone at most every `MODES_EVERY_S` unless a
snapshot asks for it exactly (the forced ones: a state change, the run's end).
"""

from __future__ import annotations

import bisect
import time
from collections import deque

import numpy as np

from gputop.core.call_modes import ClockReadings, NeighbourReadings, find_modes, modes_with_clocks
from gputop.core.records.calls import CALL_BUCKETS_MS, CallMode, CallStats

__all__ = [
    "CALL_MS_DECIMALS",
    "MODES_EVERY_S",
    "RATE_WINDOW_S",
    "RECENT",
    "RESERVOIR",
    "WINDOW",
    "CallTimer",
    "rate_window",
]

WINDOW = 10_000
RECENT = 120
RESERVOIR = 20_000  # call times kept for comparisons: a uniform sample of the whole run
CALL_MS_DECIMALS = 5  # the record's resolution of a call time in ms (calls.json): 10 ns
RATE_WINDOW_S = 5.0  # calls/s is counted over the calls that ended this long ago at most
MODES_EVERY_S = 1.0  # the window's groups are looked for again at most this often (unless asked exactly)


def rate_window(call_s: float) -> float:
    """How far back calls/s looks: RATE_WINDOW_S, or long enough for three calls of `call_s` seconds."""
    return max(RATE_WINDOW_S, 3.5 * call_s)


class CallTimer:
    """Call times: exact count, min, max, sum and histogram; percentiles over a window of the newest.

    The window is a ring of floats in a NumPy array, so a snapshot (ten a
    second while calls run) costs a fraction of a millisecond however long the
    run: the engine's own work must not show up in the call times it reports.
    """

    def __init__(self) -> None:
        self._window = np.zeros(WINDOW, dtype=np.float64)
        self._window_ends = np.zeros(WINDOW, dtype=np.float64)  # each window call's end (perf_counter seconds)
        self._count = 0
        self._min = float("inf")
        self._max = 0.0
        self._first_at: float | None = None
        self._last_at: float | None = None
        self._buckets = [0] * (len(CALL_BUCKETS_MS) + 1)
        self._sum_ms = 0.0
        self._ends: deque[float] = deque()  # end stamps of the calls within the rate's window of the newest
        self._window_s = RATE_WINDOW_S
        self._reservoir = np.zeros(RESERVOIR, dtype=np.float64)
        self._rng = np.random.default_rng(0)  # seeded: the same run keeps the same calls
        self._modes: tuple[CallMode, ...] = ()
        self._modes_count = 0  # the count the groups were found at
        self._modes_at = -float("inf")

    @property
    def count(self) -> int:
        """Calls added since the start (the window keeps only the newest)."""
        return self._count

    def add(self, seconds: float, *, ended_at: float | None = None) -> None:
        """One call of `seconds`, ended at `ended_at` (perf_counter seconds; now when not given)."""
        ms = seconds * 1e3
        stamp = time.perf_counter() if ended_at is None else ended_at
        self._window[self._count % WINDOW] = ms
        self._window_ends[self._count % WINDOW] = stamp
        if self._count < RESERVOIR:
            self._reservoir[self._count] = ms
        else:  # Algorithm R: the new call replaces a kept one with probability RESERVOIR / (count + 1)
            slot = int(self._rng.integers(0, self._count + 1))
            if slot < RESERVOIR:
                self._reservoir[slot] = ms
        self._buckets[bisect.bisect_left(CALL_BUCKETS_MS, ms)] += 1
        self._sum_ms += ms
        self._count += 1
        self._min = min(self._min, ms)
        self._max = max(self._max, ms)
        if self._first_at is None:
            self._first_at = stamp - seconds
        self._last_at = stamp
        self._ends.append(stamp)
        self._window_s = rate_window(seconds)
        while self._ends and self._ends[0] < stamp - self._window_s:
            self._ends.popleft()

    def kept(self) -> np.ndarray:
        """A copy of the reservoir: every call's time (ms) up to RESERVOIR calls, a uniform sample beyond."""
        return self._reservoir[: min(self._count, RESERVOIR)].copy()

    def recent_rate(self, now: float | None = None) -> float | None:
        """Calls per second over the calls that ended in the window before `now`; None if too few.

        The window is RATE_WINDOW_S, or longer where calls are slow (a 5 s call
        still has a rate): `rate_window` of the newest call's time.

        Counted between the first and the last end inside the window, so a run
        that has just started (or resumed) shows its rate at once, and a run
        whose calls stopped (paused, stuck) shows none once the window is past.
        """
        now = time.perf_counter() if now is None else now
        cutoff = now - self._window_s
        # The ends are in time order: skip the stale ones from the left, not copy the window (a fast
        # module ends thousands of calls in it, and a snapshot is taken ten times a second).
        stale = 0
        for stamp in self._ends:
            if stamp >= cutoff:
                break
            stale += 1
        count = len(self._ends) - stale
        if count < 2:
            return None
        first, last = self._ends[stale], self._ends[-1]
        if last <= first:
            return None
        return (count - 1) / (last - first)

    def windows_from(self, first: int) -> tuple[int, np.ndarray, np.ndarray]:
        """The calls numbered `first` on (as many as the window still holds) as (number of the first returned,
        starts, ends) in perf_counter seconds: what a sampler of the GPU sets its samples against."""
        first = max(first, self._count - WINDOW, 0)
        n = self._count - first
        if n <= 0:
            return self._count, np.zeros(0), np.zeros(0)
        ends = self._recent(n, self._window_ends).copy()
        return first, ends - self._recent(n) / 1e3, ends

    def recent(self, n: int) -> list[float]:
        """The newest `n` call times (ms, fewer where the run has made fewer), oldest first."""
        return [float(v) for v in self._recent(n)]

    def _recent(self, n: int, ring: np.ndarray | None = None) -> np.ndarray:
        """The newest `n` times (or their ends, from `ring`), oldest first."""
        ring = self._window if ring is None else ring
        n = min(n, self._count, WINDOW)
        end = self._count % WINDOW
        if n <= end:
            return ring[end - n : end]
        return np.concatenate((ring[WINDOW - (n - end) :], ring[:end]))

    def modes(
        self,
        *,
        exact: bool = False,
        clock_readings: ClockReadings | None = None,
        neighbour_readings: NeighbourReadings | None = None,
    ) -> tuple[CallMode, ...]:
        """The window's calls in groups (`call_modes.find_modes`), each with its SM clock where the run's clock
        readings (`clock_readings`) cover its calls and what the neighbour watch saw over them
        (`neighbour_readings`); found again at most every MODES_EVERY_S unless `exact`."""
        stamp = time.perf_counter()
        if self._count != self._modes_count and (exact or stamp - self._modes_at >= MODES_EVERY_S):
            # At the record's resolution (calls.json keeps 10 ns): groups found again from the record are the
            # same to the last digit, where rounding the times twice (to 5 places, then 4) could move one.
            values = np.round(self._recent(WINDOW), CALL_MS_DECIMALS)
            self._modes = modes_with_clocks(
                find_modes(values), values, self._recent(WINDOW, self._window_ends), clock_readings, neighbour_readings
            )
            self._modes_count, self._modes_at = self._count, stamp
        return self._modes

    def snapshot(
        self,
        now: float | None = None,
        *,
        exact: bool = False,
        clock_readings: ClockReadings | None = None,
        groups: bool = True,
        neighbour_readings: NeighbourReadings | None = None,
    ) -> CallStats:
        """The statistics now; `exact` looks for the window's groups again now, however recently it did (`modes`);
        without `groups`, none are looked for (a watched program's every function: only its busiest shows them)."""
        if not self._count:
            return CallStats()
        values = self._window[: min(self._count, WINDOW)]
        elapsed = (self._last_at or 0.0) - (self._first_at or 0.0)
        p50, p95 = np.percentile(values, [50, 95])
        return CallStats(
            count=self._count,
            min_ms=round(self._min, 4),
            p50_ms=round(float(p50), 4),
            p95_ms=round(float(p95), 4),
            max_ms=round(self._max, 4),
            mean_ms=round(float(values.mean()), 4),
            calls_per_s=round(self._count / elapsed, 3) if elapsed > 0 else None,
            recent_calls_per_s=round(rate, 3) if (rate := self.recent_rate(now)) is not None else None,
            recent_ms=tuple(float(v) for v in self._recent(RECENT)),
            buckets=tuple(self._buckets),
            sum_ms=self._sum_ms,
            modes=self.modes(exact=exact, clock_readings=clock_readings, neighbour_readings=neighbour_readings)
            if groups
            else (),
        )
