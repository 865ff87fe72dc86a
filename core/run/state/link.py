"""What a state part shares with the run it belongs to: the run's one lock, its session writer, its publishing.

Each part of a run's state (this package's other modules) takes its own
events: a producer says `state.calls.add(...)` or `state.parameters.begin(...)`
on the part, and the part takes the run's lock, changes its data and asks the
run to publish where a viewer must see the change. `RunLink` is how the part
reaches the run without knowing `RunState`. A part made on its own (a test of
its figures) gets `RunLink.alone()`: a lock of its own, no writer, and a
publish that goes nowhere.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from gputop.core.store.writer import SessionWriter

__all__ = ["Publish", "RunLink"]

Publish = Callable[[bool], None]  # publish(force): force is a change a viewer must see at once


def _publish_nowhere(force: bool) -> None:
    """A part on its own has no run to publish."""


@dataclass(frozen=True, eq=False)
class RunLink:
    """The run's lock (reentrant: a part's event may call a sibling's under it), writer and publish."""

    lock: threading.RLock
    writer: SessionWriter | None
    publish: Publish

    @classmethod
    def alone(cls) -> RunLink:
        """For a part made outside a run: its own lock, no writer, nothing published."""
        return cls(threading.RLock(), None, _publish_nowhere)

    def update_manifest(self, **fields: object) -> None:
        """Record what became known in the session's manifest (outside the lock: it writes a file)."""
        if self.writer is not None:
            self.writer.update(**fields)
