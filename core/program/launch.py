"""Start a user's command with gputop's watcher in its Python processes, and end it the way a user expects.

Why a `sitecustomize` on PYTHONPATH and not a launcher script: the command is
the user's own (`python app.py`, `python -m pkg`, `pytest -k x`, a shell
script that starts Python), in their own environment and Python version, and
may start Python children of its own. A folder put first on PYTHONPATH reaches
every one of those interpreters unchanged, whatever starts them, without
rewriting the command; the `sitecustomize` in it only installs an import hook
(the watcher proper loads when the program imports `iree.runtime`) and then
runs whatever `sitecustomize` it shadows. `python -S` and `-I` (isolated)
programs skip it: they are not watched, and the run says the command made no
IREE calls.

The program keeps its process group and, headless, its terminal: Ctrl-C
reaches it as it would without gputop, and gputop waits for it to end. Under
the TUI (whose engine runs in a session of its own) gputop ends it on `q`:
SIGINT, then SIGTERM after a grace, then SIGKILL. Its exit code, or 128 + the
signal that killed it, is what gputop exits with.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from gputop.core.errors import EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, EXIT_USAGE, GputopError
from gputop.core.processes import pid_alive

__all__ = [
    "INJECT_DIR",
    "SOCKET_ENV",
    "WATCH_PATH_DIR",
    "AdoptedProgram",
    "CommandNotExecutable",
    "CommandNotFound",
    "LaunchedProgram",
    "ProgramNotStarted",
    "exit_code_of",
    "find_command",
    "program_env",
]

INJECT_DIR = Path(__file__).resolve().parent / "inject"  # sitecustomize.py and gputop_agent/: stdlib only
WATCH_PATH_DIR = Path(__file__).resolve().parent / "watch_path"  # gputop/: gputop.watch() without gputop installed
SOCKET_ENV = "GPUTOP_WATCH_SOCKET"  # where the watcher in each process of the program reports
STOP_GRACE_S = 5.0  # after SIGINT, before SIGTERM; and again before SIGKILL


class ProgramNotStarted(GputopError):
    """The command could not be started at all: a usage error (no command), or a shell's 127 or 126."""

    exit_code = EXIT_USAGE


class CommandNotFound(ProgramNotStarted):
    """No such command: 127, as a shell says it."""

    exit_code = EXIT_NOT_FOUND


class CommandNotExecutable(ProgramNotStarted):
    """The command is there but cannot be run (not executable, a folder): 126, as a shell says it."""

    exit_code = EXIT_NOT_EXECUTABLE


def find_command(command: list[str]) -> str:
    """The executable `command` runs, checked before any session work (a typo leaves no session behind).

    Raises:
        ProgramNotStarted: no command at all (exit 2).
        CommandNotFound: not on PATH, or no such file (127).
        CommandNotExecutable: there, but not an executable file (126).
    """
    if not command:
        raise ProgramNotStarted("no command after --: say what to run, e.g. gputop -- python app.py")
    name = command[0]
    if os.sep not in name:
        found = shutil.which(name)
        if found is None:
            raise CommandNotFound(f"{name}: command not found")
        return found
    if not os.path.exists(name):
        raise CommandNotFound(f"{name}: No such file or directory")
    if os.path.isdir(name) or not os.access(name, os.X_OK):
        why = "Is a directory" if os.path.isdir(name) else "Permission denied"
        raise CommandNotExecutable(f"{name}: {why}")
    return name


