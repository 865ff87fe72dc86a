"""A watched program's phases as the engine counts them: its contexts, first call and teardown, cheaply.

A serving loop may make a context per request, two thousand a second: each is
counted here (its time kept in order, so the median of thousands stays a lookup)
and the totals wait in `due` for the view's next publish, instead of a snapshot
per context. The caller holds the watched process's lock around every method.
"""

from __future__ import annotations

import bisect

__all__ = ["ProgramPhases"]


class ProgramPhases:
    """Contexts made (each one's time), the first call, the teardown, and the totals not yet published."""

    def __init__(self) -> None:
        self.contexts_s: list[float] = []
        self._sorted: list[float] = []
        self._context_total_s = 0.0
        self.first_call_s: float | None = None
        self._teardown_s = 0.0
        self.due: dict[str, float] = {}  # phase totals changed since the view went out

    @property
    def contexts(self) -> int:
        return len(self.contexts_s)

    def add_contexts(self, times: list[float]) -> int:
        """Contexts made, each its creation's seconds; returns how many there were before."""
        before = len(self.contexts_s)
        self.contexts_s.extend(times)
        for one in times:
            bisect.insort(self._sorted, one)
        self._context_total_s += sum(times)
        self.due["context_s"] = self._context_total_s
        return before

    def first_call(self, seconds: float) -> bool:
        """The first call's time; True when it is the process's first (the one the phase keeps)."""
        if self.first_call_s is not None:
            return False
        self.first_call_s = seconds
        return True

    def teardown(self, seconds: float) -> None:
        self._teardown_s += seconds
        self.due["teardown_s"] = self._teardown_s

    def take_due(self) -> dict[str, float]:
        due, self.due = self.due, {}
        return due

    def context_median_ms(self) -> float | None:
        """What making a context costs here: the median of those made."""
        made = self._sorted
        return made[len(made) // 2] * 1e3 if made else None
