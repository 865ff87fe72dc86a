"""The run's call times: the synced wall time of every call, the enqueues' time beside it, and the kept samples.

A state part (see `gputop.core.run.state`): its events (`add`, `add_batch`,
...) take the run's lock; `fields()` is its piece of every snapshot. It also
keeps what a comparison of two runs needs (`samples`): the calls' kept times
and the profile passes' per-dispatch times. A watched program's calls are
the program part's; once it has some, the timer this part shows and samples
is the program's busiest function's (`timer`), asked, not copied in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np

from gputop.core.call_modes import ClockReadings, NeighbourReadings
from gputop.core.call_times import CallTimer
from gputop.core.compare.samples import call_samples, samples_block
from gputop.core.records.calls import CallStats
from gputop.core.run.state.link import RunLink
from gputop.core.run.state.program import ProgramState

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

    link: RunLink = field(default_factory=RunLink.alone)
    program: ProgramState = field(default_factory=ProgramState)
    own_timer: CallTimer = field(default_factory=CallTimer)  # the run's own calls
    enqueue_timer: CallTimer | None = None  # OpenCL: when the enqueues returned, beside the synced time
    dispatch_samples: dict[str, Any] | None = None  # the profile passes' per-dispatch times
    # The GPU's clock readings, where a clock watch takes them: each group of calls (`calls.modes`) is given
    # the clock it ran at. None: the groups' clocks are unknown.
    clock_readings: ClockReadings | None = None
    # ... and the neighbour watch's views: what else each group of calls ran beside (the host's others, the GPU's).
    neighbour_readings: NeighbourReadings | None = None

    @property
    def timer(self) -> CallTimer:
        """The calls the run shows: a watched program's busiest function once it has calls, else the run's own."""
        with self.link.lock:
            busiest = self.program.busiest()
            return busiest[1] if busiest is not None else self.own_timer

    @property
    def count(self) -> int:
        """How many calls `timer` has taken."""
        with self.link.lock:
            return self.timer.count

    def time_enqueues(self) -> None:
        """Also time when each call's enqueues returned (OpenCL), shown beside the synced time."""
        with self.link.lock:
            if self.enqueue_timer is None:
                self.enqueue_timer = CallTimer()

    def add(self, seconds: float, *, enqueue_s: float | None = None) -> None:
        """One synced call's wall time (and, with `time_enqueues`, when its enqueues returned)."""
        with self.link.lock:
            self.own_timer.add(seconds)
            if enqueue_s is not None and self.enqueue_timer is not None:
                self.enqueue_timer.add(enqueue_s)

    def add_batch(self, seconds: list[float], ended_at: list[float]) -> None:
        """Synced calls made back to back: each one's wall time and when it ended (perf_counter seconds)."""
        with self.link.lock:
            for wall, end in zip(seconds, ended_at, strict=True):
                self.own_timer.add(wall, ended_at=end)

    def set_dispatch_samples(self, samples: dict[str, Any] | None) -> None:
        """The per-dispatch times of the profile passes so far (`compare.samples.dispatch_samples`)."""
        with self.link.lock:
            self.dispatch_samples = samples

    def recent_ms(self, n: int) -> list[float]:
        """The newest `n` call times (ms), oldest first: what a profile pass is set against."""
        with self.link.lock:
            return self.timer.recent(n)

    def samples(self) -> dict[str, Any]:
        """The call and dispatch samples a comparison needs: `calls.json`, and the report's `samples`."""
        with self.link.lock:
            timer = self.timer
            taken = CallSamples(timer.kept(), timer.count, self.dispatch_samples)
        return taken.block()

    def fields(self, *, exact: bool = False) -> CallsFields:
        """The part's piece of a snapshot; `exact` (a forced snapshot) looks for the calls' groups again now."""
        enqueue = self.enqueue_timer.snapshot() if self.enqueue_timer is not None else None
        calls = self.timer.snapshot(
            exact=exact, clock_readings=self.clock_readings, neighbour_readings=self.neighbour_readings
        )
        return CallsFields(calls=calls, enqueue=enqueue)
