"""Where a run is: its state and since when, the seconds each phase took, and the error that ended it.

A state part (see `gputop.core.run.state`): RunState holds it and changes it
under its lock only; `fields()` is its piece of every snapshot.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import TypedDict

from gputop.core.errors import GputopError
from gputop.core.records.progress import Phases

__all__ = ["LifecycleFields", "LifecycleState"]


class LifecycleFields(TypedDict):
    """The snapshot's fields this part fills."""

    state: str
    state_since: float | None
    phases: Phases
    error: str | None
    error_exit_code: int | None


@dataclass(eq=False)
class LifecycleState:
    """The run's state (idle, compiling, loading, running, paused, finished, stopped, error) and its phases."""

    state: str = "idle"
    since: float | None = None  # wall clock: when the current state began
    phases: Phases = field(default_factory=Phases)
    error: GputopError | None = None  # what ended the run in `error`

    def enter(self, state: str) -> None:
        """Be in `state`; its clock restarts only when the state changes."""
        if state != self.state:
            self.since = time.time()
        self.state = state

    def add_phases(self, **seconds: float) -> None:
        """Record how long phases took (`compile_s=1.2`)."""
        self.phases = replace(self.phases, **seconds)

    def fields(self) -> LifecycleFields:
        error = self.error
        return LifecycleFields(
            state=self.state,
            state_since=self.since,
            phases=self.phases,
            error=error.message if error else None,
            error_exit_code=error.exit_code if error else None,
        )
