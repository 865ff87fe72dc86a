"""A run another process drives, followed from outside: `gputop attach`, and `gputop web`'s pages.

The observer lives outside the observed (Tracy, py-spy): a TUI that rendered
in the engine's interpreter stretched the calls it measured, so every face is
now a viewer. `AttachSource` subscribes to the run's snapshot stream on
`control.sock` (pushed at the engine's publish rate, serialised off its call
thread) and posts each snapshot as a coalescing `SnapshotArrived`; keys
become control requests. If the stream cannot be had (a run from an older
gputop, a socket it could not open) it falls back to reading the newest
sample from the session folder.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil

from gputop.core.errors import UsageError
from gputop.core.records.captures import CaptureInfo
from gputop.core.records.devices import DeviceInfo
from gputop.core.renderdoc.capture_files import capture_info
from gputop.core.serving.control_socket import ControlUnavailable, StreamReader, ask
from gputop.core.snapshot import RunSnapshot
from gputop.core.store.follow import SessionFollower, describe_command
from gputop.core.store.replay import snapshot_from_json
from gputop.tui.sources.messages import SnapshotArrived, SourceNote
from gputop.tui.sources.protocol import Poster

__all__ = ["SNAPSHOT_ENDINGS", "AttachSource"]

SNAPSHOT_ENDINGS = ("finished", "stopped", "error")  # the states a run's last snapshot ends in


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
        self._target: Poster | None = None
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

    def attach(self, target: Poster) -> None:
        self._target = target

    def start(self) -> None:
        if self._target is None:
            raise RuntimeError("attach the source to an app first")
        self._thread = threading.Thread(target=self._follow, args=(self._target,), name="gputop-viewer", daemon=True)
        self._thread.start()

    def _post(self, target: Poster, snapshot: RunSnapshot) -> None:
        shown = self._shown
        if shown is not None and (snapshot.segment, snapshot.seq) < (shown.segment, shown.seq):
            return  # the record lags the stream (a full disk stops it): an older sample never covers a newer one
        self._shown = snapshot
        self.generation = max(self.generation, snapshot.segment)
        target.post_message(SnapshotArrived(snapshot, snapshot.segment))

    def _note(self, target: Poster, level: str, text: str) -> None:
        target.post_message(SourceNote(level, text))

    def _follow(self, target: Poster) -> None:
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

    def _stream(self, target: Poster) -> None:
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

    def _check_ended(self, target: Poster) -> bool:
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

    def request_pm_sampling(self, on: bool) -> str | None:
        return self._reason("pm_sampling", on=on)

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
