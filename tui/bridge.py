"""The one door between the Textual app and the engine.

Panes and the app import engine types and actions from here only (an
import-linter contract enforces it), so the engine can change inside without
the UI noticing. The bridge owns the current `Session`, turns its snapshots
into `SnapshotArrived` messages that coalesce (a slow screen gets the newest
snapshot, never a backlog), and exposes the blocking actions (stop, restart,
device listing, report export) that the app runs in thread workers.
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from textual.message import Message

from gputop.core.cupti_profile import cupti_unavailable_reason
from gputop.core.devices import IREE_BACKENDS, list_devices
from gputop.core.errors import EXIT_SIGINT, EXIT_SIGTERM
from gputop.core.metrics import MetricsServer
from gputop.core.records import (
    BUSY_STATES,
    CallStats,
    CaptureInfo,
    DeviceInfo,
    DeviceMemory,
    Event,
    KernelTiming,
    MemorySample,
    Phases,
    RunSnapshot,
)
from gputop.core.replay import read_snapshots
from gputop.core.report import build_report
from gputop.core.session import RunConfig, Session

__all__ = [
    "BUSY_STATES",
    "EXIT_SIGINT",
    "EXIT_SIGTERM",
    "CallStats",
    "CaptureInfo",
    "DeviceInfo",
    "DeviceMemory",
    "EngineBridge",
    "Event",
    "KernelTiming",
    "MemorySample",
    "Phases",
    "ReplaySource",
    "RunConfig",
    "RunSnapshot",
    "SnapshotArrived",
    "SnapshotSource",
]


class SnapshotArrived(Message):
    """A new snapshot of the run. Consecutive ones replace each other in the queue."""

    def __init__(self, snapshot: RunSnapshot) -> None:
        super().__init__()
        self.snapshot = snapshot

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SnapshotArrived)


class _Poster(Protocol):
    def post_message(self, message: Message) -> bool: ...


class SnapshotSource(Protocol):
    """What the app drives: a live engine or a recorded run."""

    live: bool

    def attach(self, target: _Poster) -> None: ...
    def start(self) -> None: ...
    def stop(self, timeout: float = 30.0) -> bool: ...
    def toggle_pause(self) -> str | None: ...
    @property
    def config(self) -> RunConfig: ...
    @property
    def session_dir(self) -> Path | None: ...


class EngineBridge:
    """Runs sessions for the app: one at a time, restartable with a new config."""

    live = True

    def __init__(self, config: RunConfig) -> None:
        self._config = config
        self._target: _Poster | None = None
        self._session: Session | None = None
        self._lock = threading.Lock()
        self._metrics: MetricsServer | None = None

    @property
    def config(self) -> RunConfig:
        return self._config

    @property
    def session(self) -> Session | None:
        return self._session

    @property
    def session_dir(self) -> Path | None:
        return self._session.session_dir if self._session else None

    def attach(self, target: _Poster) -> None:
        self._target = target

    def start(self) -> None:
        """Start a session (non-blocking: the engine runs on its own thread)."""
        target = self._target
        if target is None:
            raise RuntimeError("attach the bridge to an app first")
        with self._lock:
            session = Session(self._config)
            session.subscribe(lambda snapshot: target.post_message(SnapshotArrived(snapshot)))
            self._session = session
        session.start()

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop the session and wait for its teardown (blocking: call from a worker)."""
        session = self._session
        if session is None:
            return True
        session.stop()
        return session.wait(timeout)

    def serve_metrics(self, port: int, addr: str) -> str:
        """Prometheus metrics of whichever session runs now (restarts included); returns the URL."""
        from gputop.core.record import versions as package_versions

        self._metrics = MetricsServer(
            lambda: self._session.snapshot if self._session else None, port, addr, versions=package_versions()
        )
        return self._metrics.start()

    def stop_metrics(self) -> None:
        if self._metrics is not None:
            self._metrics.stop()

    def interrupt(self, exit_code: int) -> None:
        """A signal ends the run: record it as interrupted with `exit_code` (non-blocking)."""
        if self._session is not None:
            self._session.stop(exit_code=exit_code)

    def restart(self, **changes: Any) -> None:
        """Stop, then start again with `changes` to the config (blocking)."""
        self.stop()
        if changes:
            self._config = replace(self._config, **changes)
        self.start()

    def toggle_pause(self) -> str | None:
        session = self._session
        if session is None:
            return None
        state = session.snapshot.state
        if state == "running":
            session.pause()
            return "paused"
        if state == "paused":
            session.resume()
            return "running"
        return None

    def request_profile(self) -> str | None:
        """Ask for a profile pass; returns why not, or None when it was asked for."""
        session = self._session
        if session is None or session.snapshot.state not in ("running", "paused"):
            state = session.snapshot.state if session else "idle"
            return f"nothing to profile while {state}"
        if session.snapshot.profiling:
            return "a profile pass is already running"
        device = session.snapshot.device
        if device is not None and device.backend == "cuda":
            reason = cupti_unavailable_reason()
            if reason:
                return reason
        session.request_profile()
        return None

    def request_capture(self) -> str | None:
        """Ask for a RenderDoc capture of the next call; returns why not, or None."""
        session = self._session
        if session is None or session.snapshot.state not in ("running", "paused"):
            return "start a run first"
        device = session.snapshot.device
        if device is not None and device.backend != "vulkan":
            hint = {
                "cuda": "use Nsight Systems or ncu for CUDA",
                "hip": "use rocprof for HIP",
                "opencl": "RenderDoc does not capture OpenCL",
            }.get(device.backend, "RenderDoc captures Vulkan only")
            return f"RenderDoc captures Vulkan work; this run is on {device.id} ({hint})"
        return session.request_capture(1)

    def runnable_devices(self) -> list[DeviceInfo]:
        """Devices a run can move to (blocking: drivers are asked)."""
        return [row for row in list_devices(IREE_BACKENDS) if row.runnable]

    def export_report(self) -> Path:
        """Write the report (same JSON as `gputop run --json`) into the session directory."""
        session = self._session
        if session is None:
            raise RuntimeError("no session to report on")
        path = session.session_dir / "report.json"
        path.write_text(json.dumps(build_report(session), indent=2) + "\n", encoding="utf-8")
        return path


class ReplaySource:
    """Recorded snapshots played into the app: deterministic screens for tests and `open`."""

    live = False

    def __init__(self, snapshots: list[RunSnapshot], config: RunConfig | None = None) -> None:
        self._snapshots = snapshots
        self._config = config or RunConfig(target=snapshots[-1].target if snapshots else "replay")
        self._target: _Poster | None = None

    @classmethod
    def from_file(cls, path: Path) -> ReplaySource:
        return cls(read_snapshots(path))

    @property
    def config(self) -> RunConfig:
        return self._config

    @property
    def session_dir(self) -> Path | None:
        last = self._snapshots[-1] if self._snapshots else None
        return Path(last.session_dir) if last and last.session_dir else None

    def attach(self, target: _Poster) -> None:
        self._target = target

    def start(self) -> None:
        if self._target is None:
            raise RuntimeError("attach the replay to an app first")
        for snapshot in self._snapshots:
            self._target.post_message(SnapshotArrived(snapshot))

    def stop(self, timeout: float = 30.0) -> bool:
        return True

    def toggle_pause(self) -> str | None:
        return None
