"""A watched program's diagnoses as they stand: one line per finding, its figures replaced in place.

A finding is said once (the Log, the header, `hints`): a later line on the same
subject (newer figures: `module loaded 200 times` after `... 2 times`) replaces
the first quietly, so a count that grows never becomes a hundred lines. The
caller holds the watched process's lock.
"""

from __future__ import annotations

from gputop.core.program.diagnose import Hint

__all__ = ["Findings"]


class Findings:
    """The hints in the order first found, each under its subject."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._subjects: list[str] = []

    @property
    def subjects(self) -> tuple[str, ...]:
        """Each line's subject, in the lines' order: what /metrics labels a standing hint by."""
        return tuple(self._subjects)

    def take(self, hint: Hint) -> bool:
        """Keep `hint`; True when its subject is new (the caller says it), False when it replaced an older line."""
        subject, line = hint
        if subject in self._subjects:
            self.lines[self._subjects.index(subject)] = line
            return False
        self._subjects.append(subject)
        self.lines.append(line)
        return True
