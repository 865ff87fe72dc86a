"""`import gputop; gputop.watch()` in a program whose environment does not have gputop installed.

gputop's watcher is standard library only, so a program's own environment
(a venv with iree.runtime and numpy, nothing of gputop's dependencies) needs only
the folder above this one on its PYTHONPATH: `PYTHONPATH=$(gputop watch-path) python app.py`
(the watcher itself, `gputop_agent`, is read from gputop's inject folder beside it).
Then `gputop.watch()` starts the `gputop` command that is installed elsewhere
(on PATH, or named by `$GPUTOP`) as the engine beside the program, and watches it
as `gputop -- python app.py` would. Where no gputop command can be found it says
so in one line, and the program runs on unwatched.

Where gputop is installed in the program's environment, its own `gputop` package does the same with that
environment's Python; this copy is never on a path gputop sets itself (a watched program's PYTHONPATH holds
the inject folder, not this one).
"""

from __future__ import annotations

import os
import shutil
import sys

__all__ = ["watch"]


def _say(message: str) -> None:
    try:
        sys.stderr.write(f"gputop: {message}\n")
        sys.stderr.flush()
    except Exception:
        pass


def _engine() -> list[str] | None:
    """The gputop command to start: `$GPUTOP` (a path, or words), else `gputop` on PATH."""
    named = os.environ.get("GPUTOP")
    if named:
        return named.split()
    found = shutil.which("gputop")
    return [found] if found else None


def _new_folder(command: list[str]) -> str:
    """A session folder where `gputop sessions` looks: $GPUTOP_STATE_DIR, else the XDG state folder's gputop."""
    import time

    base = os.environ.get("GPUTOP_STATE_DIR") or os.path.join(
        os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state"), "gputop"
    )
    words = [w for w in command[1:] if not w.startswith("-")]
    stem = os.path.splitext(os.path.basename(words[0]))[0] if words else "program"
    label = "".join(c if c.isalnum() or c in "-_" else "-" for c in stem)[:40] or "program"
    stamp = time.strftime("%Y%m%d-%H%M%SZ", time.gmtime())
    sessions = os.path.join(base, "sessions")
    for attempt in range(1000):
        path = os.path.join(sessions, f"{stamp}-{label}" + (f"-{attempt}" if attempt else ""))
        if not os.path.exists(path):
            return path
    return os.path.join(sessions, f"{stamp}-{label}-{os.getpid()}")


def watch(*, session_dir: str | os.PathLike[str] | None = None, metrics_port: int = 0) -> str | None:
    """Watch this program's iree.runtime calls from here on; returns the session folder (None if not watched)."""
    if os.environ.get("GPUTOP_WATCH_SOCKET"):
        return None  # gputop -- CMD started this program: its watcher is in already
    try:
        engine = _engine()
        if engine is None:
            _say(
                "not watching this program: the gputop command is not on PATH; install gputop where you run "
                "it (pipx install gputop) or set GPUTOP=/path/to/gputop (this environment needs only "
                "$(gputop watch-path) on PYTHONPATH)"
            )
            return None
        # The watcher (gputop_agent) is in gputop's inject folder beside this one; last: the program's names win.
        inject = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "inject")
        if inject not in sys.path:
            sys.path.append(inject)
        from gputop_agent.adopt import program_command, start_watching

        folder = os.fspath(session_dir) if session_dir is not None else _new_folder(program_command())
        return start_watching(engine, folder, metrics_port, _say)
    except Exception as exc:  # the program must run on, whatever went wrong here
        _say(f"not watching this program: {exc}")
        return None
