"""Resource hygiene: repeated compile/run/profile cycles leave nothing behind.

A TUI session restarts runs for hours (r, d, p), so every cycle must give back
what it took: file descriptors, threads, child processes (compilers,
profilers, the capture helper), Python objects and memory. The cycles run in a
fresh child process, as a TUI session is one: in the pytest process the heap
already carries every earlier test's fragments, and its RSS then moves by tens
of MiB for reasons that are not the engine's. The child runs this file as a
script and prints one JSON line per measured cycle.
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import subprocess
import sys
import threading
import tracemalloc
from typing import Any

import psutil
import pytest


def counts() -> dict[str, int]:
    gc.collect()
    me = psutil.Process()
    return {
        "open_files": len(os.listdir("/proc/self/fd")),
        "threads": threading.active_count(),
        "os_threads": me.num_threads(),
        "children": len(me.children(recursive=True)),
    }


def measure_cycles(device: str, warmup: int, cycles: int) -> None:
    """Child side: run whole sessions, as the TUI does, and print what each left behind."""
    from gputop.core.session import RunConfig, Session

    on_cpu = device == "local-task"
    config = RunConfig(
        target="demo:mlp",
        device=device,
        iterations=3,
        use_cache=not on_cpu,  # on the CPU the compiler runs every cycle (lavapipe: too slow)
        profile=True,  # and so does the profiler (iree-benchmark-module)
        renderdoc="auto",
        session_dir=None,
    )

    def cycle() -> dict[str, Any]:
        session = Session(config)
        session.start()
        if not session.wait(300):
            raise RuntimeError("the session did not end")
        if session.error is not None or session.report is None:
            raise RuntimeError(f"the session failed: {session.error}")
        return session.report  # only the report is kept, as the TUI keeps only the newest session

    for _ in range(warmup):
        cycle()
    tracemalloc.start()
    for _ in range(cycles + 1):
        report = cycle()
        gc.collect()
        print(
            json.dumps(
                {
                    **counts(),
                    "rss": psutil.Process().memory_info().rss,
                    "python_heap": tracemalloc.get_traced_memory()[0],
                    "samples_lost": report["record"]["samples_lost"],
                    "kernels": len(report["kernels"]),
                }
            ),
            flush=True,
        )


@pytest.mark.parametrize(("device", "warmup", "cycles"), [("local-task", 2, 5), ("vulkan", 2, 3)])
def test_cycles_leave_nothing_behind(device: str, warmup: int, cycles: int, request: pytest.FixtureRequest) -> None:
    if device != "local-task":
        device = request.getfixturevalue("vulkan_device")
    proc = subprocess.run(
        [sys.executable, __file__, device, str(warmup), str(cycles)],
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == cycles + 1, proc.stdout
    first, last = rows[0], rows[-1]
    keys = ("open_files", "threads", "os_threads", "children")
    assert {k: last[k] for k in keys} == {k: first[k] for k in keys}, rows
    assert all(row["samples_lost"] == 0 and row["kernels"] for row in rows), rows
    # Python objects come back: a session kept alive would hold its samples, reports and
    # threads (hundreds of KiB each); a few KiB of interned names and caches may settle.
    assert last["python_heap"] - first["python_heap"] < 256 * 2**10, [row["python_heap"] for row in rows]
    # Native memory comes back too (IREE devices, buffers, the driver's own pools). The C
    # allocator settles over the first cycles (glibc hands new threads new arenas; on CI
    # lavapipe RSS rose 15 and 16 MiB, then 0.6 MiB), so a leak is told from settling by
    # its shape: a session kept alive grows RSS in every cycle, settling does not.
    rss = [row["rss"] for row in rows]
    growth = [after - before for before, after in itertools.pairwise(rss)]
    assert min(growth) < 4 * 2**20, rss
    assert rss[-1] - rss[0] < 48 * 2**20, rss


if __name__ == "__main__":
    measure_cycles(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
