"""The run's Kernels table: the newest profile pass, the newest counters pass, and the two joined.

A state part (see `gputop.core.run.state`): RunState holds it and changes it
under its lock only; `fields()` is its piece of every snapshot. The table a
snapshot shows is the profile joined with the counters by kernel name
(`kernel_counters.with_counters`), joined once when either changes, not per
snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from gputop.core.profiling.ncu.kernel_counters import with_counters
from gputop.core.records.counters import CountersPass
from gputop.core.records.profile import ProfileSummary

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

    profile: ProfileSummary | None = None
    profiling: bool = False  # a profile pass is under way
    counters: CountersPass | None = None  # the newest counters pass (ncu)
    counters_alone: ProfileSummary | None = None  # its own kernel table, for a run not yet profiled
    counting: bool = False  # a counters pass is under way
    joined: ProfileSummary | None = None  # what snapshots show: the profile joined with the counters

    def set_profile(self, profile: ProfileSummary | None) -> None:
        self.profile = profile
        self._join()

    def set_counters(self, counters: CountersPass, alone: ProfileSummary | None = None) -> None:
        """The newest counters pass, unless it failed and an earlier one measured (see RunState.set_counters)."""
        if counters.error is None or self.counters is None or self.counters.error is not None:
            self.counters, self.counters_alone = counters, alone
            self._join()

    def replace_profile(self, current: ProfileSummary, updated: ProfileSummary) -> None:
        """`updated` in place of `current`, if `current` is still the newest profile (no later pass replaced it)."""
        if self.profile is current:
            self.set_profile(updated)

    def _join(self) -> None:
        """The table snapshots show: the profile (else the counters' own table) with the counters joined by name."""
        self.joined = with_counters(self.profile or self.counters_alone, self.counters)

    def fields(self) -> ProfileFields:
        return ProfileFields(
            profile=self.joined, profiling=self.profiling, counters_pass=self.counters, counting=self.counting
        )
