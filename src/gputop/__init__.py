"""gputop: a terminal UI for live GPU runs of IREE modules, and a watcher of your own IREE programs.

This is the package's top (`import gputop`); the engine is `gputop.core` and
the faces are `gputop.tui`. One thing lives here, for programs that gputop
cannot start itself: `gputop.watch()`, one line at the top of a program that
uses `iree.runtime`, makes the same session `gputop -- python app.py` would.
It imports nothing of gputop's until it is called.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["watch"]


def watch(*, session_dir: str | os.PathLike[str] | None = None, metrics_port: int = 0) -> Path | None:
    """Watch this program's iree.runtime calls from here on, in a gputop session (see `gputop attach`).

    Args:
        session_dir: where the session is recorded (default: a new folder in gputop's state folder).
        metrics_port: Prometheus port of the engine beside the program (0: any free one).

    Returns:
        The session folder, or None when the program is not watched (already under `gputop -- CMD`, or the
        watch could not start: one line on stderr says why; the program runs on either way).
    """
    from gputop.core.program.adopt import watch as start_watching

    return start_watching(session_dir=session_dir, metrics_port=metrics_port)
