"""Where gputop keeps things: the compile cache and session directories.

Compiled modules are cached by content in the user's cache directory, and each
run writes its logs and artefacts into a session directory under the user's
state directory, named by its start in UTC (`20250101-120000Z-label`), so
that names sort by time whatever the time zone or daylight saving of the run.
Both can be moved with environment variables (`GPUTOP_CACHE_DIR`,
`GPUTOP_STATE_DIR`) so tests and CI never touch $HOME.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import platformdirs

__all__ = ["cache_dir", "new_session_dir", "state_dir"]


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
            return path
        except FileExistsError:
            continue
    raise OSError(f"cannot create a session directory under {base}")
