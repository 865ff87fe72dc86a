"""Where each profiled call starts and ends: marks from IREE's benchmark tool, taken on IREE's host clock.

A profile pass runs its calls in `iree-benchmark-module`, whose records show
queue operations and device work but not the call around them: the host work
before a call's first submission and its return after the device finished
would be unaccounted. `call_marks.c`, compiled here once with the machine's C
compiler (or named by `GPUTOP_CALL_MARKS_LIB`) and loaded into the tool with
LD_PRELOAD, writes a CLOCK_MONOTONIC stamp each time Google Benchmark starts
or stops its timer, so every call's window is known to the nanosecond. Where
no compiler is there, a pass goes on without marks and says so.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from importlib import resources
from pathlib import Path

from gputop.core.paths import cache_dir
from gputop.core.processes import child_options

__all__ = ["call_windows", "marks_environment", "marks_library", "read_marks"]

ENV_LIBRARY = "GPUTOP_CALL_MARKS_LIB"
ENV_OUTPUT = "GPUTOP_CALL_MARKS"


def marks_library() -> tuple[Path | None, str | None]:
    """The compiled marks library, or None and why not (no C compiler, a failed build)."""
    given = os.environ.get(ENV_LIBRARY)
    if given:
        path = Path(given)
        return (path, None) if path.is_file() else (None, f"{ENV_LIBRARY}={given}: no such file")
    source = resources.files("gputop.core.profiling.ireeprof").joinpath("call_marks.c").read_bytes()
    built = cache_dir() / "call-marks" / f"call_marks-{hashlib.sha256(source).hexdigest()[:16]}.so"
    if built.is_file():
        return built, None
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        return None, f"no C compiler to build the call marks (or set {ENV_LIBRARY})"
    built.parent.mkdir(parents=True, exist_ok=True)
    source_path = built.with_suffix(".c")
    source_path.write_bytes(source)
    partial = built.with_suffix(f".{os.getpid()}.partial")
    proc = subprocess.run(
        [compiler, "-O2", "-shared", "-fPIC", "-o", str(partial), str(source_path), "-ldl"],
        capture_output=True,
        text=True,
        timeout=120,
        **child_options(),
    )
    if proc.returncode != 0 or not partial.is_file():
        detail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return None, f"the call marks did not build: {detail}"
    os.replace(partial, built)
    return built, None


def marks_environment(library: Path, output: Path) -> dict[str, str]:
    """The tool's environment with the marks library preloaded, writing to `output`."""
    env = dict(os.environ)
    env["LD_PRELOAD"] = ":".join(p for p in (str(library), env.get("LD_PRELOAD", "")) if p)
    env[ENV_OUTPUT] = str(output)
    return env


def read_marks(path: Path) -> list[tuple[float, float]]:
    """The timer's (start, stop) pairs, in order, in nanoseconds; empty when the file is missing or torn."""
    try:
        stamps = [float(line) for line in path.read_text().split() if line.strip()]
    except (OSError, ValueError):
        return []
    return [(stamps[i], stamps[i + 1]) for i in range(0, len(stamps) - 1, 2) if stamps[i + 1] >= stamps[i]]


def call_windows(pairs: list[tuple[float, float]], first_records: list[float]) -> list[tuple[float, float] | None]:
    """Each call's window: the timer's running stretch that holds the call's first record (None: none does)."""
    windows: list[tuple[float, float] | None] = []
    for first in first_records:
        windows.append(next(((start, stop) for start, stop in pairs if start <= first <= stop), None))
    return windows
