"""Child processes that stop when the run stops: the compiler, IREE's tools, verifiers.

gputop runs heavy or crash-prone work in child processes (a compiler crash
must not take the app down). Each of them must also end promptly when the
user stops the run, and never hang it; this is the one loop that waits for a
child while watching a cancel event and an optional time limit. A child that
has used no CPU for a while (a compiler stopped with SIGSTOP) is said once per
period, through the caller's `on_stall`.

Every child is started with `child_options()`: on Linux it gets a parent-death
signal (SIGKILL), so a gputop killed outright (SIGKILL, the OOM killer) takes
its compiler and IREE's tools with it instead of leaving them running. The
signal follows the *thread* that started the child, so it is for children
waited on by the thread that starts them (all of `run_logged`'s, every
`subprocess.run`); a long-lived helper started from a thread that may end
before it ends on its closed stdin instead.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from gputop.core.errors import Interrupted, RuntimeFailure, UnwritableFile, unwritable_file

__all__ = [
    "STALL_S",
    "child_options",
    "first_line",
    "last_line",
    "pid_alive",
    "run_logged",
    "signal_name",
]

STALL_S = 30.0  # a child that used no CPU for this long is said to have made no progress

_PR_SET_PDEATHSIG = 1


def _load_prctl() -> Callable[..., int] | None:
    """libc's prctl, loaded once in the parent (a forked child must not load libraries)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


_PRCTL = _load_prctl()


def child_options() -> dict[str, Any]:
    """`Popen` keyword arguments that make a child die with gputop (Linux; nothing elsewhere)."""
    if _PRCTL is None:
        return {}
    prctl = _PRCTL
    parent = os.getpid()

    def die_with_parent() -> None:  # runs in the child, between fork and exec
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the signal was armed
            os.kill(os.getpid(), signal.SIGKILL)

    return {"preexec_fn": die_with_parent}


def pid_alive(pid: int) -> bool:
    """Whether a process `pid` exists (one owned by another user counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def signal_name(returncode: int) -> str | None:
    """`SIGKILL` for a child killed by signal 9 (a negative return code); None for one that exited."""
    if returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


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
    on_stall: Callable[[float], None] | None = None,
    stall_s: float = STALL_S,
) -> tuple[str, int]:
    """Run `command` with its output in `log_path`; return (output, exit code).

    Raises `Interrupted` when `cancel` is set (the child is terminated, then
    killed), `RuntimeFailure` when it outlives `timeout_s` and `UnwritableFile`
    when the log cannot be written (a full disk). While the child
    uses no CPU (stopped, or blocked), `on_stall` is told for how long, once per `stall_s`.
    """
    deadline = time.monotonic() + timeout_s if timeout_s else None
    try:
        log = open(log_path, "w+", encoding="utf-8", errors="replace")  # noqa: SIM115 (closed by the with below)
    except OSError as exc:
        raise _unwritable_log(exc, log_path) from None
    try:
        log.write("$ " + " ".join(command) + "\n")
        log.flush()
    except OSError as exc:  # a full disk: the line names the log, never a bare errno
        with contextlib.suppress(OSError):  # closing flushes again, and fails again
            log.close()
        raise _unwritable_log(exc, log_path) from None
    with log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, **child_options()
        )
        watch = _StallWatch(process.pid, stall_s, on_stall) if on_stall is not None else None
        try:
            while True:
                try:
                    returncode = process.wait(timeout=0.1)
                    break
                except subprocess.TimeoutExpired:
                    if watch is not None:
                        watch.check()
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


def _unwritable_log(exc: OSError, log_path: Path) -> UnwritableFile:
    return unwritable_file(exc, log_path) or UnwritableFile(log_path, exc.strerror or str(exc))


class _StallWatch:
    """Says when a child has used no CPU for `stall_s` (once per period while it lasts)."""

    def __init__(self, pid: int, stall_s: float, say: Callable[[float], None]) -> None:
        self._stall_s = stall_s
        self._say = say
        self._cpu: float | None = None
        self._since = time.monotonic()
        self._said = 0
        self._next_look = 0.0
        try:
            self._process: psutil.Process | None = psutil.Process(pid)
        except psutil.Error:
            self._process = None

    def check(self) -> None:
        now = time.monotonic()
        if self._process is None or now < self._next_look:
            return
        self._next_look = now + min(1.0, self._stall_s / 4)
        try:
            times = self._process.cpu_times()
        except psutil.Error:  # gone: the wait sees it next
            return
        cpu = times.user + times.system
        if cpu != self._cpu:
            self._cpu, self._since, self._said = cpu, now, 0
            return
        periods = int((now - self._since) // self._stall_s)
        if periods > self._said:
            self._said = periods
            self._say(periods * self._stall_s)


def _end(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
