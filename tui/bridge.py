"""The one door between the Textual app and the engine.

Panes and the app import engine types and actions from here only (an
import-linter contract enforces it), so the engine can change inside without
the UI noticing. The app draws snapshots that a source posts as coalescing
`SnapshotArrived` messages (a slow screen gets the newest snapshot, never a
backlog) and runs the blocking actions (stop, restart, device listing, report
export) in thread workers. The sources: `EngineProcess` (the TUI's own engine
in a child process, driven as its owner) and `AttachSource` (a run another
process drives: `gputop attach`, `gputop web`'s pages), both in `viewer`;
`ReplaySource` plays recorded snapshots (`gputop open`, tests);
`EngineBridge` runs the engine in this very process, for tests and scripts
that want one interpreter (the command line never does: a screen drawn in the
engine's interpreter stretches the calls it measures).
The panes' number formatters come from here too (`gputop.core.units`), the
same ones the report's text uses, so both faces print a number alike.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from textual.message import Message

from gputop.core.compare.diff import Change
from gputop.core.compare.live import LiveBaseline
from gputop.core.errors import EXIT_RUNTIME, EXIT_SIGHUP, EXIT_SIGINT, EXIT_SIGTERM
from gputop.core.module.devices import IREE_BACKENDS, list_devices
from gputop.core.profiling.efficiency import ridge_intensity
from gputop.core.profiling.neighbours import host_load_limit
from gputop.core.profiling.overhead import kernels_cost_text, overhead_text, overhead_warning
from gputop.core.renderdoc.captures import CaptureVerifier, capture_info
from gputop.core.run import RunConfig, Session
from gputop.core.serving.access import exposure_warning
from gputop.core.serving.metrics import MetricsServer
from gputop.core.snapshot import (
    BUSY_STATES,
    CallBreakdown,
    CallSegment,
    CallStats,
    CaptureInfo,
    CountersPass,
    DeviceInfo,
    DeviceMemory,
    Event,
    KernelTiming,
    MemorySample,
    ParameterLoad,
    Phases,
    ProfileSummary,
    RunSnapshot,
    to_json,
)
from gputop.core.store.completeness import RecordCheck, check_record
from gputop.core.store.reader import baseline_candidates, read_side
from gputop.core.store.replay import read_snapshots
from gputop.core.units import (
    BYTES,
    NAME_MARK,
    NAME_NOTE,
    RATE,
    TIME_US,
    column,
    dram_bytes,
    estimate_ratio,
    estimated_work,
    fixed,
    flop_per_byte,
    host_load_text,
    human_bytes,
    limits_line,
    mhz,
    ms,
    ms_fixed,
    name_marked,
    neighbours_text,
    pct_of_bound,
    percent,
    seconds,
    share_of_ceiling,
    si,
)
from gputop.core.versions import versions
from gputop.tui.messages import SnapshotArrived, SourceNote
from gputop.tui.viewer import AttachSource, EngineProcess

__all__ = [
    "BUSY_STATES",
    "BYTES",
    "EXIT_RUNTIME",
    "EXIT_SIGHUP",
    "EXIT_SIGINT",
    "EXIT_SIGTERM",
    "NAME_MARK",
    "NAME_NOTE",
    "RATE",
    "TIME_US",
    "AttachSource",
    "CallBreakdown",
    "CallSegment",
    "CallStats",
    "CaptureInfo",
    "Change",
    "CountersPass",
    "DeviceInfo",
    "DeviceMemory",
    "EngineBridge",
    "EngineProcess",
    "Event",
    "KernelTiming",
    "LiveBaseline",
    "MemorySample",
    "ParameterLoad",
    "Phases",
    "ProfileSummary",
    "RecordCheck",
    "ReplaySource",
    "RunConfig",
    "RunSnapshot",
    "SnapshotArrived",
    "SnapshotSource",
    "SourceNote",
    "baseline_choices",
    "check_record",
    "column",
    "dram_bytes",
    "estimate_ratio",
    "estimated_work",
    "fixed",
    "flop_per_byte",
    "host_load_limit",
    "host_load_text",
    "human_bytes",
    "kernels_cost_text",
    "limits_line",
    "load_baseline",
    "mhz",
    "ms",
    "ms_fixed",
    "name_marked",
    "neighbours_text",
    "overhead_text",
    "overhead_warning",
    "pct_of_bound",
    "percent",
    "ridge_intensity",
    "seconds",
    "share_of_ceiling",
    "si",
    "to_json",
]

RECORDED = "this is a recorded run"


def load_baseline(text: str) -> LiveBaseline:
    """A recorded run (session id, prefix or folder, or a `gputop run --json` report) held as the TUI's baseline."""
    label, report = read_side(text)
    return LiveBaseline(label, report)


