"""Call-time statistics that stay cheap over a run of hours.

The TUI runs calls in a loop for as long as the user watches, so keeping
every call time forever would grow without bound. This keeps exact count,
min and max, plus a window of the most recent calls for percentiles and the
sparkline; reports of finite runs (under the window size) are exact.
"""

from __future__ import annotations

import bisect
import time

import numpy as np

from gputop.core.snapshot import CALL_BUCKETS_MS, CallStats

WINDOW = 10_000
RECENT = 120


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

    @property
    def count(self) -> int:
        """Calls added since the start (the window keeps only the newest)."""
        return self._count

    def add(self, seconds: float) -> None:
        ms = seconds * 1e3
        self._window[self._count % WINDOW] = ms
        self._buckets[bisect.bisect_left(CALL_BUCKETS_MS, ms)] += 1
        self._sum_ms += ms
        self._count += 1
        self._min = min(self._min, ms)
        self._max = max(self._max, ms)
        stamp = time.perf_counter()
        if self._first_at is None:
            self._first_at = stamp - seconds
        self._last_at = stamp

    def _recent(self, n: int) -> np.ndarray:
        """The newest `n` times, oldest first."""
        n = min(n, self._count, WINDOW)
        end = self._count % WINDOW
        if n <= end:
            return self._window[end - n : end]
        return np.concatenate((self._window[WINDOW - (n - end) :], self._window[:end]))

    def snapshot(self) -> CallStats:
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
            recent_ms=tuple(float(v) for v in self._recent(RECENT)),
            buckets=tuple(self._buckets),
            sum_ms=self._sum_ms,
        )
