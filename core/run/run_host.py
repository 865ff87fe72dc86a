"""One engine process's runs: a `Session`, and after a reload or a device switch the next segment.

The TUI, `gputop serve` and the engine behind `gputop web` all run their
engine through a `RunHost`: it starts the session, keeps the subscribers of
every segment, and carries out what only the run's owner may ask over the
control channel (stop, reload, another device, the list of devices), so the
same key does the same thing whichever face pressed it. A reload of the same
target continues the session folder as a new segment; another target gets a
folder of its own. Restarts happen on the host's own thread, never on the
control channel's, because the old session's teardown closes that channel.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gputop.core.module.device_discovery import IREE_BACKENDS, list_devices
from gputop.core.records.base import to_json
from gputop.core.run.config import RunConfig
from gputop.core.run.session import Session
from gputop.core.run.state import Subscriber
from gputop.core.snapshot import RunSnapshot

__all__ = ["CALL_SWITCH_INTERVAL_S", "RunHost", "tune_interpreter_for_calls"]

RESTARTABLE = ("device",)
# How long another thread of the engine (the record writer serialising a snapshot, the memory sampler) may
# hold the interpreter once the call thread wants it back. Python's default, 5 ms, is longer than a whole
# GPU call: a call that ended while the writer ran was timed up to 5 ms late, which is what showed at p95.
CALL_SWITCH_INTERVAL_S = 0.0002  # what a viewer's restart may change; anything else stays as the owner started it


def tune_interpreter_for_calls() -> None:
    """In a process that exists to make calls (`gputop run`, `gputop serve`): hand the interpreter back quickly.

    Process-wide, so the engine's processes do it and the library does not: a
    script that runs a `Session` in its own interpreter keeps its own setting.
    """
    sys.setswitchinterval(CALL_SWITCH_INTERVAL_S)


class RunHost:
    """Runs sessions one at a time for one engine process, restartable with a new device."""

    def __init__(self, config: RunConfig, *, owner_pid: int | None = None) -> None:
        self.config = config
        self.owner_pid = owner_pid
        self.generation = 0
        self._segment = 0
        self._session: Session | None = None
        self._subscribers: list[Subscriber] = []
        self._lock = threading.Lock()
        self._restarting = threading.Event()
        self.restarts = 0

    @property
    def session(self) -> Session:
        if self._session is None:
            raise RuntimeError("the host has not started a session")
        return self._session

    @property
    def snapshot(self) -> RunSnapshot | None:
        return self._session.snapshot if self._session is not None else None

    def subscribe(self, callback: Subscriber) -> None:
        """`callback` gets every snapshot of this and every later segment."""
        self._subscribers.append(callback)
        if self._session is not None:
            self._session.subscribe(callback)

    def start(self) -> Session:
        with self._lock:
            session = Session(
                self.config,
                segment=self._segment,
                owner_pid=self.owner_pid,
                owner_ops=self._owner_ops() if self.owner_pid is not None else None,
            )
            for callback in self._subscribers:
                session.subscribe(callback)
            self._session = session
        session.start()
        return session

    def stop(self, exit_code: int | None = None) -> None:
        if self._session is not None:
            self._session.stop(exit_code=exit_code)

    def request_profile(self, level: str = "default") -> str | None:
        return self.session.request_profile(level)

    def request_counters(self) -> str | None:
        return self.session.request_counters()

    def request_pm_sampling(self, on: bool) -> str | None:
        return self.session.request_pm_sampling(on)

    def record_interrupted_now(self, exit_code: int) -> None:
        """A second signal: the current segment writes its ending now (see `Session.record_interrupted_now`)."""
        self.session.record_interrupted_now(exit_code)

    def wait(self, timeout: float | None = None) -> bool:
        """True once the current session has ended and no restart is under way."""
        session = self._session
        if session is None or self._restarting.is_set():
            time.sleep(timeout or 0.0)
            return False
        ended = session.wait(timeout)
        return ended and not self._restarting.is_set() and session is self._session

    def restart(self, **changes: Any) -> Session:
        """End the current session and start the next: the same folder as a new segment when the target is the same."""
        self._restarting.set()
        try:
            self.generation += 1
            self.restarts += 1
            previous = self._session
            if previous is not None:
                previous.stop()
                previous.wait()
            config = replace(self.config, **changes) if changes else self.config
            if previous is not None and config.target == self.config.target:
                config = replace(config, session_dir=previous.session_dir)
                self._segment += 1
            else:
                self._segment = 0
            self.config = config
            return self.start()
        finally:
            self._restarting.clear()

    # -- what only the owner may ask, over the control channel -----------------------------
    def _owner_ops(self) -> dict[str, Callable[[dict[str, Any]], dict[str, Any]]]:
        return {"stop": self._op_stop, "restart": self._op_restart, "devices": self._op_devices}

    def _op_stop(self, request: dict[str, Any]) -> dict[str, Any]:
        code = request.get("exit_code")
        self.stop(exit_code=code if isinstance(code, int) and code > 0 else None)
        return {"ok": True}

    def _op_restart(self, request: dict[str, Any]) -> dict[str, Any]:
        if self._restarting.is_set():
            return {"ok": False, "reason": "a reload is already under way"}
        changes = {key: request[key] for key in RESTARTABLE if isinstance(request.get(key), str)}
        self._restarting.set()  # until the thread below has the new session running
        threading.Thread(target=self.restart, kwargs=changes, name="gputop-restart", daemon=True).start()
        return {"ok": True}

    def _op_devices(self, _request: dict[str, Any]) -> dict[str, Any]:
        rows = [row for row in list_devices(IREE_BACKENDS) if row.runnable]
        return {"ok": True, "devices": [to_json(row) for row in rows]}
