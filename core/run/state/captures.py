"""The run's RenderDoc captures, and whether RenderDoc is loaded (or why capture is unavailable).

A state part (see `gputop.core.run.state`): its setters take the run's lock;
`fields()` is its piece of every snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from gputop.core.records.captures import CaptureInfo
from gputop.core.run.state.link import RunLink

__all__ = ["CapturesFields", "CapturesState"]


class CapturesFields(TypedDict):
    """The snapshot's fields this part fills."""

    captures: tuple[CaptureInfo, ...]
    renderdoc: str | None


@dataclass(eq=False)
class CapturesState:
    """Every capture the run made, oldest first, and RenderDoc's status line."""

    link: RunLink = field(default_factory=RunLink.alone)
    captures: tuple[CaptureInfo, ...] = ()
    renderdoc: str | None = None  # "RenderDoc 1.6.0 loaded", or why capture is unavailable

    def add(self, capture: CaptureInfo) -> None:
        with self.link.lock:
            self.captures = (*self.captures, capture)

    def set_renderdoc(self, status: str | None) -> None:
        """RenderDoc's status: "RenderDoc 1.6.0 loaded", or why capture is unavailable."""
        with self.link.lock:
            self.renderdoc = status

    def fields(self) -> CapturesFields:
        return CapturesFields(captures=self.captures, renderdoc=self.renderdoc)
