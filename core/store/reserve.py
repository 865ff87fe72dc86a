"""The room a session folder keeps on its disk for its ending, and when that room is given back.

A disk that fills mid-run would otherwise leave a session whose manifest says
`running` for ever: each folder holds `.reserve` (256 KiB of zeros) from its
start, and the run's ending frees it first, so `report.json` and the
manifest's ending fit. A run that ends frees it itself; a run whose process
died without an ending (`kill -9`, the OOM killer) cannot, so whoever finds it
dead on this host gives the room back: `gputop sessions`, and the TUI once its
own engine has exited. A run on another host (a shared state folder) or one
whose pid is alive keeps it: its process may still need it.
"""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path
from typing import Any

from gputop.core.processes import pid_alive

__all__ = ["RESERVE", "RESERVE_BYTES", "keep_reserve", "release_abandoned_reserve", "release_reserve", "run_alive_here"]

RESERVE = ".reserve"
RESERVE_BYTES = 256 * 1024


def keep_reserve(folder: Path) -> None:
    """Set the room aside (best effort: a disk already too full for it runs without)."""
    with contextlib.suppress(OSError), open(folder / RESERVE, "wb") as reserve:
        reserve.write(b"\0" * RESERVE_BYTES)


def release_reserve(folder: Path) -> None:
    """Give the room back (it is gone already, or cannot be removed: nothing to do)."""
    with contextlib.suppress(OSError):
        (folder / RESERVE).unlink()


def run_alive_here(manifest: dict[str, Any]) -> bool | None:
    """Whether the process that wrote `manifest` is alive; None where that cannot be known (a run on
    another host, or a manifest without a pid). A pid that is alive may be another process's by now."""
    pid = manifest.get("pid")
    if manifest.get("host") != socket.gethostname() or not isinstance(pid, int) or isinstance(pid, bool):
        return None
    return pid_alive(pid)


def release_abandoned_reserve(folder: Path, manifest: dict[str, Any]) -> bool:
    """Give back the room of a run whose process is gone from this host; True when it was there to give.

    Only a process on this host can be known gone; a pid that is alive (the run,
    or another process that took its pid) keeps the room.
    """
    if run_alive_here(manifest) is not False or not (folder / RESERVE).exists():
        return False
    release_reserve(folder)
    return not (folder / RESERVE).exists()