def program_env(socket_path: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """The program's environment: its own, with the watcher's folder first on PYTHONPATH and where to report."""
    env = dict(os.environ if base is None else base)
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(INJECT_DIR) + (os.pathsep + existing if existing else "")
    env[SOCKET_ENV] = str(socket_path)
    return env


def exit_code_of(returncode: int) -> int:
    """A shell's exit code for a child's return code: 128 + N for a child killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


class LaunchedProgram:
    """The user's command, started with the watcher; its output passes through or goes to `on_line`."""

    def __init__(
        self,
        command: list[str],
        socket_path: Path,
        *,
        on_line: Callable[[str, bytes], None] | None = None,
        own_terminal: bool = True,
    ) -> None:
        """`on_line(stream, raw)` gets each line of its stdout/stderr as the pipe gave it; without it the program
        writes to gputop's own stdout and stderr, unchanged. `own_terminal` False: a session of its own."""
        find_command(command)
        self.command = list(command)
        self._socket_path = socket_path
        self._on_line = on_line
        self._own_terminal = own_terminal
        self._process: subprocess.Popen[bytes] | None = None
        self._readers: list[threading.Thread] = []
        self.stopping_by: str | None = None  # why gputop ended it ("q", a signal), when it did

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self) -> None:
        """Start it; a command that is not there is one line and exit 2, before any session work.

        Raises:
            ProgramNotStarted: the command is not found or cannot be executed.
        """
        find_command(self.command)
        piped = self._on_line is not None
        try:
            self._process = subprocess.Popen(
                self.command,
                env=program_env(self._socket_path),
                stdin=None if self._own_terminal else subprocess.DEVNULL,
                stdout=subprocess.PIPE if piped else None,
                stderr=subprocess.PIPE if piped else None,
                start_new_session=not self._own_terminal,
            )
        except PermissionError as exc:
            raise CommandNotExecutable(f"{self.command[0]}: {exc.strerror or exc}") from exc
        except FileNotFoundError as exc:
            raise CommandNotFound(f"{self.command[0]}: {exc.strerror or exc}") from exc
        except OSError as exc:
            raise CommandNotExecutable(f"{self.command[0]}: {exc.strerror or exc}") from exc
        if piped:
            process = self._process
            for name, stream in (("stdout", process.stdout), ("stderr", process.stderr)):
                if stream is not None:
                    reader = threading.Thread(
                        target=self._read, args=(name, stream), name=f"gputop-program-{name}", daemon=True
                    )
                    reader.start()
                    self._readers.append(reader)

    def _read(self, name: str, stream: object) -> None:
        """Each line to `on_line` as it comes: the pipe is drained as fast as the program writes."""
        on_line = self._on_line
        for raw in iter(stream.readline, b""):  # type: ignore[attr-defined]
            if on_line is not None:
                with contextlib.suppress(Exception):  # a viewer's trouble must not stop the pipe's drain
                    on_line(name, raw)

    def wait(self, timeout: float | None = None) -> int | None:
        if self._process is None:
            return None
        try:
            code = self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        for reader in self._readers:  # its last lines, before the record closes
            reader.join(timeout=2.0)
        return code

    def interrupt(self, why: str) -> None:
        """End it as a user would: SIGINT, then SIGTERM after a grace, then SIGKILL; on a thread of its own."""
        if self._process is None or self._process.poll() is not None or self.stopping_by is not None:
            return
        self.stopping_by = why
        threading.Thread(target=self._escalate, name="gputop-program-stop", daemon=True).start()

    def _escalate(self) -> None:
        process = self._process
        if process is None:
            return
        first = signal.SIGTERM if self.stopping_by == f"signal {int(signal.SIGTERM)}" else signal.SIGINT
        for signum in (first, signal.SIGTERM, signal.SIGKILL):
            self._send(signum)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(STOP_GRACE_S)
                return

    def _send(self, signum: int) -> None:
        """To the program's own session (its children too) where it has one, else to the program alone."""
        process = self._process
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if not self._own_terminal:
                os.killpg(process.pid, signum)
            else:
                process.send_signal(signum)

    def kill_now(self) -> None:
        """gputop itself is leaving at once (a second signal): the program must not outlive it unwatched."""
        self._send(signal.SIGKILL)


class AdoptedProgram:
    """A program gputop did not start (`gputop.watch()` inside it): watched until its process is gone.

    gputop is not its parent, so its exit code cannot be read: it ends as `exited` with code 0 unless its
    watcher said it raised. gputop never signals it: the program started the watch, and ends it by ending.
    """

    POLL_S = 0.25

    def __init__(self, pid: int, command: list[str]) -> None:
        self.command = list(command)
        self._pid = pid
        self.stopping_by: str | None = None

    @property
    def pid(self) -> int | None:
        return self._pid

    def start(self) -> None:
        """Nothing to start: the program is running (it called gputop.watch())."""

    def poll(self) -> int | None:
        """0 once the process is gone (its real code is not gputop's to read), else None."""
        return None if pid_alive(self._pid) else 0

    def wait(self, timeout: float | None = None) -> int | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            code = self.poll()
            if code is not None:
                return code
            if deadline is not None and time.monotonic() >= deadline:
                return None
            time.sleep(self.POLL_S)

    def interrupt(self, why: str) -> None:
        """Not gputop's to end: the program started this watch itself."""

    def kill_now(self) -> None:
        """Not gputop's to kill: see `interrupt`."""
