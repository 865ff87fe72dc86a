"""The run's RenderDoc captures, and whether RenderDoc is loaded (or why capture is unavailable).

A state part (see `gputop.core.run.state`): RunState holds it and changes it
under its lock only; `fields()` is its piece of every snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from gputop.core.records.captures import CaptureInfo

__all__ = ["CapturesFields", "CapturesState"]


class CapturesFields(TypedDict):
    """The snapshot's fields this part fills."""

    captures: tuple[CaptureInfo, ...]
    renderdoc: str | None


@dataclass(eq=False)
class CapturesState:
    """Every capture the run made, oldest first, and RenderDoc's status line."""

    captures: tuple[CaptureInfo, ...] = ()
    renderdoc: str | None = None  # "RenderDoc 1.6.0 loaded", or why capture is unavailable

    def add(self, capture: CaptureInfo) -> None:
        self.captures = (*self.captures, capture)

    def fields(self) -> CapturesFields:
        return CapturesFields(captures=self.captures, renderdoc=self.renderdoc)
