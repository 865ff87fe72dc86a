"""A profile of a watched program's calls: CUDA kernel times recorded by CUPTI inside the program's process.

`p` on a watched program asks its watcher to record the next calls with
CUPTI's activity API (gputop's `cupti-python`, imported there from the
folders `cupti_paths` names, where the program's Python version matches
gputop's). The watcher sends the kernel records back (`kernels`); here they
become the same `ProfileSummary` a gputop run's CUDA pass makes, so the
Kernels pane, the report's `kernels` and compare read them unchanged.
"""

from __future__ import annotations

import contextlib
import importlib.util
from pathlib import Path
from typing import Any

from gputop.core.profiling.dispatches import DispatchEvent, summarize_events
from gputop.core.records.profile import ProfileSummary

__all__ = ["PROFILE_CALLS", "PROFILE_WARMUP_CALLS", "cupti_paths", "profile_from_event", "why_not"]

PROFILE_CALLS = 10  # the program's calls a profile records, as the TUI's p does for a gputop run
# Calls recorded before those and left out: CUPTI's first calls after it starts recording run slower (its buffers,
# the driver's instrumentation), as gputop's own CUDA pass found (profiling/cupti/activity.py: RECORDING_WARMUP_CALLS).
PROFILE_WARMUP_CALLS = 3


def why_not(op: str, backends: set[str]) -> str | None:
    """Why `op` (profile, capture) cannot be done in a program using `backends` (the faces say which op before
    it); None when its watcher can try."""
    if not backends:
        return "the program has made no device yet"
    used = ", ".join(sorted(backends))
    if op == "profile" and "cuda" not in backends:
        return (
            f"IREE's Python bindings open no profile sink on {used}; replay the program's module with "
            "iree-benchmark-module --device_profiling_mode=dispatch-events, or gputop run on its .vmfb"
        )
    if op == "capture":
        # RenderDoc's in-application API must be loaded before the program's Vulkan instance exists; the
        # watcher arrives with iree.runtime, too late for a device already made.
        return (
            "not for a watched program: RenderDoc must be loaded before it makes its Vulkan device; "
            "run renderdoccmd capture python app.py, or gputop TARGET.vmfb --device vulkan (then c)"
        )
    return None


def profile_from_event(event: dict[str, Any], device_id: str) -> tuple[ProfileSummary | None, str]:
    """The watcher's `kernels` report as a profile, and the Log's line about it (the summary None: why none)."""
    windows = [w for w in event.get("windows") or () if isinstance(w, list) and len(w) == 2]
    events = [_kernel_event(row) for row in event.get("records") or () if isinstance(row, list) and len(row) >= 12]
    if len(windows) > PROFILE_WARMUP_CALLS:  # the warm-up calls' windows and kernels go
        kept_from = float(windows[PROFILE_WARMUP_CALLS][0])
        windows = windows[PROFILE_WARMUP_CALLS:]
        events = [e for e in events if e.start_ns >= kept_from]
    calls = len(windows) or int(event.get("calls") or 0)
    if not events or not calls:
        return None, "profile: CUPTI recorded no kernels during the program's profiled calls"
    wall_ms = sum((end - start) for start, end in windows) / len(windows) / 1e6 if windows else None
    source = str(event.get("source") or "CUPTI")
    summary = summarize_events(events, calls=calls, source="cupti", device_id=device_id, call_wall_ms=wall_ms)
    wall = f" of {wall_ms:.3f} ms synced" if wall_ms is not None else ""
    line = (
        f"profile: {calls} calls of the program, {len(summary.kernels)} kernels, "
        f"{summary.call_kernel_ms:.3f} ms of kernels per call{wall} ({source}, device timestamps)"
    )
    return summary, line


def _kernel_event(row: list[Any]) -> DispatchEvent:
    """`[name, start_ns, end_ns, grid x y z, block x y z, device, stream, correlation]` as a dispatch event."""
    name, start, end = str(row[0]), float(row[1]), float(row[2])
    return DispatchEvent(
        name=name,
        start_ns=start,
        duration_ns=end - start,
        submission_id=int(row[11]),
        device_ordinal=int(row[9]),
        queue_ordinal=int(row[10]),
        workgroup_count=(int(row[3]), int(row[4]), int(row[5])),
        workgroup_size=(int(row[6]), int(row[7]), int(row[8])),
        timing="device timestamps (CUPTI, in the program's process)",
        clock="cupti",
    )


def cupti_paths() -> list[str]:
    """Where this (gputop's) environment finds `cupti` and what it needs: the watcher imports it from there."""
    paths = []
    for name in ("cupti", "cuda", "cuda_pathfinder", "elftools", "nvidia"):
        with contextlib.suppress(ImportError, ValueError):
            spec = importlib.util.find_spec(name)
            for location in (spec.submodule_search_locations or []) if spec is not None else []:
                parent = str(Path(location).parent)
                if parent not in paths:
                    paths.append(parent)
    return paths
