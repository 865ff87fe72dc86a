"""Where the app's snapshots come from: one module per source, all behind `SnapshotSource`.

- `engine_process`: `EngineProcess`, the TUI's own engine (`gputop serve` in a child it owns).
- `attach`: `AttachSource`, a run another process drives (`gputop attach`, `gputop web`'s pages).
- `replay`: `ReplaySource`, recorded snapshots (`gputop open`, tests, screenshots).
- `in_process`: `EngineBridge`, the engine in this very process (tests and scripts; never the command line).
- `messages`: what every source posts (`SnapshotArrived`, coalescing, and `SourceNote`).

With `gputop.tui.bridge`, these are the only modules of the TUI that import the engine; the rest
of it takes these names from the bridge.
"""

from __future__ import annotations

from gputop.tui.sources.attach import AttachSource
from gputop.tui.sources.engine_process import ENGINE_LOG, EngineProcess
from gputop.tui.sources.in_process import EngineBridge
from gputop.tui.sources.messages import SnapshotArrived, SourceNote
from gputop.tui.sources.protocol import Poster, SnapshotSource
from gputop.tui.sources.replay import ReplaySource

__all__ = [
    "ENGINE_LOG",
    "AttachSource",
    "EngineBridge",
    "EngineProcess",
    "Poster",
    "ReplaySource",
    "SnapshotArrived",
    "SnapshotSource",
    "SourceNote",
]
