"""The engine in this very process: for tests and scripts that want one interpreter.

The command line never runs it so: a screen drawn in the engine's interpreter
stretches the calls it measures (the observer lives outside the observed), and
`gputop TARGET` starts its engine as a child instead (`engine_process`). Here
a `Session` runs on its own thread and posts each snapshot to the app; a
restart starts a new session, in the same folder as a new segment when the
target stays the same.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from gputop.core.module.device_discovery import IREE_BACKENDS, list_devices
from gputop.core.records.captures import CaptureInfo
from gputop.core.records.devices import DeviceInfo
from gputop.core.renderdoc.capture_files import CaptureVerifier
from gputop.core.run import RunConfig, Session
from gputop.core.serving.access import exposure_warning
from gputop.core.serving.metrics import MetricsServer
from gputop.core.versions import versions
from gputop.tui.sources.messages import SnapshotArrived, SourceNote
from gputop.tui.sources.protocol import Poster

__all__ = ["EngineBridge"]


class EngineBridge:
    """Runs sessions for the app: one at a time, restartable with a new config."""

    live = True
    origin = None  # the run is this process's own

    def __init__(self, config: RunConfig) -> None:
        self._config = config
        self.generation = 0
        self._segment = 0
        self._target: Poster | None = None
        self._session: Session | None = None
        self._lock = threading.Lock()
        self._metrics: MetricsServer | None = None
        self._capture_reader: CaptureVerifier | None = None
        self._notes: list[tuple[str, str]] = []  # said in the Log pane when the app starts
        self.metrics_warning: str | None = None  # metrics listen beyond this machine: say so before the screen

    @property
    def config(self) -> RunConfig:
        return self._config

    @property
    def session(self) -> Session | None:
        return self._session

    @property
    def session_dir(self) -> Path | None:
        return self._session.session_dir if self._session else None

    def attach(self, target: Poster) -> None:
        self._target = target

    def start(self) -> None:
        """Start a session (non-blocking: the engine runs on its own thread)."""
        target = self._target
        if target is None:
            raise RuntimeError("attach the bridge to an app first")
        if self._capture_reader is None:
            # Started before any session can load RenderDoc into this process: its children are plain.
            self._capture_reader = CaptureVerifier()
        with self._lock:
            session = Session(self._config, segment=self._segment)
            generation = self.generation
            session.subscribe(lambda snapshot: target.post_message(SnapshotArrived(snapshot, generation)))
            self._session = session
        for level, text in self._notes:
            target.post_message(SourceNote(level, text))
        self._notes.clear()
        session.start()

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop the session and wait for its teardown (blocking: call from a worker)."""
        ended = self._stop_session(timeout)
        if self._capture_reader is not None:
            self._capture_reader.close()
            self._capture_reader = None
        return ended

    def _stop_session(self, timeout: float = 30.0) -> bool:
        session = self._session
        if session is None:
            return True
        session.stop()
        return session.wait(timeout)

    def serve_metrics(self, port: int, addr: str, token: str | None = None) -> str:
        """Prometheus metrics of whichever session runs now (restarts included); returns the URL."""
        self._metrics = MetricsServer(
            lambda: self._session.snapshot if self._session else None, port, addr, versions=versions(), token=token
        )
        url = self._metrics.start()
        self._notes.append(("info", f"Prometheus metrics at {url}" + (" (bearer token required)" if token else "")))
        self.metrics_warning = exposure_warning("metrics", addr, self._metrics.port, token)
        if self.metrics_warning:
            self._notes.append(("warning", self.metrics_warning))
        return url

    def stop_metrics(self) -> None:
        if self._metrics is not None:
            self._metrics.stop()

    def interrupt(self, exit_code: int) -> None:
        if self._session is not None:
            self._session.stop(exit_code=exit_code)

    def abandon(self, exit_code: int) -> None:
        if self._session is not None:
            self._session.record_interrupted_now(exit_code)

    def refusal(self, action: str = "") -> str | None:
        return None

    def restart(self, **changes: Any) -> None:
        """The same target goes on in the same session folder as a new segment; another target gets its own."""
        self.generation += 1
        self._stop_session()
        previous = self._session
        config = replace(self._config, **changes) if changes else self._config
        if previous is not None and config.target == self._config.target:
            config = replace(config, session_dir=previous.session_dir)
            self._segment += 1
        else:
            self._segment = 0
        self._config = config
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

    def request_profile(self, level: str = "default") -> str | None:
        if self._session is None:
            return "nothing to profile while idle"
        return self._session.request_profile(level)

    def request_capture(self) -> str | None:
        if self._session is None:
            return "start a run first"
        return self._session.request_capture(1)

    def request_counters(self) -> str | None:
        if self._session is None:
            return "nothing to measure while idle"
        return self._session.request_counters()

    def request_pm_sampling(self, on: bool) -> str | None:
        if self._session is None:
            return "nothing to sample while idle"
        return self._session.request_pm_sampling(on)

    def runnable_devices(self) -> list[DeviceInfo]:
        return [row for row in list_devices(IREE_BACKENDS) if row.runnable]

    def export_report(self) -> Path:
        session = self._session
        if session is None:
            raise RuntimeError("no session to report on")
        return session.export_report()

    def read_capture(self, path: str) -> CaptureInfo:
        reader = self._capture_reader
        if reader is None:
            raise RuntimeError("the capture reader is not running (start a run first)")
        return reader.verify(Path(path), replay=True)

    def current_report(self) -> dict[str, Any]:
        session = self._session
        if session is None:
            raise RuntimeError("no session to report on")
        return session.current_report()
