"""What a viewer in another process may ask of a run through its control channel, and the answers.

`gputop attach` and the browser viewers of `gputop web` watch a run that
another process drives; their keys arrive here as one-line requests on the
session folder's `control.sock` (see `core/serving/control_socket.py`). A viewer may pause
or resume the run, ask for a profile pass or a capture, keep the record
dense while it watches, and fetch or export the report as it stands. It may
not stop the run, reload it or move it to another device: those belong to
the process that owns it. Refusals carry the very reasons the owner's own
keys would get (`why_no_profile`, `why_no_capture`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

from gputop.core.snapshot import RunSnapshot

__all__ = ["OPS", "Remote", "answer"]

WATCH_S_MAX = 60.0


class Remote(Protocol):
    """The parts of a `Session` a remote viewer reaches."""

    @property
    def snapshot(self) -> RunSnapshot: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def request_profile(self) -> str | None: ...

    def request_capture(self, calls: int = 1) -> str | None: ...

    def keep_samples(self, seconds: float) -> None: ...

    def current_report(self) -> dict[str, Any]: ...

    def export_report(self) -> Path: ...


def _refused(reason: str) -> dict[str, Any]:
    return {"ok": False, "reason": reason}


def _hello(run: Remote, _request: dict[str, Any]) -> dict[str, Any]:
    snapshot = run.snapshot
    return {"ok": True, "pid": os.getpid(), "state": snapshot.state, "session_dir": snapshot.session_dir}


def _toggle_pause(run: Remote, _request: dict[str, Any]) -> dict[str, Any]:
    state = run.snapshot.state
    if state == "running":
        run.pause()
        return {"ok": True, "state": "paused"}
    if state == "paused":
        run.resume()
        return {"ok": True, "state": "running"}
    return _refused(f"nothing to pause while {state}")


def _profile(run: Remote, _request: dict[str, Any]) -> dict[str, Any]:
    reason = run.request_profile()
    return _refused(reason) if reason else {"ok": True}


def _capture(run: Remote, request: dict[str, Any]) -> dict[str, Any]:
    calls = request.get("calls", 1)
    if not isinstance(calls, int) or calls < 1:
        return _refused("calls: a positive number of calls to capture")
    reason = run.request_capture(calls)
    return _refused(reason) if reason else {"ok": True}


def _watch(run: Remote, request: dict[str, Any]) -> dict[str, Any]:
    seconds = request.get("seconds", 5.0)
    if not isinstance(seconds, int | float) or seconds <= 0:
        return _refused("seconds: how long the viewer watches, a positive number")
    run.keep_samples(min(float(seconds), WATCH_S_MAX))
    return {"ok": True}


def _report(run: Remote, _request: dict[str, Any]) -> dict[str, Any]:
    return {"ok": True, "report": run.current_report()}


def _export(run: Remote, _request: dict[str, Any]) -> dict[str, Any]:
    return {"ok": True, "path": str(run.export_report())}


OPS = {
    "hello": _hello,
    "toggle_pause": _toggle_pause,
    "profile": _profile,
    "capture": _capture,
    "watch": _watch,
    "report": _report,
    "export": _export,
}


def answer(run: Remote, request: dict[str, Any]) -> dict[str, Any]:
    """The reply to one request (`{"op": ...}`) from a viewer of `run`."""
    op = request.get("op")
    handler = OPS.get(str(op))
    if handler is None:
        return _refused(f"unknown request {op!r} (one of: {', '.join(OPS)})")
    return handler(run, request)
