"""Viewers of a run in another process: the TUI's own engine, `gputop attach`, and `gputop web`'s pages.

The observer lives outside the observed (Tracy, py-spy): a TUI that rendered
in the engine's interpreter stretched the calls it measured, so every face is
now a viewer. `AttachSource` follows a run another process drives: it
subscribes to the run's snapshot stream on `control.sock` (pushed at the
engine's publish rate, serialised off its call thread) and posts each
snapshot as a coalescing `SnapshotArrived`; keys become control requests. If
the stream cannot be had (a run from an older gputop, a socket it could not
open) it falls back to reading the newest sample from the session folder.
`EngineProcess` is the TUI's own engine: it starts `gputop serve` as a child
in its own session (so terminal signals and Ctrl-Z reach only the viewer),
names itself the run's owner (so stop, reload and device switches are open to
it), and stops the engine when the viewer ends; the engine in turn stops when
its parent is gone, however it went.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import psutil
from textual.message import Message

from gputop.core.errors import (
    EXIT_SIGHUP,
    EXIT_SIGINT,
    EngineExited,
    GputopError,
    UnwritableFolder,
    UsageError,
)
from gputop.core.paths import check_writable
from gputop.core.processes import last_line
from gputop.core.renderdoc.captures import capture_info
from gputop.core.serving.control_socket import ControlUnavailable, StreamReader, ask
from gputop.core.snapshot import CaptureInfo, DeviceInfo, RunSnapshot
from gputop.core.store.completeness import RecordCheck, check_record
from gputop.core.store.follow import SessionFollower, describe_command
from gputop.core.store.reader import read_manifest
from gputop.core.store.replay import snapshot_from_json, value_from_json
from gputop.core.store.reserve import release_abandoned_reserve
from gputop.tui.messages import SnapshotArrived, SourceNote

__all__ = ["ENGINE_LOG", "AttachSource", "EngineProcess"]

SNAPSHOT_ENDINGS = ("finished", "stopped", "error")  # the states a run's last snapshot ends in
ENGINE_LOG = "engine.log"  # the engine's own stderr, in its session folder: never the viewer's terminal
PARENT_ENV = "GPUTOP_PARENT_PID"  # the engine lives only as long as this pid (see tui/ending.py)


class _Poster(Protocol):
    def post_message(self, message: Message) -> bool: ...


class AttachSource:
    """A run another gputop process drives, followed through its snapshot stream (read-only but for its keys)."""

    live = True
    RETRY_S = 0.1  # how soon a lost stream is asked for again (a reload replaces the run's socket)
    POLL_S = 0.25  # the folder is read this often while no stream can be had
    ENDED_EVERY_S = 1.0  # how often the manifest and the run's process are looked at while no stream flows

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self.pause_refused: str | None = None  # why the last toggle_pause did nothing, in the run's words
        self._follower = SessionFollower(folder)
        self.origin: str | None = self._follower.origin
        manifest = self._follower.manifest
        self._owner = f"pid {manifest.get('pid', '?')} ({describe_command(manifest, brief=True)})"
        self._target: _Poster | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._reader: StreamReader | None = None
        self.ended: str | None = None  # the run's final state once it has ended
        self.generation = 0  # the newest run segment seen: snapshots of older ones are not drawn
        self.streamed = False  # whether snapshots came by the stream (else by reading the folder)
        self._shown: RunSnapshot | None = None  # the newest snapshot posted, by segment and seq

    @property
    def session_dir(self) -> Path | None:
        return self._folder

    def attach(self, target: _Poster) -> None:
        self._target = target

    def start(self) -> None:
        if self._target is None:
            raise RuntimeError("attach the source to an app first")
        self._thread = threading.Thread(target=self._follow, args=(self._target,), name="gputop-viewer", daemon=True)
        self._thread.start()

    def _post(self, target: _Poster, snapshot: RunSnapshot) -> None:
        shown = self._shown
        if shown is not None and (snapshot.segment, snapshot.seq) < (shown.segment, shown.seq):
            return  # the record lags the stream (a full disk stops it): an older sample never covers a newer one
        self._shown = snapshot
        self.generation = max(self.generation, snapshot.segment)
        target.post_message(SnapshotArrived(snapshot, snapshot.segment))

    def _note(self, target: _Poster, level: str, text: str) -> None:
        target.post_message(SourceNote(level, text))

    def _follow(self, target: _Poster) -> None:
        if self.origin:  # another process's run: say whose (the TUI's own engine needs no introduction)
            self._note(target, "info", f"following {self._folder}: {self.origin}")
        last_ended = float("-inf")
        while not self._stop.is_set():
            self._stream(target)
            if self._stop.is_set():
                return
            now = time.monotonic()
            if now - last_ended >= self.ENDED_EVERY_S:
                last_ended = now
                if self._check_ended(target):
                    return
            if not self.streamed:
                snapshot = self._follower.newest()  # no stream (yet): the record is the next best thing
                if snapshot is not None:
                    self._post(target, snapshot)
            self._stop.wait(self.RETRY_S if self.streamed else self.POLL_S)

    def _stream(self, target: _Poster) -> None:
        """Draw every snapshot the run pushes until its stream ends (the run ended or reloaded)."""
        try:
            reader = StreamReader.open(self._folder)
        except ControlUnavailable:
            return
        self._reader = reader
        self.streamed = True
        try:
            for line in reader.lines():
                if self._stop.is_set():
                    return
                try:
                    snapshot = snapshot_from_json(json.loads(line))
                except (ValueError, UsageError):
                    continue
                self._post(target, snapshot)
        finally:
            self._reader = None
            reader.close()

    def _check_ended(self, target: _Poster) -> bool:
        ended = self._follower.ended()
        if ended is None:
            return False
        pid = self._follower.manifest.get("pid")
        if ended != "crashed" and isinstance(pid, int) and psutil.pid_exists(pid):
            # The manifest says the segment ended, but its engine lives on: a reload or a device switch is
            # under way, and the next segment will open the stream again. The run ends with its process.
            return False
        last = self._follower.newest()  # what it wrote while ending
        if last is not None:
            self._post(target, last)
        self.ended = ended
        manifest = self._follower.manifest
        code = manifest.get("exit_code")
        error = manifest.get("error") if ended == "error" else None
        shown = self._shown
        if shown is not None and shown.state not in SNAPSHOT_ENDINGS:
            # Its last snapshot never came (a full disk, a crash): the manifest's ending, the one thing the
            # room kept for it lets a run write, says how it ended; the header must not say `running` on.
            self._post(target, replace(shown, state=ended, error=str(error) if error else shown.error))
        exit_note = f", exit code {code}" if code is not None else ""
        said = f": {error}" if error and (shown is None or shown.error != error) else ""
        self._note(target, "warning", f"the run has ended: {ended}{exit_note}{said}")
        return True

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop following (the run itself goes on: it is not this process's)."""
        self._close_stream()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        return True

    def _close_stream(self) -> None:
        self._stop.set()
        reader = self._reader
        if reader is not None:
            reader.close()

    def interrupt(self, exit_code: int) -> None:
        self._close_stream()

    def abandon(self, exit_code: int) -> None:
        return None

    def _ask(self, op: str, **fields: Any) -> dict[str, Any]:
        if self.ended is not None:
            return {"ok": False, "reason": f"the run has ended ({self.ended})"}
        try:
            return ask(self._folder, op, **fields)
        except ControlUnavailable as exc:
            return {"ok": False, "reason": str(exc)}

    def _reason(self, op: str, **fields: Any) -> str | None:
        reply = self._ask(op, **fields)
        return None if reply.get("ok") else str(reply.get("reason") or "refused")

    def toggle_pause(self) -> str | None:
        reply = self._ask("toggle_pause")
        if reply.get("ok"):
            self.pause_refused = None
            return str(reply["state"])
        # The run's own refusal ("nothing to pause while ...") or the channel's: it did not answer in time,
        # it has ended, it is another user's. The latter is never "nothing to pause": the pause may come late.
        self.pause_refused = str(reply.get("reason") or "refused")
        return None

    def request_profile(self, level: str = "default") -> str | None:
        return self._reason("profile", level=level)

    def request_capture(self) -> str | None:
        return self._reason("capture", calls=1)

    def request_counters(self) -> str | None:
        return self._reason("counters")

    def refusal(self, action: str = "") -> str | None:
        if action in ("pause", "export"):  # they go to the run over its control channel
            return None
        return f"the run belongs to {self._owner}: {action or 'do that'} it there"

    def restart(self, **changes: Any) -> None:
        raise RuntimeError(self.refusal("reload") or "")

    def runnable_devices(self) -> list[DeviceInfo]:
        return []

    def export_report(self) -> Path:
        reply = self._ask("export")
        if not reply.get("ok"):
            raise RuntimeError(reply.get("reason"))
        return Path(str(reply["path"]))

    def current_report(self) -> dict[str, Any]:
        reply = self._ask("report")
        if not reply.get("ok"):
            raise RuntimeError(reply.get("reason"))
        report = reply["report"]
        if not isinstance(report, dict):
            raise RuntimeError("the run's report is not a JSON object")
        return report

    def read_capture(self, path: str) -> CaptureInfo:
        # Captures are files in the followed folder: read and replayed here, the run is not asked.
        return capture_info(Path(path), replay=True)


