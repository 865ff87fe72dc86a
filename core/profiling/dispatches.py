"""Dispatches, whoever timed them: the Kernels table, the pass's summary and its Chrome trace.

Every source of kernel times (IREE's profile bundles, CUPTI's activity records,
OpenCL's events, a watched program's records) ends as a list of
`DispatchEvent`s. This module is what they share: one row per kernel name in
the Kernels table, the `ProfileSummary` a pass reports, the trace Perfetto
opens (with each kernel's source ops where known) and the name of a pass's
files.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gputop.core.errors import ProfileError
from gputop.core.profiling.breakdown import CallRecords, call_trace
from gputop.core.profiling.work.source_ops import display_name
from gputop.core.records.profile import KernelTiming, PoolUsage, ProfileSummary, SourceOp

__all__ = [
    "DispatchEvent",
    "SourceOpsOf",
    "chrome_trace",
    "kernel_table",
    "pass_stem",
    "source_ops_arg",
    "summarize_events",
    "write_trace",
]


@dataclass(frozen=True)
class DispatchEvent:
    name: str
    start_ns: float
    duration_ns: float
    submission_id: int
    device_ordinal: int
    queue_ordinal: int
    workgroup_count: tuple[int, ...] | None
    workgroup_size: tuple[int, ...] | None
    timing: str
    # Which clock start_ns is on: iree_host (IREE's host clock, as queue events), device_tick (raw device
    # timestamps, put on the host clock by a clock fit), driver_host, cupti or opencl (their own clocks).
    clock: str = "iree_host"
    end_ns: float | None = None  # device_tick events: the raw end tick (ticks need not be nanoseconds)


def kernel_table(events: list[DispatchEvent], calls: int, source: str) -> list[KernelTiming]:
    """Aggregate dispatch events per function name, sorted by total time."""
    by_name: dict[str, list[DispatchEvent]] = defaultdict(list)
    for event in events:
        by_name[event.name].append(event)
    total_all = sum(e.duration_ns for e in events) or 1.0
    rows = []
    for name, group in by_name.items():
        durations = np.array([e.duration_ns for e in group]) / 1e3
        rows.append(
            KernelTiming(
                name=name,
                count=len(group),
                total_us=float(durations.sum()),
                avg_us=float(durations.mean()),
                min_us=float(durations.min()),
                p50_us=float(np.median(durations)),
                max_us=float(durations.max()),
                share=float(durations.sum() * 1e3 / total_all),
                per_call=len(group) / calls if calls else float(len(group)),
                workgroup_count=group[-1].workgroup_count,
                workgroup_size=group[-1].workgroup_size,
                source=source,
                timing=group[-1].timing,
            )
        )
    return sorted(rows, key=lambda k: -k.total_us)


def chrome_trace(events: list[DispatchEvent], device_id: str) -> dict[str, Any]:
    """A Chrome trace (chrome://tracing, Perfetto): one complete event per dispatch."""
    origin = min((e.start_ns for e in events), default=0.0)
    trace_events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": f"gputop {device_id}"}},
    ]
    for event in events:
        trace_events.append(
            {
                "name": event.name,
                "cat": "dispatch",
                "ph": "X",
                "ts": (event.start_ns - origin) / 1e3,
                "dur": event.duration_ns / 1e3,
                "pid": event.device_ordinal,
                "tid": event.queue_ordinal,
                "args": {
                    "submission": event.submission_id,
                    "workgroup_count": list(event.workgroup_count or ()),
                    "workgroup_size": list(event.workgroup_size or ()),
                    "timing": event.timing,
                },
            }
        )
    return {"traceEvents": trace_events, "displayTimeUnit": "ms"}


def summarize_events(
    events: list[DispatchEvent],
    *,
    calls: int,
    source: str,
    device_id: str,
    call_wall_ms: float | None = None,
    pools: list[PoolUsage] | None = None,
    profile_path: str | None = None,
    trace_path: str | None = None,
) -> ProfileSummary:
    """Kernel table and per-call kernel time (and gap, when the wall time is known)."""
    kernels = kernel_table(events, calls, source)
    kernel_ms = sum(k.total_us for k in kernels) / 1e3 / max(calls, 1)
    return ProfileSummary(
        source=source,
        device_id=device_id,
        calls=calls,
        call_wall_ms=call_wall_ms,
        call_kernel_ms=kernel_ms,
        gap_ms=(call_wall_ms - kernel_ms) if call_wall_ms is not None else None,
        kernels=tuple(kernels),
        pools=tuple(pools or ()),
        profile_path=profile_path,
        trace_path=trace_path,
    )


def pass_stem(folder: Path, kind: str = "profile") -> str:
    """`profile-HHMMSS` (local time) for a new profile pass's files in `folder`, never one a pass has used.

    A second pass in the same second gets `profile-HHMMSS_2` (then `_3`...), so one never overwrites
    another's files. A session runs its passes one after another, so looking is enough. A counters
    pass's files are `counters-HHMMSS` (`kind`).
    """
    stamp = time.strftime("%H%M%S")
    for attempt in range(1, 1000):
        stem = f"{kind}-{stamp}" if attempt == 1 else f"{kind}-{stamp}_{attempt}"
        if not any(folder.glob(f"{stem}[.-]*")):
            return stem
    raise ProfileError(f"{folder}: no free name for a profile pass's files")


# A kernel's source ops by its name (`KernelEfficiency.source_ops_named`); None where they are not known.
SourceOpsOf = Callable[[str], tuple[SourceOp, ...] | None]


def source_ops_arg(ops: Sequence[SourceOp]) -> str:
    """A trace event's `source_ops`: `/layers/conv1/Conv (Conv) model.mlir:12:10; /layers/relu1/Relu (Relu) ...`,
    or `linalg.matmul mlp.mlir:7:9` for an op without a name."""
    parts = []
    for op in ops:
        what = f"{display_name(op)} ({op.op})" if op.name else op.op
        parts.append(f"{what} {op.loc}" if op.loc else what)
    return "; ".join(parts)


def write_trace(
    events: list[DispatchEvent],
    device_id: str,
    path: Path,
    *,
    calls: Sequence[CallRecords] = (),
    source_ops: SourceOpsOf | None = None,
) -> Path:
    """The pass as a Chrome trace; with the calls' records, on the host time axis with their breakdown.

    With `source_ops`, each dispatch whose source ops are known carries them in its args (`source_ops`), so
    Perfetto names the model's layers beside IREE's kernel name.
    """
    trace = call_trace(calls, device_id) if calls else chrome_trace(events, device_id)
    if source_ops is not None:
        said: dict[str, str | None] = {}  # one look-up per kernel, not per dispatch
        for event in trace["traceEvents"]:
            if event.get("cat") != "dispatch":
                continue
            name = str(event.get("name"))
            if name not in said:
                ops = source_ops(name)
                said[name] = source_ops_arg(ops) if ops else None
            if said[name]:
                event.setdefault("args", {})["source_ops"] = said[name]
    path.write_text(json.dumps(trace))
    return path
