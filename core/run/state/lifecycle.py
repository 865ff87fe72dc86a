"""Where a run is: its state and since when, the seconds each phase took, and the error that ended it.

A state part (see `gputop.core.run.state`): its events (`enter`, `phase`,
`fail`) take the run's lock and publish at once; `fields()` is its piece of
every snapshot. A state the run enters is written to the session's manifest
too, except the ending, which is written with the report.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import TypedDict

from gputop.core.errors import GputopError
from gputop.core.records.progress import Phases
from gputop.core.run.state.link import RunLink
from gputop.core.run.state.log import LogState

__all__ = ["REPORT_STATES", "LifecycleFields", "LifecycleState"]

REPORT_STATES = ("finished", "stopped", "error")  # the manifest gets these with the report, not from `enter`


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

    link: RunLink = field(default_factory=RunLink.alone)
    log: LogState = field(default_factory=LogState)
    state: str = "idle"
    since: float | None = None  # wall clock: when the current state began
    phases: Phases = field(default_factory=Phases)
    error: GputopError | None = None  # what ended the run in `error`

    def enter(self, state: str) -> None:
        """Be in `state`; its clock restarts only when the state changes. Published at once."""
        with self.link.lock:
            if state != self.state:
                self.since = time.time()
            self.state = state
        self.link.publish(True)
        if state not in REPORT_STATES:  # the ending is written with the report
            self.link.update_manifest(state=state)

    def phase(self, **seconds: float) -> None:
        """Record how long phases took (`compile_s=1.2`)."""
        with self.link.lock:
            self.phases = replace(self.phases, **seconds)
        self.link.publish(True)

    def fail(self, error: GputopError) -> None:
        """The run ends in `error` with this one-line message and exit code (said in the log)."""
        with self.link.lock:
            self.error = error
        self.log.add("error", str(error), error.log_path)
        self.enter("error")

    def fields(self) -> LifecycleFields:
        error = self.error
        return LifecycleFields(
            state=self.state,
            state_since=self.since,
            phases=self.phases,
            error=error.message if error else None,
            error_exit_code=error.exit_code if error else None,
        )
