"""Where gputop keeps things: the compile cache and session directories.

Compiled modules are cached by content in the user's cache directory, and each
run writes its logs and artefacts into a session directory under the user's
state directory, named by its start in UTC (`20250101-120000Z-label`), so
that names sort by time whatever the time zone or daylight saving of the run.
Both can be moved with environment variables (`GPUTOP_CACHE_DIR`,
`GPUTOP_STATE_DIR`) so tests and CI never touch $HOME. An internal error's
traceback goes to `crash.log` in the process's session folder, else in the
state directory: the user's own, never a file shared in $TMPDIR.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import platformdirs

__all__ = ["cache_dir", "new_session_dir", "state_dir", "write_crash_log"]

# The session folders this process made, newest last: an internal error's traceback goes to the newest.
_MADE: list[Path] = []


def cache_dir() -> Path:
    """The compile cache: `$GPUTOP_CACHE_DIR` or the platform's user cache dir."""
    path = Path(os.environ.get("GPUTOP_CACHE_DIR") or platformdirs.user_cache_dir("gputop"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def state_dir() -> Path:
    """Sessions live here: `$GPUTOP_STATE_DIR` or the platform's user state dir."""
    path = Path(os.environ.get("GPUTOP_STATE_DIR") or platformdirs.user_state_dir("gputop"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def new_session_dir(parent: Path | None = None, label: str = "run") -> Path:
    """A fresh, uniquely named session directory (UTC time first, so they sort; `-1`, `-2`... in one second)."""
    base = parent or (state_dir() / "sessions")
    base.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%SZ", time.gmtime())
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in label)[:40]
    for attempt in range(1000):
        path = base / f"{stamp}-{safe}" if attempt == 0 else base / f"{stamp}-{safe}-{attempt}"
        try:
            path.mkdir(parents=True)
            _MADE.append(path)
            return path
        except FileExistsError:
            continue
    raise OSError(f"cannot create a session directory under {base}")


def write_crash_log(text: str) -> Path | None:
    """Append `text` (a traceback) to `crash.log` in this process's session folder, else the state directory.

    The file is created by and for the user running gputop (mode 0600, no symlink followed). Returns where
    it went, or None when nowhere could be written (a full or read-only disk): the caller then says its one
    line without a path.
    """
    folders: list[Path] = [_MADE[-1]] if _MADE else []
    with contextlib.suppress(OSError, RuntimeError):
        folders.append(state_dir())
    for folder in folders:
        log = folder / "crash.log"
        try:
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            return log
        except OSError:
            continue
    return None
