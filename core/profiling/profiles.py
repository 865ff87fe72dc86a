"""Per-dispatch device times from IREE's HAL-native profiling (`.ireeprof`).

The Python bindings cannot open a profile sink, but IREE's shipped tools can:
a profile pass (`tool_pass.py`) runs `iree-benchmark-module` on the very
`.vmfb`, device and inputs of the session with `--device_profiling_mode`;
this module builds that command and decodes the bundle with `iree-profile
export --format=ireeperf-jsonl` into dispatches and calls. Dispatch times come from
device timestamps (Vulkan, HIP) or from the CPU executing the dispatch
(local-task, whose "device" is the host); nothing here is a host clock
wrapped around asynchronous work. The pass also yields a Chrome trace
(Perfetto opens it) and the HAL pools' reserved and committed bytes.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gputop.core.errors import ProfileError
from gputop.core.files import require_file
from gputop.core.processes import child_options
from gputop.core.profiling.call_marks import call_windows
from gputop.core.profiling.queue_events import QueueEvent, export_jsonl, ireeperf_records, queue_event_from
from gputop.core.profiling.source_ops import display_name
from gputop.core.profiling.timeline import CallRecords, ClockFit, Interval, call_trace, fit_clock
from gputop.core.snapshot import DeviceInfo, KernelTiming, PoolUsage, ProfileSummary, SourceOp

__all__ = [
    "ALLOC_OPS",
    "PROFILING_MODES",
    "TIMING",
    "ClockSample",
    "DispatchEvent",
    "OpSpan",
    "ProfileRecords",
    "SourceOpsOf",
    "benchmark_call_ms",
    "breakdown_source",
    "calls_window_ns",
    "chrome_trace",
    "decode_bundle",
    "device_uri",
    "explain_hints",
    "ireeprof_calls",
    "kernel_table",
    "parse_ireeperf",
    "parse_records",
    "pass_stem",
    "profiled_calls_command",
    "read_profile",
    "runtime_tool",
    "source_ops_arg",
    "summarize_events",
    "timed_repetitions",
    "write_trace",
]

PROFILING_MODES = {
    "vulkan": "dispatch-events,queue-events,device-queue-events,memory-events",
    "hip": "dispatch-events,queue-events,device-queue-events,memory-events",
    "local-task": "host-execution,queue-events,memory-events",
    "local-sync": "host-execution,queue-events,memory-events",
}
TIMING = {
    "dispatch_event": "device timestamps",
    "host_execution_event": "host execution (CPU device)",
}


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


def runtime_tool(name: str) -> str:
    """Path of a tool shipped inside iree-base-runtime (iree-benchmark-module, iree-profile)."""
    from iree._runtime import libs

    path = Path(libs.library_path) / name
    if not path.exists():
        raise ProfileError(f"{name} is not in this iree-base-runtime ({path})")
    return str(path)


def device_uri(device: DeviceInfo) -> str:
    """The `--device=` value the shipped tools accept for `device`."""
    if device.backend.startswith("local"):
        return device.backend
    if device.uri:
        return device.uri  # vulkan://N is refused; device paths work everywhere
    index = device.id.split(":")[1].split("#")[0] if ":" in device.id else "0"
    return device.backend if index == "0" else f"{device.backend}://{index}"


@dataclass(frozen=True)
class OpSpan:
    """When a queue operation ran: on the device (Vulkan, HIP), or on the host executor (local devices)."""

    submission_id: int
    op: str
    device_ordinal: int
    queue_ordinal: int
    start_ns: float  # on the IREE host clock when `on_host_clock`, else in device ticks
    end_ns: float
    on_host_clock: bool


@dataclass(frozen=True)
class ClockSample:
    """One clock correlation: a device tick and the IREE host time it was read at."""

    device_ordinal: int
    device_tick: float
    host_ns: float  # the middle of the host time window the sample was taken in
    uncertainty_ns: float


@dataclass
class ProfileRecords:
    """What gputop reads of an ireeperf-jsonl export: dispatches, queue operations, clocks, pools."""

    dispatches: list[DispatchEvent] = field(default_factory=list)
    queue_ops: list[QueueEvent] = field(default_factory=list)
    op_spans: list[OpSpan] = field(default_factory=list)
    clocks: list[ClockSample] = field(default_factory=list)
    pools: list[PoolUsage] = field(default_factory=list)
    # (submission id, host ns) of memory events: a queue-ordered free is processed when the host has
    # seen the work before it complete, so these mark when completion was seen on the host.
    memory_marks: list[tuple[int, float]] = field(default_factory=list)


def _number(record: dict[str, Any], *keys: str) -> float | None:
    """The first of `keys` that holds a finite number."""
    for key in keys:
        value = record.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < 1e30:
            return float(value)
    return None


def parse_records(text: str) -> ProfileRecords:
    """Everything gputop uses from `iree-profile export --format=ireeperf-jsonl` text."""
    records = ProfileRecords()
    pools: dict[int, PoolUsage] = {}
    for number, record in ireeperf_records(text):
        kind = record.get("record_type")
        if not isinstance(kind, str):
            continue  # a record of a kind this gputop does not know
        if kind in TIMING and record.get("key") and record.get("valid", True):
            if kind == "host_execution_event" and record.get("op") not in (None, "dispatch"):
                records.op_spans.extend(_host_op_span(record))
                continue
            records.dispatches.append(_dispatch_event(kind, record, number))
        elif kind == "host_execution_event" and record.get("valid", True):
            records.op_spans.extend(_host_op_span(record))
        elif kind == "queue_device_event" and record.get("valid", True):
            start, end = _number(record, "start_tick"), _number(record, "end_tick")
            if start is not None and end is not None:
                records.op_spans.append(
                    OpSpan(_int(record, "submission_id"), str(record.get("op", "?")),
                           _int(record, "physical_device_ordinal"), _int(record, "queue_ordinal"), start, end,
                           on_host_clock=False)
                )  # fmt: skip
        elif kind == "queue_event":
            try:
                records.queue_ops.append(queue_event_from(record))
            except (KeyError, TypeError, ValueError, OverflowError):
                continue  # a malformed queue record: the breakdown has one operation less, the table stands
        elif kind == "clock_correlation":
            tick = _number(record, "device_tick")
            begin, end = _number(record, "host_time_begin_ns"), _number(record, "host_time_end_ns")
            if tick is not None and begin is not None and end is not None:
                records.clocks.append(
                    ClockSample(_int(record, "physical_device_ordinal"), tick, (begin + end) / 2, end - begin)
                )
        elif kind == "memory_event":
            mark = _number(record, "host_time_ns")
            if mark is not None and _int(record, "submission_id"):
                records.memory_marks.append((_int(record, "submission_id"), mark))
            if not record.get("pool_stats_available"):
                continue
            try:
                pool_id = int(record["pool_id"])
                pools[pool_id] = PoolUsage(
                    pool_id, int(record["pool_bytes_reserved"]), int(record["pool_bytes_committed"])
                )
            except (KeyError, TypeError, ValueError, OverflowError):
                continue
    records.pools = list(pools.values())
    return records


def parse_ireeperf(text: str) -> tuple[list[DispatchEvent], list[PoolUsage]]:
    """Dispatch events and last pool usage from `iree-profile export --format=ireeperf-jsonl`."""
    records = parse_records(text)
    return records.dispatches, records.pools


def _int(record: dict[str, Any], key: str) -> int:
    value = _number(record, key)
    return int(value) if value is not None else 0


def _dispatch_event(kind: str, record: dict[str, Any], number: int) -> DispatchEvent:
    try:
        if kind == "dispatch_event":
            # Device timestamps: kept in ticks, put on the host clock by the pass's clock fit.
            start: Any = next((record[k] for k in ("start_tick", "start_driver_host_cpu_time_ns") if k in record), 0)
            clock = "device_tick" if "start_tick" in record else "driver_host"
        else:
            start = next((record[k] for k in ("start_host_time_ns", "start_driver_host_cpu_time_ns") if k in record), 0)
            clock = "iree_host"
        return DispatchEvent(
            name=str(record["key"]),
            start_ns=float(start),
            duration_ns=float(record["duration_ns"]),
            submission_id=int(record.get("submission_id", 0)),
            device_ordinal=int(record.get("physical_device_ordinal", 0)),
            queue_ordinal=int(record.get("queue_ordinal", 0)),
            workgroup_count=_dims(record.get("workgroup_count")),
            workgroup_size=_dims(record.get("workgroup_size")),
            timing=TIMING[kind],
            clock=clock,
            end_ns=_number(record, "end_tick") if clock == "device_tick" else None,
        )
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise ProfileError(f"profile export line {number}: bad dispatch record ({exc})") from None


def _host_op_span(record: dict[str, Any]) -> list[OpSpan]:
    start, end = _number(record, "start_host_time_ns"), _number(record, "end_host_time_ns")
    if start is None or end is None:
        return []
    return [
        OpSpan(_int(record, "submission_id"), str(record.get("op", "?")), _int(record, "physical_device_ordinal"),
               _int(record, "queue_ordinal"), start, end, on_host_clock=True)
    ]  # fmt: skip


def _dims(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return tuple(value)
    return None


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


def decode_bundle(path: Path, *, dispatches: bool = True) -> ProfileRecords:
    """The records of an `.ireeprof` bundle, via `iree-profile export`; with `dispatches`, at least one dispatch."""
    if require_file(path, allow_empty=True) == 0:
        raise ProfileError(f"{path}: empty profile bundle")
    records = parse_records(export_jsonl(path, runtime_tool("iree-profile")))
    if dispatches and not records.dispatches:
        raise ProfileError(f"{path}: the profile holds no dispatch events")
    return records


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


def read_profile(path: Path, *, calls: int | None = None, device_id: str = "?") -> ProfileSummary:
    """Decode an `.ireeprof` bundle into a kernel table (calls = submissions unless given)."""
    records = decode_bundle(path)
    events = records.dispatches
    submissions = len({(e.device_ordinal, e.submission_id) for e in events})
    return summarize_events(
        events, calls=calls or submissions, source="ireeprof", device_id=device_id, pools=records.pools,
        profile_path=str(path),
    )  # fmt: skip


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


def profiled_calls_command(
    vmfb: Path,
    devices: list[DeviceInfo],
    function: str,
    input_args: Sequence[str],
    bundle: Path,
    modes: str | None = None,
) -> list[str]:
    """IREE's benchmark tool timing each call once, with the device profiler of the first device's backend
    writing `bundle` (`modes`, by default its PROFILING_MODES): the profile pass and the transfer cross-check
    alike."""
    return [
        runtime_tool("iree-benchmark-module"),
        f"--module={vmfb}",
        *[f"--device={device_uri(d)}" for d in devices],
        f"--function={function}",
        *[f"--input={arg}" for arg in input_args],
        f"--device_profiling_mode={modes or PROFILING_MODES[devices[0].backend]}",
        f"--device_profiling_output={bundle}",
        "--benchmark_min_time=1x",
    ]


def calls_window_ns(calls: list[CallRecords]) -> tuple[float, float] | None:
    """From the first call's start to the last one's end, on the records' host clock (None: no call placed)."""
    starts: list[float] = []
    ends: list[float] = []
    for call in calls:
        spans = [*call.alloc_ops, *call.queue_ops, *call.submissions, *call.device_work]
        starts += [call.start_ns] if call.start_ns is not None else [i.start for i in spans]
        ends += [call.end_ns] if call.end_ns is not None else [i.end for i in spans]
        if call.completion_seen_ns is not None:
            ends.append(call.completion_seen_ns)
    if not starts or not ends:
        return None
    return min(starts), max(ends)


