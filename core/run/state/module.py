"""What the run calls: its function, that function's result types, and the compiler's diagnostics.

A state part (see `gputop.core.run.state`): RunState holds it and changes it
under its lock only; `fields()` is its piece of every snapshot. The compiled
module itself is part of the run's outcome (`outcome`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from gputop.core.records.compile import Diagnostic

__all__ = ["ModuleFields", "ModuleState"]


class ModuleFields(TypedDict):
    """The snapshot's fields this part fills."""

    function: str | None
    result_types: tuple[str, ...]
    diagnostics: tuple[Diagnostic, ...]


@dataclass(eq=False)
class ModuleState:
    """The function a run calls (None until it is known), its results (`256x256xf32`) and the diagnostics."""

    function: str | None = None
    result_types: tuple[str, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()

    def fields(self) -> ModuleFields:
        return ModuleFields(function=self.function, result_types=self.result_types, diagnostics=self.diagnostics)
