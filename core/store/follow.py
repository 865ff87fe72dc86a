"""Following a live session folder as its run's process writes it.

`gputop attach` and the viewers of `gputop web` show a run that another
process drives. That process appends every kept snapshot to `samples.jsonl`
and rewrites `manifest.json` when its state changes; a follower reads only
what was appended since its last look (whole lines; a line still being
written waits for the next look) and turns the newest one into a snapshot,
so a viewer that looks every quarter second parses one line, not the file.
It also says whose run it is and when the run has ended: the manifest's own
ending, or its process gone without one (`crashed`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shlex
import time
from pathlib import Path
from typing import Any

from gputop.core.errors import UsageError
from gputop.core.snapshot import RunSnapshot
from gputop.core.store.reader import effective_state, read_manifest
from gputop.core.store.replay import snapshot_from_json
from gputop.core.store.writer import FINAL_STATES, SAMPLES

__all__ = ["ENDED_STATES", "SessionFollower", "describe_command", "describe_origin"]

FIRST_LOOK_BYTES = 1 << 20  # a days-long record is not read from its start: its newest lines are what counts
ENDED_STATES = (*FINAL_STATES, "crashed")


def describe_command(manifest: dict[str, Any], brief: bool = False) -> str:
    """The command line that started the run, as the user would type it (`gputop serve demo:mlp ...`).

    `brief` keeps the words before the first option (`gputop serve demo:mlp`): enough to
    recognise the run in a one-line message, which its options (a session folder's path
    among them) would wrap over several rows.
    """
    argv = [str(a) for a in manifest.get("command_line") or []]
    if not argv:
        return "?"
    program = os.path.basename(argv[0])
    if program == "__main__.py" or argv[1:3] == ["-m", "gputop.tui"]:  # python -m gputop.tui
        program, rest = "gputop", argv[3:] if argv[1:3] == ["-m", "gputop.tui"] else argv[1:]
    else:
        rest = argv[1:]
    if brief:
        before_options = list(itertools.takewhile(lambda word: not word.startswith("-"), rest))
        return shlex.join([program, *before_options]) + (" ..." if len(before_options) < len(rest) else "")
    return shlex.join([program, *rest])


def describe_origin(manifest: dict[str, Any]) -> str:
    """Whose run this is, for a header: `pid 1234 on host since 06:24:04: gputop serve demo:mlp ...`."""
    started = float(manifest.get("started_at") or 0.0)
    when = time.localtime(started)
    same_day = time.strftime("%Y%m%d", when) == time.strftime("%Y%m%d")
    since = time.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M", when)
    return f"pid {manifest.get('pid', '?')} on {manifest.get('host', '?')} since {since}: {describe_command(manifest)}"


class SessionFollower:
    """Reads a session folder as it grows: the newest whole sample since the last look, and the run's end."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.manifest = read_manifest(folder)
        self._offset: int | None = None  # where the next look starts reading samples.jsonl
        self._partial = b""

    @property
    def origin(self) -> str:
        return describe_origin(self.manifest)

    def ended(self) -> str | None:
        """The run's final state (finished, stopped, error, interrupted, crashed) once it has ended, else None."""
        with contextlib.suppress(UsageError):  # a manifest caught mid-replace: keep the last one read
            self.manifest = read_manifest(self.folder)
        state = effective_state(self.manifest)
        return state if state in ENDED_STATES else None

    def newest(self) -> RunSnapshot | None:
        """The newest whole sample appended since the last call (the newest in the file on the first)."""
        path = self.folder / SAMPLES
        try:
            handle = open(path, "rb")  # noqa: SIM115 (closed below; a missing file is not an error here)
        except FileNotFoundError:
            return None
        with handle:
            size = os.fstat(handle.fileno()).st_size
            if self._offset is None:
                self._offset = max(0, size - FIRST_LOOK_BYTES)
                if self._offset:
                    handle.seek(self._offset)
                    skipped = handle.readline()  # most likely half a line: start at the next whole one
                    self._offset += len(skipped)
            if size < self._offset:  # replaced or truncated: start again
                self._offset, self._partial = 0, b""
            handle.seek(self._offset)
            data = handle.read(size - self._offset)
        self._offset += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()  # b"" after a whole line; the start of one still being written otherwise
        for line in reversed(lines):
            if not line.strip():
                continue
            try:
                return snapshot_from_json(json.loads(line))
            except (ValueError, UsageError):
                continue  # a corrupt line: the one before it will do
        return None
