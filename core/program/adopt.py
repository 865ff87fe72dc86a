"""`gputop.watch()`: a program started elsewhere asks to be watched from inside, in one line.

For programs gputop cannot start (a notebook kernel, a service under a
supervisor, a test runner's worker), the program calls `gputop.watch()`
itself. That starts gputop's engine beside it, as a process of its own (its
own session, so the program's terminal signals do not reach it; it ends when
the program does), waits until the engine listens, and then loads the same
watcher `gputop -- CMD` would have put into the program, connected to it. The
session is the same as `gputop -- CMD`'s: `gputop sessions` lists it, `gputop
attach` follows it, `/metrics` serves it. Called under `gputop -- CMD` (the
watcher is already in), it does nothing. Nothing here ever raises into the
program: a failure is one line on stderr and the program runs on unwatched.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from gputop.core.paths import new_session_dir
from gputop.core.program.launch import INJECT_DIR, SOCKET_ENV
from gputop.core.program.program_host import program_label

__all__ = ["watch"]


def watch(*, session_dir: str | os.PathLike[str] | None = None, metrics_port: int = 0) -> Path | None:
    """Watch this program's iree.runtime calls from here on; returns its session folder (None if not watched).

    Args:
        session_dir: where the session is recorded (default: a new folder in gputop's state folder).
        metrics_port: the engine's Prometheus port (0: any free one, nobody told).
    """
    if os.environ.get(SOCKET_ENV):
        return None  # gputop -- CMD started this program: its watcher is in already
    try:
        if str(INJECT_DIR) not in sys.path:
            sys.path.append(str(INJECT_DIR))  # last: the program's own modules keep their names
        from gputop_agent.adopt import program_command, start_watching  # the watcher's (standard library only)

        command = program_command()
        folder = Path(session_dir) if session_dir is not None else new_session_dir(label=program_label(command))
        engine = [sys.executable, "-m", "gputop.tui"]
        return Path(start_watching(engine, str(folder), metrics_port, _say))
    except Exception as exc:  # the program must run on, whatever went wrong here
        _say(f"not watching this program: {exc}")
        return None


def _say(message: str) -> None:
    with contextlib.suppress(Exception):
        print(f"gputop: {message}", file=sys.stderr, flush=True)
