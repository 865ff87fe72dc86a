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
import shutil
import sys
import tempfile
import time
from pathlib import Path

import platformdirs

from gputop.core.errors import UnwritableFolder

__all__ = [
    "cache_dir",
    "check_writable",
    "discard_session_dir",
    "new_session_dir",
    "note_session_dir",
    "state_dir",
    "write_crash_log",
]

# The session folders this process made, newest last: an internal error's traceback goes to the newest.
_MADE: list[Path] = []
# Of those, the ones `new_session_dir` made (not given to the process): the only ones it may discard.
_FRESH: set[Path] = set()


# The compile cache each configured folder resolved to in this process (itself, or an uncached stand-in).
_CACHES: dict[Path, Path] = {}


def cache_dir() -> Path:
    """The compile cache: `$GPUTOP_CACHE_DIR` or the platform's user cache dir.

    One that cannot be written (read-only, full) is said once, in a warning, and the run goes on
    uncached: its compiles go to `uncached/` in the session folder. With no session folder yet, it
    is an `UnwritableFolder` error naming `GPUTOP_CACHE_DIR`.
    """
    wanted = Path(os.environ.get("GPUTOP_CACHE_DIR") or platformdirs.user_cache_dir("gputop"))
    known = _CACHES.get(wanted)
    if known is not None:
        return known
    try:
        wanted.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=wanted, prefix=".write-probe-")
        os.close(fd)
        os.unlink(probe)
        usable = wanted
    except OSError as exc:
        if not _MADE:
            raise UnwritableFolder(wanted, exc, "GPUTOP_CACHE_DIR") from exc
        usable = _MADE[-1] / "uncached"
        try:
            usable.mkdir(exist_ok=True)
        except OSError as inner:
            raise UnwritableFolder(usable, inner) from inner
        print(
            f"gputop: warning: the compile cache {wanted} cannot be written ({exc.strerror or exc}): running "
            f"uncached, compiling into {usable} (set GPUTOP_CACHE_DIR to a writable folder)",
            file=sys.stderr,
            flush=True,
        )
    _CACHES[wanted] = usable
    return usable


def state_dir() -> Path:
    """Sessions live here: `$GPUTOP_STATE_DIR` or the platform's user state dir (UnwritableFolder if not makeable)."""
    path = Path(os.environ.get("GPUTOP_STATE_DIR") or platformdirs.user_state_dir("gputop"))
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UnwritableFolder(path, exc) from exc
    return path


def check_writable(folder: Path, variable: str = "GPUTOP_STATE_DIR") -> None:
    """Raise UnwritableFolder (naming `variable`) unless a file can be made and written in `folder`."""
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".write-probe-")
        try:
            os.write(fd, b"gputop")
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        raise UnwritableFolder(folder, exc, variable) from exc


def note_session_dir(path: Path) -> None:
    """`path` is this process's session folder (one given to it, not made by `new_session_dir`)."""
    if path not in _MADE:
        _MADE.append(path)


def new_session_dir(parent: Path | None = None, label: str = "run") -> Path:
    """A fresh, uniquely named session directory (UTC time first, so they sort; `-1`, `-2`... in one second)."""
    base = parent or (state_dir() / "sessions")
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UnwritableFolder(base, exc) from exc
    stamp = time.strftime("%Y%m%d-%H%M%SZ", time.gmtime())
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in label)[:40]
    for attempt in range(1000):
        path = base / f"{stamp}-{safe}" if attempt == 0 else base / f"{stamp}-{safe}-{attempt}"
        try:
            path.mkdir(parents=True)
        except FileExistsError:
            continue
        except OSError as exc:
            raise UnwritableFolder(base, exc) from exc
        try:  # a full disk still makes folders: find it out now, not at the first sample
            check_writable(path)
        except UnwritableFolder:
            with contextlib.suppress(OSError):
                path.rmdir()
            raise
        _MADE.append(path)
        _FRESH.add(path)
        return path
    raise OSError(f"cannot create a session directory under {base}")


def discard_session_dir(path: Path) -> bool:
    """Remove a session folder this process made with `new_session_dir`, and all in it; whether it is gone.

    For a run that a usage error ended before its first call (`gputop run -f nope`): a mistyped option
    leaves no session behind. A folder given to the process (`--session-dir`, a TUI's engine) is left be.
    """
    if path not in _FRESH:
        return False
    shutil.rmtree(path, ignore_errors=True)
    if path.exists():
        return False
    _FRESH.discard(path)
    if path in _MADE:
        _MADE.remove(path)
    return True


def write_crash_log(text: str) -> Path | None:
    """Append `text` (a traceback) to `crash.log` in this process's session folder, else the state directory.

    The file is created by and for the user running gputop (mode 0600, no symlink followed). Returns where
    it went, or None when nowhere could be written (a full or read-only disk): the caller then says its one
    line without a path.
    """
    folders: list[Path] = [_MADE[-1]] if _MADE else []
    with contextlib.suppress(OSError, RuntimeError, UnwritableFolder):
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
