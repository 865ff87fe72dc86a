"""The messages sources post to the app: snapshots that coalesce, and notes for the Log pane.

A source (the engine's stream, a recorded run) posts from its own thread; the
app handles them on its own. `SnapshotArrived` replaces an older one still
queued (`can_replace`), so a slow screen draws the newest snapshot, never a
backlog (Toolong's pattern).
"""

from __future__ import annotations

from textual.message import Message

from gputop.core.snapshot import RunSnapshot

__all__ = ["SnapshotArrived", "SourceNote"]


class SnapshotArrived(Message):
    """A new snapshot of the run. Consecutive ones replace each other in the queue.

    `generation` says which run of the source it belongs to: after a reload or
    a device switch the app draws nothing of an older one, even a snapshot
    still queued from before.
    """

    def __init__(self, snapshot: RunSnapshot, generation: int = 0) -> None:
        super().__init__()
        self.snapshot = snapshot
        self.generation = generation

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SnapshotArrived)


class SourceNote(Message):
    """A line for the Log pane from the source itself (whose run this is, that it ended), not from the run."""

    def __init__(self, level: str, text: str) -> None:
        super().__init__()
        self.level = level
        self.text = text
