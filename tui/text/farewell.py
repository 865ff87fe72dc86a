"""The line the TUI leaves in the terminal once its screen is gone: where the session went, and what it lacks.

`gputop TARGET` ends with one line on stderr. It used to say `session
recorded in FOLDER` whatever the disk held; a disk that filled mid-run left a
record without its samples or its ending, and the line claimed it whole. Now
the line is read from the folder (`check_record`): recorded, recorded with
the run's own error, or incomplete with what was lost, and the exit code says
the same as `gputop run`'s (5 for an incomplete record).
"""

from __future__ import annotations

from dataclasses import dataclass

from gputop.tui.bridge import EXIT_RUNTIME, RecordCheck

__all__ = ["Farewell", "farewell"]

HINT = "free space or set GPUTOP_STATE_DIR to a writable folder"


@dataclass(frozen=True)
class Farewell:
    """What the TUI says about its session as it leaves, and the exit code that goes with it."""

    line: str
    exit_code: int | None  # None: the app's own code stands


def farewell(check: RecordCheck) -> Farewell:
    """The last line for the session `check` describes."""
    folder = check.folder
    if check.whole:
        ended = f" (the run ended in error: {check.error})" if check.state == "error" and check.error else ""
        return Farewell(f"gputop: session recorded in {folder}{ended}", None)
    hint = f" ({HINT})" if check.disk_full or "No space left" in " ".join(check.missing) else ""
    lacking = "; ".join(check.missing)
    return Farewell(f"gputop: error: the session in {folder} is incomplete: {lacking}{hint}", EXIT_RUNTIME)
