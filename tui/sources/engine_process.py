"""The TUI's own engine: `gputop serve` in a child process, followed like any other run but driven as its owner.

`EngineProcess` starts the engine as a child in its own session (so terminal
signals and Ctrl-Z reach only the viewer), names itself the run's owner (so
stop, reload and device switches are open to it), and stops the engine when
the viewer ends; the engine in turn stops when its parent is gone, however it
went. Everything else (the stream, the folder as a fallback, the requests)
is `AttachSource`'s.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from gputop.core.errors import EXIT_SIGHUP, EXIT_SIGINT, EngineExited, GputopError, UnwritableFolder, UsageError
from gputop.core.paths import check_writable
from gputop.core.processes import last_line
from gputop.core.records.devices import DeviceInfo
from gputop.core.serving.control_socket import ControlUnavailable, ask
from gputop.core.store.completeness import RecordCheck, check_record
from gputop.core.store.reader import read_manifest
from gputop.core.store.replay import value_from_json
from gputop.core.store.reserve import release_abandoned_reserve
from gputop.tui.sources.attach import AttachSource
from gputop.tui.sources.protocol import Poster

__all__ = ["ENGINE_LOG", "EngineProcess"]

ENGINE_LOG = "engine.log"  # the engine's own stderr, in its session folder: never the viewer's terminal
PARENT_ENV = "GPUTOP_PARENT_PID"  # the engine lives only as long as this pid (see tui/ending.py)


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
        # A watched program's command (`-- CMD`) stays last, whole: the engine's own options go before it.
        args = self._engine_args
        own, program = (args[: args.index("--")], args[args.index("--") :]) if "--" in args else (args, [])
        command = [
            sys.executable,
            "-m",
            "gputop.tui",
            "serve",
            *own,
            "--session-dir",
            str(self._folder),
            "--owner-pid",
            str(os.getpid()),
            *program,
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

    def _check_ended(self, target: Poster) -> bool:
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
        """A watched program (`gputop -- CMD`) is the program's own run: gputop neither restarts it nor moves it."""
        if "--" not in self._engine_args:
            return None
        if action == "reload":
            return "a watched program is not restarted by gputop: q ends it, then run its command again"
        if action == "device":
            return "a watched program picks its devices in its own code: the Memory pane shows the ones it made"
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
