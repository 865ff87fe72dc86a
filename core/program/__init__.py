"""Watching a user's own program: `gputop -- python app.py`, `gputop run -- CMD`, `gputop.watch()`.

The program runs unmodified, in its own Python environment. A small watcher
(`inject/`, standard library only) is loaded into each of its Python
processes through a `sitecustomize` on PYTHONPATH; it wraps the public
`iree.runtime` API in place and streams what it sees to gputop's engine
process over a Unix socket (`agent_link`). There, each process becomes a
session like any gputop run (`watched`, on the parts in `gputop.core.run.parts`),
with its diagnoses (`diagnose`), its output (`output`), stacks (`stacks`) and
trace (`trace`); `program_host` starts the command (`launch`) and ends with it.
"""

from __future__ import annotations

from gputop.core.program.launch import INJECT_DIR, SOCKET_ENV, WATCH_PATH_DIR, ProgramNotStarted, find_command
from gputop.core.program.program_host import ProgramHost, program_label

__all__ = [
    "INJECT_DIR",
    "SOCKET_ENV",
    "WATCH_PATH_DIR",
    "ProgramHost",
    "ProgramNotStarted",
    "find_command",
    "program_label",
]
