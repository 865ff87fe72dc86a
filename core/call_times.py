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
slower phase) instead of averaging the whole run.
"""

from __future__ import annotations

import bisect
import time
from collections import deque

import numpy as np

from gputop.core.snapshot import CALL_BUCKETS_MS, CallStats

__all__ = ["RATE_WINDOW_S", "RECENT", "RESERVOIR", "WINDOW", "CallTimer", "rate_window"]

WINDOW = 10_000
RECENT = 120
RESERVOIR = 20_000  # call times kept for comparisons: a uniform sample of the whole run
RATE_WINDOW_S = 5.0  # calls/s is counted over the calls that ended this long ago at most


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

    @property
    def count(self) -> int:
        """Calls added since the start (the window keeps only the newest)."""
        return self._count

    def add(self, seconds: float, *, ended_at: float | None = None) -> None:
        """One call of `seconds`, ended at `ended_at` (perf_counter seconds; now when not given)."""
        ms = seconds * 1e3
        self._window[self._count % WINDOW] = ms
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
        stamp = time.perf_counter() if ended_at is None else ended_at
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

    def recent(self, n: int) -> list[float]:
        """The newest `n` call times (ms, fewer where the run has made fewer), oldest first."""
        return [float(v) for v in self._recent(n)]

    def _recent(self, n: int) -> np.ndarray:
        """The newest `n` times, oldest first."""
        n = min(n, self._count, WINDOW)
        end = self._count % WINDOW
        if n <= end:
            return self._window[end - n : end]
        return np.concatenate((self._window[WINDOW - (n - end) :], self._window[:end]))

    def snapshot(self, now: float | None = None) -> CallStats:
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
        )
