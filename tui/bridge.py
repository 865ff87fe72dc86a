"""The one door between gputop's faces and the engine: names only, no logic.

Every module of `gputop.tui` but this one and `gputop.tui.sources` takes the
engine's names from here (an import-linter contract holds it): the app, its
panes and screens, the command line, the web server and the text every face
prints. Behind the door are two things, re-exported whole:

- `gputop.core.api`, the engine's public face: its records, actions, errors,
  exit codes, and the formatters and sentences every face prints numbers with
  (so the panes and the report's text print a number alike);
- `gputop.tui.sources`, what the app holds: a `SnapshotSource` (the TUI's own
  engine in a child process, a run another process drives, a recorded run,
  or the engine in this very process for tests) and the coalescing messages
  a source posts.

Nothing is loaded before it is named (PEP 562, as in `gputop.core.api`): a
command line that names the store's reader pays for it, and one that names
no source never loads Textual (~130 ms) or the Prometheus client (~25 ms).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from gputop.core import api

if TYPE_CHECKING:  # type checkers see the names themselves; at run time they come from __getattr__
    from gputop.core.api import *  # noqa: F403
    from gputop.tui.sources import (
        AttachSource,
        EngineBridge,
        EngineProcess,
        ReplaySource,
        SnapshotArrived,
        SnapshotSource,
        SourceNote,
    )

SOURCES = (
    "AttachSource",
    "EngineBridge",
    "EngineProcess",
    "ReplaySource",
    "SnapshotArrived",
    "SnapshotSource",
    "SourceNote",
)

__all__ = [*api.__all__, *SOURCES]

if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        """`name` from the sources or the engine's face, loaded now and kept here for the next lookup."""
        home = importlib.import_module("gputop.tui.sources") if name in SOURCES else api
        try:
            value = getattr(home, name)
        except AttributeError:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
        globals()[name] = value
        return value
