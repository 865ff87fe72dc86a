"""`gputop.watch()`'s work, standard library only: start gputop's engine beside this program, then watch it.

Two `gputop` packages call it. Where gputop is installed in the program's own
environment, `gputop.watch()` (src/gputop) starts the engine with this
Python (`python -m gputop.tui`). Where it is not (a program's venv without
gputop's dependencies), the folder gputop puts on a watched program's
PYTHONPATH also holds a small `gputop` package (`inject/gputop/`) whose
`watch()` starts the `gputop` command found on PATH (or named by `$GPUTOP`)
instead: `gputop watch-path` prints that folder. Either way the engine runs as
a process of its own (its own session, so the program's terminal signals do not
reach it), and this waits until it listens, then installs the watcher `gputop --
CMD` would have put in. Nothing here raises into the program.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["ENGINE_START_S", "program_command", "start_watching"]

ENGINE_START_S = 20.0  # how long the engine may take to listen (it imports the engine: ~1 s on the 2-core CI)
SOCKET_ENV = "GPUTOP_WATCH_SOCKET"


def program_command() -> list[str]:
    """This program's command line as the OS has it (for the session's name), else sys.argv."""
    try:
        with open(f"/proc/{os.getpid()}/cmdline", "rb") as f:
            words = [w.decode(errors="replace") for w in f.read().split(b"\0") if w]
        if words:
            return words
    except OSError:
        pass
    return [sys.executable, *sys.argv]


def start_watching(engine: list[str], folder: str, metrics_port: int, say: Callable[[str], None]) -> str:
    """Start `engine serve` for this process with its record in `folder`, wait for it, and watch; returns `folder`.

    Raises:
        RuntimeError: the engine exited or did not listen in time (the caller says it in one line).
    """
    import subprocess
    import tempfile

    listen = os.path.join(tempfile.mkdtemp(prefix="gputop-watch-"), "agent.sock")
    command = [
        *engine,
        "serve",
        "--quiet",
        "--metrics-port",
        str(metrics_port),
        "--session-dir",
        folder,
        "--adopt",
        str(os.getpid()),
        "--agent-socket",
        listen,
        "--",
        *program_command(),
    ]
    os.makedirs(folder, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != SOCKET_ENV}  # the engine is not watched
    env["PYTHONUNBUFFERED"] = "1"
    with open(os.path.join(folder, "engine.log"), "ab") as log:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, env=env
        )
    deadline = time.monotonic() + ENGINE_START_S
    while not os.path.exists(listen):
        if process.poll() is not None:
            raise RuntimeError(
                f"gputop's engine exited with {process.returncode} (see {os.path.join(folder, 'engine.log')})"
            )
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"gputop's engine did not start within {ENGINE_START_S:.0f} s")
        time.sleep(0.02)
    from .hook import install

    install(listen)
    say(f"watching this program: gputop attach {folder}")
    return folder
