"""gputop's engine: find devices, compile, load and run IREE modules, and report.

This package is a plain library. It never imports Textual or Rich, so that the
same engine serves the `gputop run` command, the live TUI and anyone scripting
a run from Python. Results leave the engine as frozen dataclasses (see
`snapshot`), which are safe to hand across threads; a live run is `run`, its
session folder `store`, and the flat modules are the building blocks both use
(CONTRIBUTING.md's "How the code is laid out" has the map).
"""

from __future__ import annotations

from gputop.core.errors import GputopError

__all__ = ["GputopError"]
