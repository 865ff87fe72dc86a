"""gputop's engine: find devices, compile, load and run IREE modules, and report.

This package is a plain library. It never imports Textual or Rich, so that the
same engine serves the `gputop run` command, the live TUI and anyone scripting
a run from Python. Results leave the engine as frozen dataclasses (see
`records`), which are safe to hand across threads.
"""

from __future__ import annotations

from gputop.core.errors import GputopError

__all__ = ["GputopError"]