def timed_repetitions(calls: int, timings: Path) -> list[str]:
    """The benchmark tool's flags for `calls` synced calls, each one's time written to `timings`
    (`benchmark_call_ms` reads it back)."""
    return [f"--benchmark_repetitions={calls}", f"--benchmark_out={timings}", "--benchmark_out_format=json"]


def benchmark_call_ms(path: Path) -> list[float]:
    """Each call's synced wall time (ms) from `iree-benchmark-module --benchmark_out` JSON.

    With `--benchmark_min_time=1x` every repetition is one call; an unreadable
    file gives no times.
    """
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return []
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
    return [
        b["real_time"] * scale.get(b.get("time_unit", "ns"), 1e-6)
        for b in data.get("benchmarks", [])
        if b.get("run_type") == "iteration"
    ]


# -- the call breakdown from ireeprof records -----------------------------------------------------------
ALLOC_OPS = ("alloca", "dealloca")


def breakdown_source(records: ProfileRecords) -> str:
    if any(span.on_host_clock for span in records.op_spans):
        return "ireeprof queue events and host execution events"
    if not records.dispatches:
        return "ireeprof queue events and device queue events (device busy: each submission's span, dispatches untimed)"
    return "ireeprof queue events, device queue events and dispatch events"


def _split_calls(ops: list[QueueEvent], calls: int) -> tuple[list[list[QueueEvent]], str]:
    """The queue operations of each call, in order: the same sequence of operations repeats every call.

    Equal sequences are the rule (a call's VM program submits the same work each
    time); where they are not, the calls are cut at the largest gaps between submissions.
    """
    ops = sorted(ops, key=lambda o: (o.host_time_ns, o.submission_id))
    if calls <= 0 or not ops:
        return [], "no queue operations"
    if len(ops) % calls == 0:
        size = len(ops) // calls
        chunks = [ops[i * size : (i + 1) * size] for i in range(calls)]
        if all([o.op for o in chunk] == [o.op for o in chunks[0]] for chunk in chunks):
            return chunks, f"{size} queue operations a call"
    gaps = sorted(range(1, len(ops)), key=lambda i: ops[i].host_time_ns - ops[i - 1].host_time_ns, reverse=True)
    cuts = sorted(gaps[: calls - 1])
    edges = [0, *cuts, len(ops)]
    return [ops[a:b] for a, b in itertools.pairwise(edges)], "calls cut at the largest submission gaps"


