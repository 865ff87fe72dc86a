"""The session directory, written as the run goes, so nothing is lost.

Every run leaves a folder that outlives it: `manifest.json` (versions,
command line, flags, devices, the compiled module's cache key, the state),
`samples.jsonl` (every published snapshot, one a line, appended and flushed
as taken, by a writer thread so the call loop never waits on the disk) and
`report.json` at the end, and `calls.json`: the kept call and dispatch samples
that `gputop compare` tests (rewritten every `SAMPLES_EVERY_S` while calls
run, and at the end; see core/compare/samples.py). A reload in the TUI continues the folder as a new
run segment: the manifest keeps its start and lists each segment, samples
carry their segment number, and `report.json` is the newest segment's.
This is the only code that writes those files (and the TUI's mid-run
report exports beside them). The manifest is replaced atomically, lines are
whole or absent, and a crash, `kill -9` or Ctrl-C leaves every complete line
readable and the artefacts written so far in place: `gputop report` rebuilds
what it can from them.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import queue
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gputop.core.compare.samples import CALLS_FILE
from gputop.core.paths import state_dir
from gputop.core.records.base import to_json
from gputop.core.snapshot import RunSnapshot
from gputop.core.store.reserve import keep_reserve, release_reserve
from gputop.core.versions import versions

__all__ = [
    "FINAL_STATES",
    "FORMAT",
    "INDEX",
    "MANIFEST",
    "PROGRAM_TRACE",
    "REPORT",
    "SAMPLES",
    "WATCHED_EVERY_S",
    "SessionWriter",
    "write_json_atomic",
]

MANIFEST = "manifest.json"
SAMPLES = "samples.jsonl"
REPORT = "report.json"
PROGRAM_TRACE = "program_trace.json"  # a watched program's newest calls, reads, stacks and kernels (its trace)
INDEX = "sessions.jsonl"  # every session ever started, wherever its folder is (--session-dir)
FORMAT = 1
FINAL_STATES = ("finished", "stopped", "error", "interrupted")
SAMPLES_EVERY_S = 10.0  # calls.json is rewritten this often while snapshots come
WATCHED_EVERY_S = 0.5  # while someone follows the folder live (gputop attach), a thinned record keeps this rate


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON so a reader sees the old file or the new one, never half of one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError:  # a full disk: no empty temporary file left behind
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


class SessionWriter:
    """Writes one session directory: manifest, samples as they come, report at the end."""

    def __init__(
        self,
        folder: Path,
        config: dict[str, Any],
        argv: list[str] | None = None,
        *,
        every_s: float = 0.0,
        segment: int = 0,
    ) -> None:
        self.folder = folder
        # A long-lived run (gputop serve) keeps one sample per `every_s` seconds, plus every one that
        # changes the state, the events, the profile or the captures: days of serving stay small.
        self.every_s = every_s
        self.thinned = 0
        self._kept: tuple[float, str, int, object, int] = (0.0, "", -1, None, -1)
        self._watched_until = 0.0
        self._lock = threading.Lock()
        self._ending = threading.Lock()  # one ending is written: the run's own, or a second signal's
        self._ended = False
        self._queue: queue.SimpleQueue[tuple[RunSnapshot, bool] | None] = queue.SimpleQueue()
        # Who else takes each snapshot's JSON line (the control socket's live stream): serialised once, here.
        self._line_listener: Callable[[bytes], None] | None = None
        self._line_wanted: Callable[[], bool] = lambda: False
        self._samples_source: Callable[[], dict[str, Any]] | None = None
        self._record_stopped: Callable[[str], None] | None = None
        self._samples_written_at = time.monotonic()
        self.written = 0
        self.last_seq = 0
        self.write_error: str | None = None  # why samples.jsonl stopped (a full disk), said once when it happens
        self.ending_error: str | None = None  # why report.json or the manifest's ending could not be written
        started = time.time()
        self._manifest: dict[str, Any] = {
            "format": FORMAT,
            "id": folder.name,
            "path": str(folder.resolve()),
            "versions": versions(),
            "command_line": list(argv if argv is not None else sys.argv),
            "cwd": os.getcwd(),
            "host": socket.gethostname(),
            "platform": platform.platform(),
            "pid": os.getpid(),
            "target": config.get("target"),
            "config": config,
            "state": "starting",
            "started_at": started,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
            "ended_at": None,
            "duration_s": None,
            "exit_code": None,
            "device": None,
            "devices": [],
            "compile": None,
            "samples": 0,
            "samples_lost": 0,
            "segments": [{"segment": segment, "started_at": started, "config": config}],
        }
        earlier = _earlier_manifest(folder) if segment else None
        if earlier is not None:
            # The same session goes on: its start and its earlier segments stay; this segment is added.
            for key in ("id", "started_at", "started"):
                self._manifest[key] = earlier.get(key, self._manifest[key])
            self._manifest["segments"] = [*earlier.get("segments", []), *self._manifest["segments"]]
        write_json_atomic(folder / MANIFEST, self._manifest)
        if earlier is None:
            _append_index(folder, self._manifest)
        self._samples = open(folder / SAMPLES, "a", encoding="utf-8")  # noqa: SIM115 (owned by the writer thread)
        # Room kept for the ending: when the disk fills mid-run, this is freed so report.json and the
        # manifest's ending can still be written (see core/store/reserve.py for a run that died without one).
        keep_reserve(folder)
        self._thread = threading.Thread(target=self._write_samples, name="gputop-record", daemon=True)
        self._thread.start()

    @property
    def manifest(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._manifest)

    def update(self, **fields: Any) -> None:
        """Record what became known (device, compile, state) in the manifest, atomically."""
        with self._lock:
            self._manifest.update({k: to_json(v) for k, v in fields.items()})
            data = dict(self._manifest)
        with contextlib.suppress(OSError):  # a full disk must not end the run
            write_json_atomic(self.folder / MANIFEST, data)

    def watch(self, seconds: float) -> None:
        """Someone follows this folder live: for `seconds`, keep a sample every WATCHED_EVERY_S at least."""
        self._watched_until = max(self._watched_until, time.time() + seconds)

    def stream_lines_to(self, listener: Callable[[bytes], None], wanted: Callable[[], bool]) -> None:
        """Hand every snapshot's JSON line to `listener` (on the writer's thread) while `wanted()` says so.

        Thinned snapshots are still serialised and handed on while someone
        listens: viewers get every snapshot, the record keeps its thinning.
        """
        self._line_listener, self._line_wanted = listener, wanted

    def tell_record_stopped(self, listener: Callable[[str], None]) -> None:
        """Who is told, once and on the writer's thread, that samples.jsonl stopped (besides stderr)."""
        self._record_stopped = listener

    def keep_samples_from(self, source: Callable[[], dict[str, Any]]) -> None:
        """Where `calls.json` comes from: called on the writer's thread every SAMPLES_EVERY_S, and at the end."""
        self._samples_source = source

    def write_samples(self, block: dict[str, Any]) -> None:
        """`calls.json`, replaced whole (compact: twenty thousand numbers need no indentation)."""
        self._write_compact(CALLS_FILE, block)

    def write_program_trace(self, block: dict[str, Any]) -> None:
        """`program_trace.json` (a watched program's timeline, bounded by its keeper), replaced whole."""
        self._write_compact(PROGRAM_TRACE, block)

    def _write_compact(self, name: str, block: dict[str, Any]) -> None:
        """NAME replaced whole with `block` as compact JSON; a full disk loses the file, never the run."""
        path = self.folder / name
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(block, separators=(",", ":")) + "\n", encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()

    def _samples_due(self) -> None:
        source = self._samples_source
        if source is None or time.monotonic() - self._samples_written_at < SAMPLES_EVERY_S:
            return
        self._samples_written_at = time.monotonic()
        with contextlib.suppress(Exception):  # the record of samples must never stop the record of snapshots
            block = source()
            if block.get("calls") is not None:
                self.write_samples(block)

    def on_snapshot(self, snapshot: RunSnapshot) -> None:
        """Queue the snapshot (the session calls this in publishing order); the writer thread writes it."""
        keep = self._keep(snapshot)
        if not keep:
            self.thinned += 1
            if not self._line_wanted():
                return
        self._queue.put((snapshot, keep))

    def _keep(self, snapshot: RunSnapshot) -> bool:
        """Whether samples.jsonl keeps this snapshot (always, unless the record is thinned)."""
        if self.every_s:
            every = self.every_s
            if snapshot.timestamp < self._watched_until:
                every = min(every, WATCHED_EVERY_S)
            news = (snapshot.state, _newest_news(snapshot), snapshot.profile, len(snapshot.captures))
            kept_at, *kept_news = self._kept
            if snapshot.timestamp - kept_at < every and tuple(kept_news) == news:
                return False
            self._kept = (snapshot.timestamp, *news)
        return True

    def _write_samples(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            snapshot, keep = item
            listener = self._line_listener
            if listener is None and (not keep or self.write_error is not None):
                continue
            line = json.dumps(to_json(snapshot), default=str) + "\n"
            if listener is not None:
                with contextlib.suppress(Exception):  # a broken stream must not stop the record
                    listener(line.encode())
            if not keep or self.write_error is not None:
                continue
            try:
                self._samples.write(line)
                self._samples.flush()
            except OSError as exc:
                self.write_error = f"{self.folder / SAMPLES}: {exc.strerror}"
                said = (
                    f"the record stopped: {self.write_error} (the run goes on; its report says how many "
                    "samples were lost)"
                )
                with contextlib.suppress(Exception):  # said when it happens, not only at the end
                    print(f"gputop: warning: {said}", file=sys.stderr, flush=True)
                told = self._record_stopped
                if told is not None:
                    with contextlib.suppress(Exception):  # a listener's failure must not stop the record thread
                        told(said)
                continue
            self.written += 1
            self.last_seq = snapshot.seq
            self._samples_due()

    def _record_block(self, published: int) -> dict[str, Any]:
        """How complete samples.jsonl is: what a report says of its own record."""
        return {
            "samples": self.written,
            "samples_published": published,
            "samples_thinned": self.thinned,
            "samples_lost": max(0, published - self.thinned - self.written),
            "write_error": self.write_error,
        }

    def write_export(self, report: dict[str, Any], *, published: int) -> Path:
        """A report taken mid-run (the TUI's `e`), beside the record: `report-HHMMSS.json`, never `report.json`.

        `report.json` means the run ended and this is its last word; an export
        followed by a crash must leave `gputop report` rebuilding from the samples,
        not showing the export as if it were the end.
        """
        stamp = time.strftime("%H%M%S")
        for attempt in range(100):
            path = self.folder / (f"report-{stamp}-{attempt}.json" if attempt else f"report-{stamp}.json")
            try:  # claimed exclusively: two exports in one second (the TUI's and a viewer's) keep both
                path.open("x").close()
            except FileExistsError:
                continue
            break
        write_json_atomic(path, {**report, "record": self._record_block(published)})
        return path

    def close(
        self,
        report: dict[str, Any] | None,
        *,
        state: str,
        exit_code: int,
        published: int,
        drain_s: float = 30.0,
        **fields: Any,
    ) -> dict[str, Any] | None:
        """Drain the samples, write `report.json` and the manifest's ending (with `fields`); returns the report.

        Only the first ending counts. A second signal's ending (`drain_s` short)
        does not wait long for one in progress: the process leaves right after.
        """
        got = self._ending.acquire(timeout=max(drain_s, 1.0))
        try:
            if got and self._ended:
                return report
            # Without the lock, another ending is under way but stuck (draining, a full disk): this process
            # is about to leave, so write this one anyway; each file is replaced whole, never torn.
            self._queue.put(None)
            self._thread.join(timeout=drain_s)
            if not self._thread.is_alive():
                with contextlib.suppress(OSError):
                    self._samples.close()
            report = self._write_ending(report, state=state, exit_code=exit_code, published=published, **fields)
            self._ended = True
            return report
        finally:
            if got:
                self._ending.release()

    def _write_ending(
        self, report: dict[str, Any] | None, *, state: str, exit_code: int, published: int, **fields: Any
    ) -> dict[str, Any] | None:
        release_reserve(self.folder)  # the room kept for this ending
        if report is not None:
            report = {**report, "record": self._record_block(published)}
            samples = report.get("samples")
            if isinstance(samples, dict) and samples.get("calls") is not None:
                self.write_samples(samples)
            try:
                write_json_atomic(self.folder / REPORT, report)
            except OSError as exc:
                self.ending_error = f"{self.folder / REPORT}: {exc.strerror}"
        ended = time.time()
        ending = {
            "state": state,
            "exit_code": exit_code,
            "ended_at": ended,
            "duration_s": round(ended - self._manifest["started_at"], 3),
            "samples": self.written,
            "samples_lost": max(0, published - self.thinned - self.written),
            "write_error": self.write_error,
            **fields,
        }
        with self._lock:
            self._manifest.update({k: to_json(v) for k, v in ending.items()})
            data = dict(self._manifest)
        try:
            write_json_atomic(self.folder / MANIFEST, data)
        except OSError as exc:
            self.ending_error = self.ending_error or f"{self.folder / MANIFEST}: {exc.strerror}"
        return report

    @property
    def record_error(self) -> str | None:
        """Why the record is incomplete (samples or the ending not written), or None when it is whole."""
        return self.write_error or self.ending_error


OUTPUT_PREFIXES = ("stdout: ", "stderr: ")  # a watched program's own output in the Log (core/program/program_host.py)


def _newest_news(snapshot: RunSnapshot) -> int:
    """The newest Log line a thinned record must keep a sample for: a warning or an error, not a watched
    program's own output nor an info line (a program that prints or makes a context per call would make
    every sample news, and the record grow with its calls; the samples kept still carry the newest lines)."""
    for event in reversed(snapshot.events):
        if event.level != "info" and not event.message.startswith(OUTPUT_PREFIXES):
            return event.seq
    return 0


def _earlier_manifest(folder: Path) -> dict[str, Any] | None:
    """The manifest an earlier segment left in `folder`, or None where there is none to continue."""
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _append_index(folder: Path, manifest: dict[str, Any]) -> None:
    """One line per session in the state directory: how `gputop sessions` finds --session-dir folders."""
    line = json.dumps({"id": manifest["id"], "path": manifest["path"], "started_at": manifest["started_at"]})
    with contextlib.suppress(OSError), open(state_dir() / INDEX, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")
