"""Who else used the run's GPU and the host: now (the live view) and over the run's calls (the report's).

A state part (see `gputop.core.run.state`): its setters take the run's lock.
`fields()` is its piece of every snapshot,
`summary_fields()` its piece of the run's report. A profile pass's own
neighbours ride on that pass's summary (`profile`). The newest
`NEIGHBOUR_HISTORY` live views are kept with the time they came (perf_counter
seconds, the call timer's clock), so each group of the calls can be told what
the host's others and the GPU's did while it ran (`readings`, which the calls
part asks, as it asks the clocks part for the clock).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import TypedDict

from gputop.core.records.neighbours import Neighbours
from gputop.core.run.state.link import RunLink

__all__ = ["NEIGHBOUR_HISTORY", "NeighboursFields", "NeighboursState", "NeighboursSummaryFields"]

NEIGHBOUR_HISTORY = 600  # live views kept with their times: 10 minutes at the watch's one a second

# (perf_counter seconds, cores others took of the host, other processes on the GPU): None where not seen
NeighbourView = tuple[float, float | None, int | None]


def _history() -> deque[NeighbourView]:
    return deque(maxlen=NEIGHBOUR_HISTORY)


class NeighboursFields(TypedDict):
    """The snapshot's fields this part fills."""

    neighbours: Neighbours | None


class NeighboursSummaryFields(TypedDict):
    """The run summary's fields this part fills."""

    neighbours: Neighbours | None


@dataclass(eq=False)
class NeighboursState:
    """The neighbour watch's newest view, and the one over the run's calls."""

    link: RunLink = field(default_factory=RunLink.alone)
    live: Neighbours | None = None  # who else used the GPU and host just now
    over_calls: Neighbours | None = None  # ... over the run's calls: what its report says
    history: deque[NeighbourView] = field(default_factory=_history)

    def set_live(self, neighbours: Neighbours) -> None:
        """The live view of the GPU's other processes and the host's load (the neighbour watch's thread)."""
        at_s = time.perf_counter()
        host = neighbours.host.other_cores if neighbours.host is not None else None
        gpu = neighbours.others if neighbours.gpu is not None else None  # no GPU watched: nobody is not zero
        with self.link.lock:
            self.live = neighbours
            self.history.append((at_s, host, gpu))

    def readings(self) -> list[NeighbourView]:
        """The kept live views, oldest first, for the calls' groups (asked under the run's lock)."""
        return list(self.history)

    def set_over_calls(self, neighbours: Neighbours) -> None:
        """Who else used the GPU and the host over the run's calls: the report's `neighbours`."""
        with self.link.lock:
            self.over_calls = neighbours

    def fields(self) -> NeighboursFields:
        return NeighboursFields(neighbours=self.live)

    def summary_fields(self) -> NeighboursSummaryFields:
        return NeighboursSummaryFields(neighbours=self.over_calls)
