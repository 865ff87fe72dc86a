"""The run's log: its newest events, numbered, and how many errors it has said since the start.

A state part (see `gputop.core.run.state`): `add` takes the run's lock and
publishes at once (a line is news a viewer must see); `fields()` is its piece
of every snapshot. The other parts that say a line (the clocks' warning, the
output check, PM sampling's refusals) say it here.
"""

from __future__ import annotations

from collections import deque
from typing import TypedDict

from gputop.core.records.progress import Event
from gputop.core.run.state.link import RunLink

__all__ = ["EVENTS_KEPT", "EVENTS_PUBLISHED", "LogFields", "LogState"]

EVENTS_KEPT = 200
EVENTS_PUBLISHED = 50  # a snapshot carries the newest; their seq numbers let readers skip the ones seen


class LogFields(TypedDict):
    """The snapshot's fields this part fills."""

    events: tuple[Event, ...]
    errors: int


class LogState:
    """The newest EVENTS_KEPT events, numbered from 1, and the count of error events (which outlives them)."""

    def __init__(self, link: RunLink | None = None) -> None:
        self.link = link or RunLink.alone()
        self.events: deque[Event] = deque(maxlen=EVENTS_KEPT)
        self.seq = 0
        self.errors = 0

    def add(self, level: str, message: str, log_path: str | None = None) -> None:
        """A line for the log (info, warning, error); published at once."""
        with self.link.lock:
            self.seq += 1
            self.events.append(Event(self.seq, level, message, log_path))
            if level == "error":
                self.errors += 1
        self.link.publish(True)

    def add_many(self, lines: list[tuple[str, str]]) -> None:
        """Several lines, `(level, message)` each, with one snapshot in the run's own time (a program's output:
        a snapshot per line made a program printing a line per call nine times slower)."""
        if not lines:
            return
        with self.link.lock:
            for level, message in lines:
                self.seq += 1
                self.events.append(Event(self.seq, level, message, None))
                if level == "error":
                    self.errors += 1
        self.link.publish(False)

    def fields(self) -> LogFields:
        return LogFields(events=tuple(self.events)[-EVENTS_PUBLISHED:], errors=self.errors)
