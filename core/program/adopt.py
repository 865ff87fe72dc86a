"""`gputop.watch()`: a program started elsewhere asks to be watched from inside, in one line.

For programs gputop cannot start (a notebook kernel, a service under a
supervisor, a test runner's worker), the program calls `gputop.watch()`
itself. That starts gputop's engine beside it, as a process of its own (its
own session, so the program's terminal signals do not reach it; it ends when
the program does), waits until the engine listens, and then loads the same
watcher `gputop -- CMD` would have put into the program, connected to it. The
session is the same as `gputop -- CMD`'s: `gputop sessions` lists it, `gputop
attach` follows it, `/metrics` serves it. Called under `gputop -- CMD` (the
watcher is already in), it does nothing. Nothing here ever raises into the
program: a failure is one line on stderr and the program runs on unwatched.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gputop.core.paths import new_session_dir
from gputop.core.program.host import program_label
from gputop.core.program.launch import INJECT_DIR, SOCKET_ENV

__all__ = ["ENGINE_START_S", "watch"]

ENGINE_START_S = 20.0  # how long the engine may take to listen (it imports the engine: ~1 s on the 2-core CI)


def _program_command() -> list[str]:
    """This program's command line as the OS has it (for the session's name), else sys.argv."""
    with contextlib.suppress(OSError):
        raw = Path(f"/proc/{os.getpid()}/cmdline").read_bytes()
        words = [w.decode(errors="replace") for w in raw.split(b"\0") if w]
        if words:
            return words
    return [sys.executable, *sys.argv]


def watch(*, session_dir: str | os.PathLike[str] | None = None, metrics_port: int = 0) -> Path | None:
    """Watch this program's iree.runtime calls from here on; returns its session folder (None if not watched).

    Args:
        session_dir: where the session is recorded (default: a new folder in gputop's state folder).
        metrics_port: the engine's Prometheus port (0: any free one, nobody told).
    """
    if os.environ.get(SOCKET_ENV):
        return None  # gputop -- CMD started this program: its watcher is in already
    try:
        return _start(session_dir, metrics_port)
    except Exception as exc:  # the program must run on, whatever went wrong here
        with contextlib.suppress(Exception):
            print(f"gputop: not watching this program: {exc}", file=sys.stderr, flush=True)
        return None


def _start(session_dir: str | os.PathLike[str] | None, metrics_port: int) -> Path | None:
    command = _program_command()
    folder = Path(session_dir) if session_dir is not None else new_session_dir(label=program_label(command))
    listen = Path(tempfile.mkdtemp(prefix="gputop-watch-")) / "agent.sock"
    engine = [
        sys.executable,
        "-m",
        "gputop.tui",
        "serve",
        "--quiet",
        "--metrics-port",
        str(metrics_port),
        "--session-dir",
        str(folder),
        "--adopt",
        str(os.getpid()),
        "--agent-socket",
        str(listen),
        "--",
        *command,
    ]
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "engine.log", "ab") as log:
        process = subprocess.Popen(
            engine, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, env=_engine_env()
        )
    deadline = time.monotonic() + ENGINE_START_S
    while not listen.exists():
        if process.poll() is not None:
            raise RuntimeError(f"gputop's engine exited with {process.returncode} (see {folder / 'engine.log'})")
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"gputop's engine did not start within {ENGINE_START_S:.0f} s")
        time.sleep(0.02)
    if str(INJECT_DIR) not in sys.path:
        sys.path.append(str(INJECT_DIR))  # last: the program's own modules keep their names
    import gputop_agent  # the watcher gputop -- CMD would have loaded (standard library only)

    gputop_agent.install(str(listen))
    print(f"gputop: watching this program: gputop attach {folder}", file=sys.stderr, flush=True)
    return folder


def _engine_env() -> dict[str, str]:
    """The engine's environment: the program's, without the watcher's socket (the engine is not watched)."""
    env = {k: v for k, v in os.environ.items() if k != SOCKET_ENV}
    env["PYTHONUNBUFFERED"] = "1"
    return env
