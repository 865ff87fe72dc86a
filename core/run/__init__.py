"""A live run: the only code that changes a run's state.

`Session` (in `session`) owns one run on its thread; `RunConfig` (in
`config`) says what to run. The flows (`iree`, `opencl`, `tool`) make the
calls behind one protocol (`flow`), `state` holds what the run knows and
publishes it, `requests` takes stop, pause, profile and capture requests and
says why one is refused, and `viewer_ops` answers viewers in other processes.
Everything here may use the building blocks and the store; they never use it.
"""

from __future__ import annotations

from gputop.core.run.config import RunConfig, Target, TargetKind
from gputop.core.run.session import Session

__all__ = ["RunConfig", "Session", "Target", "TargetKind"]
