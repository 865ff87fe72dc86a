"""A watched program's own Python, sampled from outside its process with py-spy: where its time goes, by line.

Why py-spy and not a sampler inside the program: py-spy reads the interpreter's
frames from another process (`--nonblocking`: it never stops the program and
takes no GIL), so the program pays nothing, the watcher inside it stays small,
and a program stuck in C (an IREE call) is sampled as well as one in Python.
It is the ecosystem's tool for this; gputop runs it in rounds of `ROUND_S`
(`py-spy record --format raw --full-filenames --idle`), so the view is live,
and reads each round's folded stacks: a sample is charged to the deepest frame
in the program's own files (not the standard library, not site-packages, not
gputop's watcher), and counted as inside an IREE call when any frame below it
is iree.runtime's. `--idle` keeps the program's sleeps and waits: time between
calls spent waiting is still the program's time.

A refusal is one line: py-spy not installed, not allowed to read the process
(ptrace), or a Python it cannot read; the session says it and goes on.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from gputop.core.processes import first_line
from gputop.core.records.program import ProgramStacks, StackLine

__all__ = ["RATE_HZ", "ROUND_S", "TOP_LINES", "StackSampler", "find_py_spy", "fold_stacks", "own_frame"]

RATE_HZ = 20  # samples a second: a line that takes 5% of a 5 s round gets 5 samples; more costs a 2-core machine
ROUND_S = 5.0  # one py-spy run: the view follows the program this closely (each start costs a little CPU)
TOP_LINES = 20
NOT_OWN = ("/site-packages/", "/dist-packages/", "/gputop_agent/", "<frozen ", "<string>")
IREE_FRAMES = ("/iree/runtime/", "/iree/_runtime")
AGENT = "/gputop_agent/stream.py"  # the watcher's own thread (its wrappers sit inside the program's calls)

Frame = tuple[str, int, str]  # (file, line, function)


def find_py_spy() -> str | None:
    """py-spy beside gputop's Python (its wheel installs it there), else on PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


def _parse_frame(text: str) -> Frame | None:
    """`function (file:line)` as py-spy's raw format writes a frame."""
    name, _, where = text.rpartition(" (")
    file, _, line = where.rstrip(")").rpartition(":")
    if not name or not file:
        return None
    try:
        return file, int(line), name
    except ValueError:
        return file, 0, name


def own_frame(file: str, stdlib: tuple[str, ...]) -> bool:
    """Whether `file` is the program's own code (not Python's library, an installed package or gputop's)."""
    # iree.runtime itself is never the program's, wherever it is installed (a folder on PYTHONPATH, not only
    # site-packages: the GPU machines link it so).
    return not any(part in file for part in (*NOT_OWN, *IREE_FRAMES)) and not file.startswith(stdlib)


def fold_stacks(text: str, stdlib: tuple[str, ...]) -> tuple[Counter[Frame], Counter[Frame], int, int]:
    """One round's raw output: samples per own line, those inside IREE calls, all samples, samples in calls."""
    by_line: Counter[Frame] = Counter()
    in_calls: Counter[Frame] = Counter()
    total = calls = 0
    for row in text.splitlines():
        stack, _, count_text = row.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [f for f in (_parse_frame(part) for part in stack.split(";")) if f is not None]
        if any(AGENT in f[0] for f in frames):  # gputop's own thread in the program: not the program's time
            continue
        own = [f for f in frames if own_frame(f[0], stdlib)]
        inside = any(marker in f[0] for f in frames for marker in IREE_FRAMES)
        total += count
        calls += count if inside else 0
        if own:
            by_line[own[-1]] += count
            if inside:
                in_calls[own[-1]] += count
    return by_line, in_calls, total, calls


