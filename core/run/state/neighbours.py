"""Who else used the run's GPU and the host: now (the live view) and over the run's calls (the report's).

A state part (see `gputop.core.run.state`): its setters take the run's lock.
`fields()` is its piece of every snapshot,
`summary_fields()` its piece of the run's report. A profile pass's own
neighbours ride on that pass's summary (`profile`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from gputop.core.records.neighbours import Neighbours
from gputop.core.run.state.link import RunLink

__all__ = ["NeighboursFields", "NeighboursState", "NeighboursSummaryFields"]


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

    def set_live(self, neighbours: Neighbours) -> None:
        """The live view of the GPU's other processes and the host's load (the neighbour watch's thread)."""
        with self.link.lock:
            self.live = neighbours

    def set_over_calls(self, neighbours: Neighbours) -> None:
        """Who else used the GPU and the host over the run's calls: the report's `neighbours`."""
        with self.link.lock:
            self.over_calls = neighbours

    def fields(self) -> NeighboursFields:
        return NeighboursFields(neighbours=self.live)

    def summary_fields(self) -> NeighboursSummaryFields:
        return NeighboursSummaryFields(neighbours=self.over_calls)
