"""The run's Kernels table: the newest profile pass, the newest counters pass, and the two joined.

A state part (see `gputop.core.run.state`): its events take the run's lock
(a pass starting or ending publishes at once); `fields()` is its piece of every snapshot. The table a
snapshot shows is the profile joined with the counters by kernel name
(`kernel_counters.with_counters`), joined once when either changes, not per
snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TypedDict

from gputop.core.profiling.ncu.kernel_counters import with_counters
from gputop.core.records.counters import CountersPass
from gputop.core.records.neighbours import Neighbours
from gputop.core.records.profile import ProfileSummary
from gputop.core.run.state.link import RunLink

__all__ = ["ProfileFields", "ProfileState"]


class ProfileFields(TypedDict):
    """The snapshot's fields this part fills."""

    profile: ProfileSummary | None
    profiling: bool
    counters_pass: CountersPass | None
    counting: bool


@dataclass(eq=False)
class ProfileState:
    """Profile and counters passes: whether one runs, the newest of each, and the table they make together."""

    link: RunLink = field(default_factory=RunLink.alone)
    profile: ProfileSummary | None = None
    profiling: bool = False  # a profile pass is under way
    counters: CountersPass | None = None  # the newest counters pass (ncu)
    counters_alone: ProfileSummary | None = None  # its own kernel table, for a run not yet profiled
    counting: bool = False  # a counters pass is under way
    joined: ProfileSummary | None = None  # what snapshots show: the profile joined with the counters

    def set_profiling(self, active: bool) -> None:
        """Whether a profile pass is under way; published at once."""
        with self.link.lock:
            self.profiling = active
        self.link.publish(True)

    def set_profile(self, profile: ProfileSummary | None) -> None:
        """The newest profile pass (merged over the run's passes); the Kernels table is joined again."""
        with self.link.lock:
            self.profile = profile
            self._join()

    def set_pass_neighbours(self, profile: ProfileSummary, neighbours: Neighbours) -> None:
        """The newest pass's neighbours on its summary, if `profile` (the summary that pass set) is still current
        (no later pass replaced it)."""
        updated: ProfileSummary = replace(profile, neighbours=neighbours)
        with self.link.lock:
            if self.profile is profile:
                self.set_profile(updated)

    def set_counting(self, active: bool) -> None:
        """Whether a counters pass is under way; published at once."""
        with self.link.lock:
            self.counting = active
        self.link.publish(True)

    def set_counters(self, counters: CountersPass, alone: ProfileSummary | None = None) -> None:
        """The newest counters pass; `alone`, its own kernel table, stands in while the run has no profile.

        A pass that failed (`counters.error`, said in the log) does not replace one that measured: the
        table keeps what was measured, and the report the pass that measured it.
        """
        with self.link.lock:
            if counters.error is None or self.counters is None or self.counters.error is not None:
                self.counters, self.counters_alone = counters, alone
                self._join()

    def _join(self) -> None:
        """The table snapshots show: the profile (else the counters' own table) with the counters joined by name."""
        self.joined = with_counters(self.profile or self.counters_alone, self.counters)

    def fields(self) -> ProfileFields:
        return ProfileFields(
            profile=self.joined, profiling=self.profiling, counters_pass=self.counters, counting=self.counting
        )
