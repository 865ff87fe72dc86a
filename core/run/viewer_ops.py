"""What a viewer in another process may ask of a run through its control channel, and the answers.

`gputop attach`, the browser viewers of `gputop web` and the TUI that
started an engine watch a run that another process drives; their keys arrive
here as one-line requests on the session folder's `control.sock` (see
`core/serving/control_socket.py`). Any viewer may pause or resume the run, ask
for a profile pass, a counters pass or a capture, turn PM sampling on or off, and fetch or export the
report as it stands. Stopping the run, reloading it or moving it to another device belong to the
process that owns it: the TUI that started the engine (`owner_ops`, given by
the engine's `RunHost`); everyone else is refused. Refusals carry the very
reasons the owner's own keys would get (`why_no_profile`, `why_no_capture`,
`why_no_counters`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from gputop.core.snapshot import RunSnapshot

__all__ = ["OPS", "OwnerOps", "Remote", "answer"]

WATCH_S_MAX = 60.0

# What only the run's owner may ask (stop, reload, device switch, the device list): given by the host
# of an engine that a TUI started; a run without an owner has none of them.
OwnerOps = Mapping[str, Callable[[dict[str, Any]], dict[str, Any]]]


class Remote(Protocol):
    """The parts of a `Session` a remote viewer reaches."""

    @property
    def snapshot(self) -> RunSnapshot: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def request_profile(self, level: str = "default") -> str | None: ...

    def request_capture(self, calls: int = 1) -> str | None: ...

    def request_counters(self) -> str | None: ...

    def request_pm_sampling(self, on: bool) -> str | None: ...

    def keep_samples(self, seconds: float) -> None: ...

    def current_report(self) -> dict[str, Any]: ...

    def export_report(self) -> Path: ...


def _refused(reason: str) -> dict[str, Any]:
    return {"ok": False, "reason": reason}


def _hello(run: Remote, _request: dict[str, Any]) -> dict[str, Any]:
    snapshot = run.snapshot
    return {"ok": True, "pid": os.getpid(), "state": snapshot.state, "session_dir": snapshot.session_dir}


def _toggle_pause(run: Remote, _request: dict[str, Any]) -> dict[str, Any]:
    refusal = getattr(run, "pause_refusal", None)  # a run whose calls are not gputop's (a watched program)
    if refusal is not None:
        return _refused(refusal())
    state = run.snapshot.state
    if state == "running":
        run.pause()
        return {"ok": True, "state": "paused"}
    if state == "paused":
        run.resume()
        return {"ok": True, "state": "running"}
    return _refused(f"nothing to pause while {state}")


def _profile(run: Remote, request: dict[str, Any]) -> dict[str, Any]:
    reason = run.request_profile(request.get("level", "default"))  # the run refuses a level it has not
    return _refused(reason) if reason else {"ok": True}


def _counters(run: Remote, _request: dict[str, Any]) -> dict[str, Any]:
    reason = run.request_counters()
    return _refused(reason) if reason else {"ok": True}


def _pm_sampling(run: Remote, request: dict[str, Any]) -> dict[str, Any]:
    on = request.get("on")
    if not isinstance(on, bool):
        return _refused("on: true or false")
    reason = run.request_pm_sampling(on)
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
    "counters": _counters,
    "pm_sampling": _pm_sampling,
    "capture": _capture,
    "watch": _watch,
    "report": _report,
    "export": _export,
}


def answer(run: Remote, request: dict[str, Any], owner_ops: OwnerOps | None = None) -> dict[str, Any]:
    """The reply to one request (`{"op": ...}`) from a viewer of `run`.

    `request["owner"]` is set by the control server from the peer's pid, not
    by the viewer: only then are `owner_ops` open to it.
    """
    op = str(request.get("op"))
    if owner_ops and op in owner_ops:
        if request.get("owner") is not True:
            return _refused(f"only the process that started this run may {op} it")
        return owner_ops[op](request)
    handler = OPS.get(op)
    if handler is None:
        known = [*OPS, *(owner_ops or {})]
        return _refused(f"unknown request {op!r} (one of: {', '.join(known)})")
    return handler(run, request)
