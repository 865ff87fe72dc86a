"""Child processes that stop when the run stops: the compiler, IREE's tools, verifiers.

gputop runs heavy or crash-prone work in child processes (a compiler crash
must not take the app down). Each of them must also end promptly when the
user stops the run, and never hang it; this is the one loop that waits for a
child while watching a cancel event and an optional time limit.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from pathlib import Path

from gputop.core.errors import Interrupted, RuntimeFailure


def first_line(text: str) -> str:
    """The first non-empty line of an error text, without IREE's file:line prefix."""
    for line in str(text).splitlines():
        line = line.strip()
        if line:
            # "...: c/runtime/src/iree/hal/...c:123: UNAVAILABLE; ..." -> "...: UNAVAILABLE; ..."
            return re.sub(r"\S+\.(?:c|cc|h):\d+:\s*", "", line)
    return "unknown error"


def last_line(text: str) -> str:
    """The last non-empty line of a child's output, stripped ("" when it said nothing): its verdict."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def run_logged(
    command: list[str],
    log_path: Path,
    cancel: threading.Event | None = None,
    *,
    timeout_s: float | None = None,
    what: str = "child process",
    env: dict[str, str] | None = None,
) -> tuple[str, int]:
    """Run `command` with its output in `log_path`; return (output, exit code).

    Raises `Interrupted` when `cancel` is set (the child is terminated, then
    killed) and `RuntimeFailure` when it outlives `timeout_s`.
    """
    deadline = time.monotonic() + timeout_s if timeout_s else None
    with open(log_path, "w+", encoding="utf-8", errors="replace") as log:
        log.write("$ " + " ".join(command) + "\n")
        log.flush()
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        try:
            while True:
                try:
                    returncode = process.wait(timeout=0.1)
                    break
                except subprocess.TimeoutExpired:
                    if cancel is not None and cancel.is_set():
                        _end(process)
                        raise Interrupted(f"{what} cancelled") from None
                    if deadline is not None and time.monotonic() > deadline:
                        _end(process)
                        raise RuntimeFailure(
                            f"{what} did not finish in {timeout_s:.0f} s (hung?)", log_path=str(log_path)
                        ) from None
        except BaseException:
            if process.poll() is None:
                process.kill()
                process.wait()
            raise
        log.seek(0)
        return log.read(), returncode


def _end(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