class EngineProcess(AttachSource):
    """The TUI's own engine: `gputop serve` in a child process, driven as its owner.

    Args:
        engine_args: the TUI's command line (target and options) for `gputop serve`.
        folder: the session folder the engine records in.
    """

    START_TIMEOUT_S = 60.0  # until the engine's control channel answers (imports, a cold disk)
    STOP_GRACE_S = 3.0  # after the wait for its own ending: SIGTERM, then as long again before SIGKILL

    def __init__(self, engine_args: list[str], folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self._folder = folder
        self._engine_args = engine_args
        self._process: subprocess.Popen[bytes] | None = None
        self._log_path = folder / ENGINE_LOG
        self._interrupted: int | None = None  # the exit code of a signal the viewer passed on
        self._spawn()
        super().__init__(folder)
        self.origin = None  # the run is this viewer's own: `q` ends it

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def _spawn(self) -> None:
        command = [
            sys.executable,
            "-m",
            "gputop.tui",
            "serve",
            *self._engine_args,
            "--session-dir",
            str(self._folder),
            "--owner-pid",
            str(os.getpid()),
        ]
        env = {**os.environ, PARENT_ENV: str(os.getpid()), "PYTHONUNBUFFERED": "1"}
        try:
            log = open(self._log_path, "ab")  # noqa: SIM115 - closed below, once the child has it
        except OSError as exc:  # a read-only session folder: the same line as a headless run's
            raise UnwritableFolder(self._folder, exc) from exc
        with log:
            # Its own session: the terminal's Ctrl-C, Ctrl-Z and hang-up reach the viewer, which forwards them.
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, start_new_session=True
            )
        deadline = time.monotonic() + self.START_TIMEOUT_S
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                said = self._engine_said()
                if not said:  # its line could not be written: a full disk says nothing, so find out here
                    check_writable(self._folder)
                raise EngineExited(said or f"the engine exited with {code}", code)
            with contextlib.suppress(ControlUnavailable):
                reply = ask(self._folder, "hello", timeout=1.0)
                if reply.get("pid") == self._process.pid:
                    return
            time.sleep(0.05)
        self._kill()
        raise GputopError(f"the engine did not start within {self.START_TIMEOUT_S:.0f} s (see {self._log_path})")

    def _engine_log(self) -> str:
        """What the engine has written to its log so far ("" when it cannot be read)."""
        try:
            return self._log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def startup_lines(self) -> list[str]:
        """What the engine said on starting that its user should see: where its metrics are, and warnings."""
        wanted = ("gputop: serving metrics", "gputop: warning")
        lines = self._engine_log().splitlines()
        return [line.replace(" (Ctrl-C to stop)", "") for line in lines if line.startswith(wanted)]

    def _engine_said(self) -> str:
        """The engine's last line, without its `gputop: error: ` prefix (it is said again by this process)."""
        line = last_line(self._engine_log())
        for prefix in ("gputop: error: ", "gputop: "):
            if line.startswith(prefix):
                return line[len(prefix) :]
        return line

    def _check_ended(self, target: _Poster) -> bool:
        process = self._process
        if process is not None:
            process.poll()  # reap an engine that ended on its own: a zombie's pid still exists
        return super()._check_ended(target)

    def _signal(self, signum: int) -> None:
        process = self._process
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signum)

    def _kill(self) -> None:
        process = self._process
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        process.wait()

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop the engine (its run records its ending) and stop following; True once it has gone."""
        process = self._process
        if process is not None and process.poll() is None:
            # After a signal, the stop carries its code too: whichever reaches the engine first, it records it.
            code = {"exit_code": self._interrupted} if self._interrupted else {}
            self._ask("stop", **code)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGTERM)
                try:
                    process.wait(self.STOP_GRACE_S * 2)
                except subprocess.TimeoutExpired:
                    self._kill()
        super().stop(timeout=2.0)
        gone = process is None or process.poll() is not None
        if gone:  # an engine that died without its ending (killed) left the room kept for one
            with contextlib.suppress(UsageError):
                release_abandoned_reserve(self._folder, read_manifest(self._folder))
        return gone

    def record_check(self) -> RecordCheck:
        """What the session folder holds of the run's record (once the engine has stopped)."""
        return check_record(self._folder)

    def interrupt(self, exit_code: int) -> None:
        """A signal reached the viewer: the engine gets the same one, and records `interrupted` with its code."""
        self._interrupted = exit_code
        signum = {EXIT_SIGINT: signal.SIGINT, EXIT_SIGHUP: signal.SIGHUP}.get(exit_code, signal.SIGTERM)
        self._signal(signum)

    def abandon(self, exit_code: int) -> None:
        """A second signal: the engine gets it too, writes its record at once and leaves."""
        self.interrupt(exit_code)
        process = self._process
        if process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(2.0)

    def refusal(self, action: str = "") -> str | None:
        return None

    def restart(self, **changes: Any) -> None:
        reply = self._ask("restart", **changes)
        if not reply.get("ok"):
            raise RuntimeError(reply.get("reason") or "the engine refused to reload")

    def runnable_devices(self) -> list[DeviceInfo]:
        reply = self._ask("devices", timeout=60.0)
        if not reply.get("ok"):
            raise RuntimeError(reply.get("reason") or "the engine could not list devices")
        return [value_from_json(DeviceInfo, row) for row in reply.get("devices", [])]

    def _ask(self, op: str, **fields: Any) -> dict[str, Any]:
        if self.ended is not None and op != "stop":
            return {"ok": False, "reason": f"the run has ended ({self.ended})"}
        try:
            return ask(self._folder, op, **fields)
        except ControlUnavailable as exc:
            return {"ok": False, "reason": str(exc)}
