"""Watch a user's command: start it with the watcher, give each of its IREE processes a session, end with it.

`ProgramHost` is to a user's program what `RunHost` is to a run gputop makes:
the one object `gputop run -- CMD`, `gputop serve -- CMD` and the TUI's
engine drive, with the same verbs (subscribe, start, stop, wait, the
session). The first process of the command that imports `iree.runtime` is the
session the faces show (`primary`); every later one (a worker, a child
`python`) gets a session folder of its own, listed by `gputop sessions` and
attachable, and the primary's Log says where. The primary's folder exists
from the start, so a viewer has something to attach to while the program
starts; a command that never imports IREE ends with one line saying so.
"""

from __future__ import annotations

import shlex
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gputop.core.errors import EXIT_SIGINT
from gputop.core.processes import signal_name
from gputop.core.program.agent_link import AgentConnection, AgentListener
from gputop.core.program.launch import AdoptedProgram, LaunchedProgram, exit_code_of, find_command
from gputop.core.program.output import ProgramOutput
from gputop.core.program.watched import WatchedProcess
from gputop.core.run.state import Subscriber
from gputop.core.snapshot import RunSnapshot

__all__ = ["ProgramHost", "program_label"]

USES_IREE = ("phase", "calls")  # what makes a process one that uses IREE (an import alone does not)
STRAGGLERS_S = 3.0  # after the command ends: how long its other processes' streams may take to say goodbye


