"""The GPU's clocks over the run's calls: the readings taken while calls ran, summed up, and the newest with times.

A state part (see `gputop.core.run.state`): the clock watch hands it its
readings (`on_reading`), which take the run's lock and publish; `fields()` is
its piece of every snapshot. A reading counts for the calls when calls ended since the reading before it, so the
load before the first call, a pause and a profile pass's own calls (which
have their own clocks) do not count, and the reading taken as the calls end
does. The newest `CLOCK_HISTORY` readings are kept with the time they were
taken (perf_counter seconds, the call timer's clock), so a window of calls
can be asked what clock it ran at (`over`), and each group of the calls gets
the clock it ran at (`readings`, which the calls part asks).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TypedDict

from gputop.core.records.clocks import CallClocks, ClockReading
from gputop.core.run.state.calls import CallsState
from gputop.core.run.state.link import RunLink
from gputop.core.run.state.log import LogState
from gputop.core.watch.call_clocks import ClockSample, ClockTally, samples_between, summarize_samples

__all__ = ["CLOCK_HISTORY", "ClocksFields", "ClocksState"]

CLOCK_HISTORY = 6000  # readings kept with their times: 10 minutes at the default 0.1 s sample interval


class ClocksFields(TypedDict):
    """The snapshot's fields this part fills."""

    call_clocks: CallClocks | None
    call_clocks_reason: str | None
    clock_now: ClockReading | None


def _history() -> deque[ClockSample]:
    return deque(maxlen=CLOCK_HISTORY)


@dataclass(eq=False)
class ClocksState:
    """Which GPU's clocks are read (or why none), the tally over the calls, and the newest readings."""

    link: RunLink = field(default_factory=RunLink.alone)
    log: LogState = field(default_factory=LogState)
    calls: CallsState = field(default_factory=CallsState)  # whose count says whether calls ended since
    gpu: str | None = None  # "NVIDIA H200 (nvml:0)"
    reason: str | None = None  # why there is no clock to read (a CPU device, no NVIDIA driver)
    latest: ClockReading | None = None
    history: deque[ClockSample] = field(default_factory=_history)
    tally: ClockTally = field(default_factory=ClockTally)
    calls_seen: int = 0  # the call count at the reading before
    warned: bool = False  # the log has said the clocks' warning (once a run: it holds for every call after)
    _summary: CallClocks | None = None
    _stale: bool = False

    def set_source(self, gpu: str | None, reason: str | None) -> None:
        """Whose clocks the run reads ("NVIDIA H200 (nvml:0)"), or why it reads none."""
        with self.link.lock:
            self.gpu, self.reason = gpu, reason

    def on_reading(self, sample: ClockSample) -> None:
        """A reading from the clock watch's thread; it counts for the calls when calls ended since the last.
        The first time the clocks over the calls earn a warning, the log says it in full (the Run pane in short)."""
        with self.link.lock:
            self.add(sample, self.calls.count)
            summary = self.summary()
            warning = summary.warning if summary is not None and not self.warned else None
            if warning:
                self.warned = True
        if warning:
            self.log.add("warning", f"clocks: {warning}")
        self.link.publish(False)

    def add(self, sample: ClockSample, calls: int) -> None:
        """A reading, and the run's call count as it was taken: it counts for the calls if that moved."""
        with self.link.lock:
            self.latest = sample[1]
            self.history.append(sample)
            if calls != self.calls_seen:  # != not >: a watched program's busiest function may change
                self.tally.add(*sample)
                self._stale = True
            self.calls_seen = calls

    def summary(self) -> CallClocks | None:
        """The clocks over every call so far (rebuilt only after a new reading counted)."""
        with self.link.lock:
            if self._stale and self.gpu is not None:
                self._summary = self.tally.summary(self.gpu)
                self._stale = False
            return self._summary

    def readings(self) -> list[tuple[float, float]]:
        """The newest readings as (perf_counter seconds, SM MHz), for the calls' groups (asked under the lock)."""
        return [(at_s, reading.sm_mhz) for at_s, reading in self.history]

    def over(self, start_s: float, end_s: float) -> CallClocks | None:
        """The clocks of calls between `start_s` and `end_s` (perf_counter seconds, as `CallTimer.add`'s
        `ended_at`): the readings then and the first after (`samples_between`); None without any."""
        with self.link.lock:
            if self.gpu is None:
                return None
            return summarize_samples(self.gpu, samples_between(self.history, start_s, end_s))

    def fields(self) -> ClocksFields:
        return ClocksFields(call_clocks=self.summary(), call_clocks_reason=self.reason, clock_now=self.latest)
