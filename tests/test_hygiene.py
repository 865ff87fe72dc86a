"""Resource hygiene: repeated compile/run/profile cycles leave nothing behind.

A TUI session restarts runs for hours (r, d, p), so every cycle must give back
what it took: file descriptors, threads, child processes (compilers,
profilers, the capture helper) and device memory. This runs real sessions in
this process, several times over, and compares the counts after warm-up with
the counts at the end.
"""

from __future__ import annotations

import gc
import os
import threading
from pathlib import Path
from typing import Any

import psutil
import pytest

from gputop.core.session import RunConfig, Session


def counts() -> dict[str, int]:
    gc.collect()
    me = psutil.Process()
    return {
        "open_files": len(os.listdir("/proc/self/fd")),
        "threads": threading.active_count(),
        "os_threads": me.num_threads(),
        "children": len(me.children(recursive=True)),
    }


def cycle(config: RunConfig) -> dict[str, Any]:
    """One whole session; only its report is kept, as the TUI keeps only the newest session."""
    session = Session(config)
    session.start()
    assert session.wait(300), "the session did not end"
    assert session.error is None, session.error
    assert session.report is not None
    return session.report


@pytest.mark.parametrize(("device", "warmup", "cycles"), [("local-task", 2, 5), ("vulkan", 1, 3)])
def test_cycles_leave_nothing_behind(
    device: str, warmup: int, cycles: int, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    on_cpu = device == "local-task"
    if not on_cpu:
        device = request.getfixturevalue("vulkan_device")
    config = RunConfig(
        target="demo:mlp",
        device=device,
        iterations=3,
        use_cache=not on_cpu,  # on the CPU the compiler runs every cycle (lavapipe: too slow)
        profile=True,  # and so does the profiler (iree-benchmark-module)
        renderdoc="auto",
        session_dir=None,
    )
    for _ in range(warmup):
        cycle(config)
    before = counts()
    rss_before = psutil.Process().memory_info().rss
    reports = [cycle(config) for _ in range(cycles)]
    after = counts()
    rss_after = psutil.Process().memory_info().rss
    assert after == before, (before, after)
    assert all(r["record"]["samples_lost"] == 0 and r["kernels"] for r in reports)
    # Memory comes back: more sessions may not keep more than a few MiB between them.
    assert rss_after - rss_before < 24 * 2**20, (rss_before, rss_after)
