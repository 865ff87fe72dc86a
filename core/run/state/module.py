"""What the run calls: its function, that function's result types, and the compiler's diagnostics.

A state part (see `gputop.core.run.state`): its setters take the run's lock;
`fields()` is its piece of every snapshot. The compiled module itself is part
of the run's outcome (`outcome`). A watched program calls many functions: once
it has calls, the function the run shows is its busiest (`program`), asked
here, not copied in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from gputop.core.records.compile import Diagnostic
from gputop.core.run.state.link import RunLink
from gputop.core.run.state.program import ProgramState

__all__ = ["ModuleFields", "ModuleState"]


class ModuleFields(TypedDict):
    """The snapshot's fields this part fills."""

    function: str | None
    result_types: tuple[str, ...]
    diagnostics: tuple[Diagnostic, ...]


@dataclass(eq=False)
class ModuleState:
    """The function a run calls (None until it is known), its results (`256x256xf32`) and the diagnostics."""

    link: RunLink = field(default_factory=RunLink.alone)
    program: ProgramState = field(default_factory=ProgramState)
    named: str | None = None  # the function the run was told it calls
    result_types: tuple[str, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()

    @property
    def function(self) -> str | None:
        """The function the run calls: a watched program's busiest once it has calls, else the one named."""
        with self.link.lock:
            busiest = self.program.busiest()
            return busiest[0] if busiest is not None else self.named

    def set_function(self, name: str | None, result_types: tuple[str, ...] | None = None) -> None:
        """The function the run calls (and its result types, where known); published at once."""
        with self.link.lock:
            self.named = name
            if result_types is not None:
                self.result_types = result_types
        self.link.publish(True)

    def set_result_types(self, result_types: tuple[str, ...]) -> None:
        with self.link.lock:
            self.result_types = result_types

    def set_diagnostics(self, diagnostics: tuple[Diagnostic, ...]) -> None:
        with self.link.lock:
            self.diagnostics = diagnostics

    def fields(self) -> ModuleFields:
        return ModuleFields(function=self.function, result_types=self.result_types, diagnostics=self.diagnostics)