class StackSampler:
    """py-spy on one process, in rounds, on a daemon thread; each round's totals go to `on_update`."""

    def __init__(
        self, pid: int, on_update: Callable[[ProgramStacks], None], *, rate_hz: float = RATE_HZ, py_spy: str | None
    ) -> None:
        self.pid = pid
        self.rate_hz = rate_hz
        self.on_update = on_update
        self._py_spy = py_spy
        self._version: str | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._child: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._by_line: Counter[Frame] = Counter()
        self._in_calls: Counter[Frame] = Counter()
        self._samples = 0
        self._samples_in_calls = 0
        self._rounds = 0
        self.on_round: Callable[[float, float, list[tuple[str, int, str, float]]], None] | None = None
        self._stdlib = _stdlib_prefixes(pid)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="gputop-stacks", daemon=True)
        self._thread.start()

    def stop(self, wait_s: float = 0.0) -> None:
        """Stop sampling. `wait_s`: the program has ended, and py-spy ends its round by itself when its target
        is gone, writing what it sampled (a program shorter than a round keeps its samples); past that, or at
        once, the round under way is cut short, its samples lost, its py-spy ended."""
        self._stopping.set()
        with self._lock:
            child = self._child
        if child is not None and child.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(wait_s)
        if child is not None and child.poll() is None:
            with contextlib.suppress(OSError):
                child.kill()
        thread = self._thread
        if thread is not None and thread.is_alive() and threading.current_thread() is not thread:
            thread.join(timeout=5.0)

    def _run(self) -> None:
        if self._py_spy is None:
            self._refuse("py-spy is not installed beside gputop (pip install py-spy)")
            return
        self._version = _version(self._py_spy)
        with tempfile.TemporaryDirectory(prefix="gputop-stacks-") as folder:
            out = Path(folder) / "round.txt"
            while not self._stopping.is_set():
                why = self._round(out)
                if why is not None:
                    if self._rounds == 0:  # a failure after rounds that worked is the program ending
                        self._refuse(why)
                    return

    def _round(self, out: Path) -> str | None:
        """One py-spy run; None when it sampled, else why it could not."""
        command = [
            str(self._py_spy),
            "record",
            "--pid",
            str(self.pid),
            "--format",
            "raw",
            "--full-filenames",
            "--idle",
            "--nonblocking",
            "--rate",
            f"{self.rate_hz:g}",
            "--duration",
            f"{ROUND_S:g}",
            "--output",
            str(out),
        ]
        started = time.perf_counter()
        with self._lock:
            if self._stopping.is_set():
                return None
            self._child = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
            )
            child = self._child
        said, _ = child.communicate()
        if self._stopping.is_set() and (child.returncode != 0 or not out.exists()):
            return None  # cut short: nothing was written
        if child.returncode != 0 or not out.exists():
            return _refusal(said.decode("utf-8", "replace"), self.pid)
        text = out.read_text(encoding="utf-8", errors="replace")
        out.unlink()
        by_line, in_calls, total, calls = fold_stacks(text, self._stdlib)
        with self._lock:
            self._by_line.update(by_line)
            self._in_calls.update(in_calls)
            self._samples += total
            self._samples_in_calls += calls
            self._rounds += 1
        if self.on_round is not None and total:
            top = [(file, line, function, count / total) for (file, line, function), count in by_line.most_common(5)]
            self.on_round(started, time.perf_counter(), top)
        self.on_update(self.stacks())
        return None

    def stacks(self) -> ProgramStacks:
        """The totals so far: the program's own lines by samples, the busiest first."""
        with self._lock:
            total = self._samples
            top = [
                StackLine(
                    file=file,
                    line=line,
                    function=function,
                    samples=count,
                    share=count / total if total else 0.0,
                    in_calls=self._in_calls[(file, line, function)] / count if count else 0.0,
                )
                for (file, line, function), count in self._by_line.most_common(TOP_LINES)
            ]
            return ProgramStacks(
                source=f"py-spy {self._version}" if self._version else "py-spy",
                rate_hz=self.rate_hz,
                samples=total,
                in_calls=self._samples_in_calls / total if total else None,
                top=tuple(top),
                rounds=self._rounds,
            )

    def _refuse(self, why: str) -> None:
        version = f"py-spy {self._version}" if self._version else None
        self.on_update(ProgramStacks(source=version, rate_hz=None, reason=why))


def _refusal(said: str, pid: int) -> str:
    """py-spy's own failure in one line, with what to do where gputop knows."""
    text = " ".join(said.split())
    lower = text.lower()
    if "permission" in lower or "operation not permitted" in lower or "ptrace" in lower:
        return (
            f"py-spy may not read pid {pid} ({first_line(text) or 'permission denied'}): run gputop as the "
            "program's user with ptrace allowed (sudo sysctl kernel.yama.ptrace_scope=0), or as root"
        )
    if not os.path.exists(f"/proc/{pid}"):
        return f"the program (pid {pid}) ended before py-spy could read it"
    return f"py-spy could not sample pid {pid}: {text[:200] or 'it exited without a word'}"


def _version(py_spy: str) -> str | None:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        said = subprocess.run([py_spy, "--version"], capture_output=True, text=True, timeout=10).stdout
        return said.split()[-1] if said.split() else None
    return None


def _stdlib_prefixes(pid: int) -> tuple[str, ...]:
    """Where the program's Python keeps its standard library: its prefix's lib/pythonX.Y (read from /proc)."""
    prefixes = {"/usr/lib/python3", "/usr/local/lib/python3"}
    with contextlib.suppress(OSError):
        exe = os.path.realpath(f"/proc/{pid}/exe")
        prefixes.add(str(Path(exe).parent.parent / "lib" / "python3"))
    prefixes.add(str(Path(sys.base_prefix) / "lib" / "python3"))
    return tuple(sorted(prefixes))
