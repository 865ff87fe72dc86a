"""A live run: the only code that changes a run's state.

`Session` (in `run/session.py`) owns one run that gputop's own call loop makes, on
its thread; `RunConfig` (in `config`) says what to run; `parts` composes what
every run is made of (folder, record, state, control channel, neighbour
watch), for the call loop here and for a watched program (`gputop.core.program`).
The flows (`iree`, `opencl`, `tool`) make the calls behind one protocol (`flow`), `state` holds what the run knows and
publishes it, `requests` takes stop, pause, profile and capture requests and
says why one is refused, and `viewer_ops` answers viewers in other processes.
Everything here may use the building blocks and the store; they never use it.
"""

from __future__ import annotations

from gputop.core.run.config import RunConfig, Target, TargetKind
from gputop.core.run.session import Session

__all__ = ["RunConfig", "Session", "Target", "TargetKind"]