class ProgramHost:
    """Runs a user's command under the watcher; `primary` is the session of its first IREE process."""

    def __init__(
        self,
        command: list[str],
        *,
        session_dir: Path | None = None,
        record_every_s: float = 0.0,
        sample_interval_s: float = 0.1,
        owner_pid: int | None = None,
        piped: bool = False,
        adopt_pid: int | None = None,
        listen_path: Path | None = None,
    ) -> None:
        """`piped`: the program's output goes to the session's `program.log` and the Log pane (the TUI), else it
        passes through to gputop's own stdout and stderr, unchanged (`gputop run`, `gputop serve`).
        `adopt_pid` and `listen_path`: a program already running that called `gputop.watch()`, whose watcher
        connects to `listen_path`; gputop starts nothing then."""
        if adopt_pid is None:
            find_command(command)  # before the session's folder: a typo leaves nothing behind
        self.command = list(command)
        self.owner_pid = owner_pid
        self._session_args: dict[str, Any] = {
            "record_every_s": record_every_s,
            "sample_interval_s": sample_interval_s,
            "owner_pid": owner_pid,
            "label": program_label(command),
        }
        self.primary = WatchedProcess(command, session_dir=session_dir, **self._session_args)
        self.others: list[WatchedProcess] = []
        self._lock = threading.Lock()
        self._attached_primary = False
        self._listener = AgentListener(self._on_connection, listen_path)
        self.output = (
            ProgramOutput(self.primary.session_dir / "program.log", self.primary.state.log.add_many) if piped else None
        )
        on_line = self.output.line if self.output is not None else None
        self.program: LaunchedProgram | AdoptedProgram = (
            AdoptedProgram(adopt_pid, command)
            if adopt_pid is not None
            else LaunchedProgram(command, self._listener.path, on_line=on_line, own_terminal=not piped)
        )
        self._done = threading.Event()
        self._stop_code: int | None = None
        self.generation = 0  # RunHost's: a program is never restarted

    # -- what the faces drive ---------------------------------------------------------------
    @property
    def session(self) -> WatchedProcess:
        return self.primary

    @property
    def snapshot(self) -> RunSnapshot:
        return self.primary.snapshot

    def subscribe(self, callback: Subscriber) -> None:
        self.primary.state.subscribe(callback)

    def start(self) -> WatchedProcess:
        """Open the primary's channel, the watchers' socket, then start the command.

        Raises:
            ProgramNotStarted: the command is not there (nothing is left running; the folder says so).
        """
        self.primary.parts.open_control(self.primary, self._owner_ops() if self.owner_pid is not None else None)
        self._listener.start()
        try:
            self.program.start()
        except Exception:
            self._listener.close()
            self.primary.parts.close_control()
            raise
        if self.output is not None:
            self.output.start()
        state = self.primary.state
        state.lifecycle.enter("loading")
        started = "watching" if isinstance(self.program, AdoptedProgram) else "started"
        state.log.add("info", f"program: {started} pid {self.program.pid}: {shlex.join(self.command)}")
        threading.Thread(target=self._wait_for_program, name="gputop-program-wait", daemon=True).start()
        return self.primary

    def stop(self, exit_code: int | None = None) -> None:
        """End the program as a user would: SIGINT, then SIGTERM after a grace, then SIGKILL.

        `exit_code` 130 (gputop got SIGINT) where the program shares gputop's terminal: the terminal's Ctrl-C
        reached the program as well, so gputop only waits for it. Any other signal gputop got (SIGTERM,
        SIGHUP: sent to gputop's pid, not to a process group) is passed on to the program.
        """
        if exit_code is not None:
            self._stop_code = exit_code
            if exit_code == EXIT_SIGINT and self._program_has_terminal():
                return
            self.program.interrupt(f"signal {exit_code - 128}")
            return
        self.program.interrupt("q")

    def _program_has_terminal(self) -> bool:
        return self.owner_pid is None  # headless: the program shares gputop's terminal and got the signal itself

    def request_profile(self, level: str = "default") -> str | None:
        return self.primary.request_profile(level)

    def request_counters(self) -> str | None:
        return self.primary.request_counters()

    def request_pm_sampling(self, on: bool) -> str | None:
        return self.primary.request_pm_sampling(on)

    def record_interrupted_now(self, exit_code: int) -> None:
        """A second signal: every session's ending now, and the program must not outlive gputop unwatched."""
        self.program.kill_now()
        for session in [self.primary, *self.others]:
            if not session.done:
                session.record_interrupted_now(exit_code)
        self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    @property
    def stop_code(self) -> int | None:
        """The signal's exit code when gputop was told to stop (and passed it on), else None."""
        return self._stop_code

    # -- the program's processes -----------------------------------------------------------------
    def _on_connection(self, agent: AgentConnection) -> None:
        """A process imported iree.runtime: read it, and give it a session once it uses IREE (a device, a
        module, a context, a call). A parent that only imports it before starting workers gets none."""
        earlier: list[dict[str, Any]] = []

        def first_events(event: dict[str, Any]) -> None:
            earlier.append(event)
            if event.get("kind") in USES_IREE:
                self._bind(agent, earlier)

        agent.on_event = first_events
        agent.start()

    def _bind(self, agent: AgentConnection, earlier: list[dict[str, Any]]) -> None:
        with self._lock:
            first = not self._attached_primary
            self._attached_primary = True
        if first:
            self.primary.attach(agent, earlier)
            return
        other = WatchedProcess(self.command, **self._session_args)
        other.parts.open_control(other)
        with self._lock:
            self.others.append(other)
            self.primary.others = len(self.others)
        other.attach(agent, earlier)
        self.primary.state.log.add(
            "info",
            f"program: pid {agent.pid} also uses IREE: its own session {other.session_dir} "
            f"(gputop attach {other.session_dir})",
        )

    def _wait_for_program(self) -> None:
        returncode = None
        while returncode is None:
            returncode = self.program.wait(0.5)
        exit_code = exit_code_of(returncode)
        signal = signal_name(returncode)
        self._listener.close()
        if self.output is not None:  # its pipes are drained (wait joined the readers): the last lines, the log
            self.output.close()
            said = self.output.summary()
            if said is not None:
                self.primary.state.log.add("info", said)
        deadline = time.monotonic() + STRAGGLERS_S
        with self._lock:
            attached = self._attached_primary
            others = list(self.others)
        if not attached:
            self.primary.state.log.add("warning", f"{shlex.join(self.command)} made no IREE calls")
        for session in [self.primary, *others]:
            if session.done:
                continue
            agent_pid = session.pid
            own_signal = signal if agent_pid in (None, self.program.pid) else None
            session.wait_for_stream(max(deadline - time.monotonic(), 0.1))
            session.ended(returncode, exit_code=exit_code, signal=own_signal, stopped_by=self.program.stopping_by)
        self._done.set()

    # -- what only the owner (the TUI that started this engine) may ask -----------------------------
    def _owner_ops(self) -> dict[str, Callable[[dict[str, Any]], dict[str, Any]]]:
        return {"stop": self._op_stop, "restart": self._op_refused, "devices": self._op_no_devices}

    def _op_stop(self, _request: dict[str, Any]) -> dict[str, Any]:
        self.program.interrupt("q")
        return {"ok": True, "note": "the program was asked to stop: SIGINT, then SIGTERM after a grace"}

    def _op_refused(self, _request: dict[str, Any]) -> dict[str, Any]:
        return {"ok": False, "reason": "a watched program is not restarted by gputop: run its command again"}

    def _op_no_devices(self, _request: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "devices": []}


def program_label(command: list[str]) -> str:
    """A short name for the session folder: the script or module the command runs (`app` for python app.py)."""
    words = [w for w in command if not w.startswith("-")]
    for word in words[1:] if words and "python" in Path(words[0]).name else words:
        stem = Path(word).stem
        if stem:
            return stem.replace(".", "-")[:40]
    return "program"
