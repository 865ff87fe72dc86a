"""A recorded run as a live run's baseline: the past sessions to pick from, and the one picked, read.

The TUI compares its run with a recorded one (`--baseline`, and `b` to step
through this target's past sessions). Both halves read the store and hand
back values: the choices as folders, the pick as a `LiveBaseline` the
comparison room knows how to set against live calls.
"""

from __future__ import annotations

from pathlib import Path

from gputop.core.compare.live import LiveBaseline
from gputop.core.store.reader import baseline_candidates, read_side

__all__ = ["baseline_choices", "load_baseline"]


def load_baseline(text: str) -> LiveBaseline:
    """A recorded run (session id, prefix or folder, or a `gputop run --json` report) held as the TUI's baseline."""
    label, report = read_side(text)
    return LiveBaseline(label, report)


def baseline_choices(target: str, own_session: Path | None, device: str | None = None) -> list[str]:
    """Past sessions of `target` with kept samples (their folders), this run's own left out: those on `device`
    first, newest first, then those on other devices, newest first (a baseline from another device compares
    the devices as much as the runs, so it is never the first offered where a same-device one exists)."""
    entries = baseline_candidates(target, own_session)
    same = [entry.path for entry in entries if device is not None and entry.device == device]
    return same + [entry.path for entry in entries if device is None or entry.device != device]
