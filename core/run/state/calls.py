"""The run's call times: the synced wall time of every call, the enqueues' time beside it, and the kept samples.

A state part (see `gputop.core.run.state`): RunState holds it and changes it
under its lock only; `fields()` is its piece of every snapshot. It also keeps
what a comparison of two runs needs (`samples`): the calls' kept times and the
profile passes' per-dispatch times.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np

from gputop.core.call_modes import ClockReadings
from gputop.core.call_times import CallTimer
from gputop.core.compare.samples import call_samples, samples_block
from gputop.core.records.calls import CallStats

__all__ = ["CallSamples", "CallsFields", "CallsState"]


class CallsFields(TypedDict):
    """The snapshot's fields this part fills."""

    calls: CallStats
    enqueue: CallStats | None


@dataclass(frozen=True, eq=False)
class CallSamples:
    """The samples as they stood, taken under the lock; made into `calls.json`'s block outside it."""

    kept_ms: np.ndarray  # a copy of the timer's reservoir
    count: int
    dispatches: dict[str, Any] | None

    def block(self) -> dict[str, Any]:
        """What `calls.json` and the report's `samples` key hold."""
        calls = call_samples(self.kept_ms, self.count) if self.count else None
        return samples_block(calls, self.dispatches)


@dataclass(eq=False)
class CallsState:
    """A timer of the synced calls, one of the enqueues where asked (OpenCL), and the dispatch samples."""

    timer: CallTimer = field(default_factory=CallTimer)
    enqueue_timer: CallTimer | None = None  # OpenCL: when the enqueues returned, beside the synced time
    dispatch_samples: dict[str, Any] | None = None  # the profile passes' per-dispatch times
    # The GPU's clock readings, where a clock watch takes them: each group of calls (`calls.modes`) is given
    # the clock it ran at. None: the groups' clocks are unknown.
    clock_readings: ClockReadings | None = None

    def time_enqueues(self) -> None:
        if self.enqueue_timer is None:
            self.enqueue_timer = CallTimer()

    def add(self, seconds: float, enqueue_s: float | None = None, ended_at: float | None = None) -> None:
        self.timer.add(seconds, ended_at=ended_at)
        if enqueue_s is not None and self.enqueue_timer is not None:
            self.enqueue_timer.add(enqueue_s)

    def samples(self) -> CallSamples:
        return CallSamples(self.timer.kept(), self.timer.count, self.dispatch_samples)

    def fields(self, *, exact: bool = False) -> CallsFields:
        """The part's piece of a snapshot; `exact` (a forced snapshot) looks for the calls' groups again now."""
        enqueue = self.enqueue_timer.snapshot() if self.enqueue_timer is not None else None
        return CallsFields(calls=self.timer.snapshot(exact=exact, clock_readings=self.clock_readings), enqueue=enqueue)