def baseline_choices(target: str, own_session: Path | None) -> list[str]:
    """Past sessions of `target` with kept samples, newest first (their folders), this run's own left out."""
    return [entry.path for entry in baseline_candidates(target, own_session)]


class _Poster(Protocol):
    def post_message(self, message: Message) -> bool: ...


class SnapshotSource(Protocol):
    """What the app drives: a live engine or a recorded run. Every request says why not, or None."""

    live: bool
    origin: str | None  # whose run this is, when another process drives it (pid, host, command, since)
    generation: int  # counts restarts: snapshots carry the one they belong to

    def attach(self, target: _Poster) -> None:
        """Where snapshots go (`post_message`)."""

    def start(self) -> None:
        """Start sending snapshots (non-blocking)."""

    def stop(self, timeout: float = 30.0) -> bool:
        """End the run and wait for its teardown (blocking: call from a worker); True when it ended."""

    def interrupt(self, exit_code: int) -> None:
        """A signal ends the run: record it as interrupted with `exit_code` (non-blocking)."""

    def toggle_pause(self) -> str | None:
        """Pause or resume; returns the new state, or None when neither applies.

        A source that can say why (a viewer whose run's channel did not answer) sets `pause_refused`.
        """

    def request_profile(self, level: str = "default") -> str | None:
        """Ask for a profile pass at `level` (default or full); returns why not, or None."""

    def request_capture(self) -> str | None:
        """Ask for a RenderDoc capture of the next call; returns why not, or None."""

    def request_counters(self) -> str | None:
        """Ask for a counters pass (Nsight Compute, beside the run); returns why not, or None."""

    def abandon(self, exit_code: int) -> None:
        """A second signal: write the run's record as interrupted now; the process leaves right after."""

    def refusal(self, action: str = "") -> str | None:
        """Why `action` (reload, device, export) cannot happen here, or None."""

    def restart(self, **changes: Any) -> None:
        """Stop, then start again with `changes` to the config, as generation + 1 (blocking)."""

    def runnable_devices(self) -> list[DeviceInfo]:
        """Devices a run can move to (blocking: drivers are asked)."""

    def export_report(self) -> Path:
        """Write the report as it stands into the session directory; returns its path (blocking)."""

    def current_report(self) -> dict[str, Any]:
        """The report as it stands, for a browser to download (blocking)."""

    def read_capture(self, path: str) -> CaptureInfo:
        """A capture's dispatch list, replayed for GPU times where it can be (blocking: call from a worker)."""

    @property
    def session_dir(self) -> Path | None:
        """Where the run's record is (screenshots go there too)."""


class EngineBridge:
    """Runs sessions for the app: one at a time, restartable with a new config."""

    live = True
    origin = None  # the run is this process's own

    def __init__(self, config: RunConfig) -> None:
        self._config = config
        self.generation = 0
        self._segment = 0
        self._target: _Poster | None = None
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

    def attach(self, target: _Poster) -> None:
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


class ReplaySource:
    """Recorded snapshots played into the app: deterministic screens for tests and `open`."""

    live = False
    origin = None
    generation = 0

    def __init__(self, snapshots: list[RunSnapshot]) -> None:
        self._snapshots = snapshots
        self._target: _Poster | None = None

    @classmethod
    def from_file(cls, path: Path) -> ReplaySource:
        return cls(read_snapshots(path))

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

    def interrupt(self, exit_code: int) -> None:
        return None

    def abandon(self, exit_code: int) -> None:
        return None

    def toggle_pause(self) -> str | None:
        return None

    def request_profile(self, level: str = "default") -> str | None:
        return RECORDED

    def request_capture(self) -> str | None:
        return RECORDED

    def request_counters(self) -> str | None:
        return RECORDED

    def refusal(self, action: str = "") -> str | None:
        return RECORDED

    def restart(self, **changes: Any) -> None:
        raise RuntimeError(RECORDED)

    def runnable_devices(self) -> list[DeviceInfo]:
        return []

    def export_report(self) -> Path:
        raise RuntimeError(RECORDED)

    def read_capture(self, path: str) -> CaptureInfo:
        # RenderDoc never enters this process: the reader runs as a child of it directly.
        return capture_info(Path(path), replay=True)

    def current_report(self) -> dict[str, Any]:
        raise RuntimeError(RECORDED)