def ireeprof_calls(
    records: ProfileRecords,
    walls_ms: list[float],
    device_ids: list[str],
    marks: list[tuple[float, float]] | None = None,
) -> tuple[list[CallRecords], str]:
    """Each profiled call's records on IREE's host clock, and how device time was placed on it.

    `walls_ms` are the benchmark tool's synced wall times, one per call in order.
    `marks` are its timer's (start, stop) stretches from `call_marks`: a call's window starts
    where the stretch holding its first record starts and lasts the call's wall time.
    Without them a call's window runs from its first submission to the completion the
    host saw, and the rest of its wall time is unaccounted.
    """
    fits: dict[int, ClockFit] = {}
    for ordinal in {c.device_ordinal for c in records.clocks}:
        fit = fit_clock([(c.device_tick, c.host_ns) for c in records.clocks if c.device_ordinal == ordinal])
        if fit is not None:
            fits[ordinal] = fit
    descriptions = sorted({f.description for f in fits.values()})
    on_host = any(span.on_host_clock for span in records.op_spans) or all(
        e.clock == "iree_host" for e in records.dispatches
    )
    fit_text = "; ".join(descriptions) or (
        "host execution events: already on the host clock"
        if on_host
        else "no clock samples: device ticks taken as host ns"
    )

    def device_name(ordinal: int) -> str:
        return device_ids[ordinal] if ordinal < len(device_ids) else f"device {ordinal}"

    def host_time(tick: float, ordinal: int) -> float:
        fit = fits.get(ordinal)
        return fit.host_ns(tick) if fit is not None else tick

    chunks, split = _split_calls(records.queue_ops, len(walls_ms))
    windows = call_windows(marks or [], [min(op.host_time_ns for op in chunk) for chunk in chunks])
    if marks:
        marked = sum(w is not None for w in windows)
        split += f"; {marked} of {len(chunks)} calls' windows from the benchmark timer's marks"
    by_submission: dict[int, int] = {}
    for index, chunk in enumerate(chunks):
        for op in chunk:
            by_submission[op.submission_id] = index
    spans: dict[int, list[Interval]] = {}
    span_of: dict[int, Interval] = {}
    for span in records.op_spans:
        start = span.start_ns if span.on_host_clock else host_time(span.start_ns, span.device_ordinal)
        end = span.end_ns if span.on_host_clock else host_time(span.end_ns, span.device_ordinal)
        interval = Interval(start, end, span.op, device_name(span.device_ordinal))
        span_of[span.submission_id] = interval
        if span.op not in ALLOC_OPS:
            spans.setdefault(span.submission_id, []).append(interval)
    work: dict[int, list[Interval]] = {}
    kernel_ns: dict[int, float] = {}
    for event in records.dispatches:
        call = by_submission.get(event.submission_id)
        if call is None:
            continue
        if event.clock == "device_tick":
            start = host_time(event.start_ns, event.device_ordinal)
            end = (
                host_time(event.end_ns, event.device_ordinal) if event.end_ns is not None else start + event.duration_ns
            )
        else:
            start, end = event.start_ns, event.start_ns + event.duration_ns
        detail = (
            ("submission", event.submission_id),
            ("workgroup_count", list(event.workgroup_count or ())),
            ("workgroup_size", list(event.workgroup_size or ())),
            ("timing", event.timing),
        )
        work.setdefault(call, []).append(Interval(start, end, event.name, device_name(event.device_ordinal), detail))
        kernel_ns[call] = kernel_ns.get(call, 0.0) + event.duration_ns
    result = []
    for index, (chunk, wall) in enumerate(zip(chunks, walls_ms, strict=False)):
        allocs, queued, submissions = [], [], []
        for op in chunk:
            ran = span_of.get(op.submission_id)
            name = f"{op.op} {op.payload_bytes} B" if op.payload_bytes else op.op
            device = device_name(op.device_ordinal)
            if op.op in ALLOC_OPS:
                done = (
                    ran.end
                    if ran is not None
                    else (op.ready_host_time_ns if op.ready_host_time_ns is not None else op.host_time_ns)
                )
                allocs.append(Interval(op.host_time_ns, max(done, op.host_time_ns), name, device))
            else:
                started = (
                    ran.start
                    if ran is not None
                    else (op.ready_host_time_ns if op.ready_host_time_ns is not None else op.host_time_ns)
                )
                queued.append(Interval(op.host_time_ns, max(started, op.host_time_ns), name, device))
                submissions.extend(spans.get(op.submission_id, []))
        device_end = max((i.end for i in [*submissions, *work.get(index, [])]), default=None)
        # The host saw the device finish when something waiting on it moved: an operation became
        # ready, or a queue-ordered free was processed.
        submitted = {op.submission_id for op in chunk}
        moved = [op.ready_host_time_ns for op in chunk if op.ready_host_time_ns is not None]
        moved += [mark for submission, mark in records.memory_marks if submission in submitted]
        seen = [t for t in moved if device_end is not None and t >= device_end]
        window = windows[index] if index < len(windows) else None
        # The call is the tool's own figure, from the mark at its start: the pass's synced wall (the Kernels
        # header, the Log, the pass's cost) and the breakdown's must be one number. Google Benchmark reads its
        # wall clock a few instructions from each mark; a host that descheduled the tool between the two at
        # the stop made the marks' stretch 54.9 ms where the tool said 45.4 (issue 49, a busy 2-core machine).
        result.append(
            CallRecords(
                wall_ns=wall * 1e6,
                start_ns=window[0] if window is not None else None,
                end_ns=window[0] + wall * 1e6 if window is not None else None,
                alloc_ops=tuple(allocs),
                queue_ops=tuple(queued),
                submissions=tuple(submissions),
                device_work=tuple(work.get(index, [])),
                completion_seen_ns=min(seen) if seen else device_end,
                kernel_ns=kernel_ns.get(index, 0.0),
                dispatches_timed=bool(records.dispatches),
            )
        )
    return result, f"{fit_text}; {split}"


def explain_hints(bundle: Path) -> tuple[str, ...]:
    """`iree-profile explain`'s hints and per-queue busy and gap figures, one line each."""
    try:
        proc = subprocess.run(
            [runtime_tool("iree-profile"), "explain", "--format=jsonl", str(bundle)],
            capture_output=True, text=True, timeout=120, **child_options(),
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired, ProfileError):
        return ()
    hints: list[str] = []
    for line in proc.stdout.splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(row, dict):
            continue
        if row.get("type") == "explain_hint" and row.get("message"):
            hints.append(f"{row.get('severity', 'info')}: {row['message']}")
        elif row.get("type") == "explain_queue" and row.get("submissions"):
            busy, gaps, worst = (_number(row, k) or 0.0 for k in ("busy_ns", "total_gap_ns", "max_gap_ns"))
            hints.append(
                f"queue {row.get('physical_device_ordinal', 0)}.{row.get('queue_ordinal', 0)}: "
                f"{row['submissions']} submissions, busy {busy / 1e6:.3f} ms, {row.get('gaps', 0)} gaps "
                f"totalling {gaps / 1e6:.3f} ms (largest {worst / 1e6:.3f} ms)"
            )
    return tuple(hints)
