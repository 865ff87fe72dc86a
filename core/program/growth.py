"""Whether a watched program's memory grows with its calls: held results exactly, else the sampled detector.

Each memory report of the watcher adds a point (calls made, held bytes, the
allocators' live bytes, the process's RSS); the most results held at once, which
the watcher counts itself, states growth exactly from the first call however short
the program (`diagnose.held_growth`); otherwise the points are read for a steady
rise (`diagnose.find_growth`). A growth once found is kept: a program that frees
everything at its exit still grew while it ran. The caller holds its lock.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from gputop.core.program.diagnose import GrowthPoint, find_growth, held_growth
from gputop.core.records.program import MemoryGrowth

__all__ = ["GROWTH_POINTS", "GrowthTracker"]

GROWTH_POINTS = 600  # memory samples kept for the growth diagnosis: five minutes at the watcher's 0.5 s


class GrowthTracker:
    """The points so far and the growth found in them (None while memory is steady)."""

    def __init__(self) -> None:
        self._points: deque[GrowthPoint] = deque(maxlen=GROWTH_POINTS)
        self.growth: MemoryGrowth | None = None

    def add(self, point: GrowthPoint, held_peak: dict[str, Any]) -> bool:
        """One memory report; True when the growth found changed (its line is said or updated)."""
        self._points.append(point)
        peak = [int(held_peak.get(key) or 0) for key in ("count", "bytes", "calls")]
        growth = held_growth(*peak) or find_growth(list(self._points))
        changed = growth is not None and growth != self.growth
        if growth is not None:
            self.growth = growth
        return changed
