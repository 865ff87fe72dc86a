"""IREE's profile bundles (`.ireeprof`) read: dispatches, queue operations, clocks and pools, as frozen values.

The Python bindings cannot open a profile sink, but IREE's shipped tools can:
a profile pass (`tool_pass.py`) runs `iree-benchmark-module` on the very
`.vmfb`, device and inputs of the session with `--device_profiling_mode`
(`tools.py` builds that command). This module decodes the bundle with
`iree-profile export --format=ireeperf-jsonl` into the records gputop uses.
Dispatch times come from device timestamps (Vulkan, HIP) or from the CPU
executing the dispatch (local-task, whose "device" is the host); nothing here
is a host clock wrapped around asynchronous work. `call_records.py` lays the
records on each call; `profiling/dispatches.py` turns dispatches into the
Kernels table and a Chrome trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gputop.core.errors import ProfileError
from gputop.core.files import require_file
from gputop.core.profiling.dispatches import DispatchEvent, summarize_events
from gputop.core.profiling.ireeprof.queue_events import QueueEvent, export_jsonl, ireeperf_records, queue_event_from
from gputop.core.profiling.ireeprof.tools import runtime_tool
from gputop.core.records.profile import PoolUsage, ProfileSummary

__all__ = [
    "TIMING",
    "ClockCorrelation",
    "OpSpan",
    "ProfileRecords",
    "decode_bundle",
    "parse_ireeperf",
    "parse_records",
    "read_profile",
    "record_number",
]

TIMING = {
    "dispatch_event": "device timestamps",
    "host_execution_event": "host execution (CPU device)",
}


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
class ClockCorrelation:
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
    clocks: list[ClockCorrelation] = field(default_factory=list)
    pools: list[PoolUsage] = field(default_factory=list)
    # (submission id, host ns) of memory events: a queue-ordered free is processed when the host has
    # seen the work before it complete, so these mark when completion was seen on the host.
    memory_marks: list[tuple[int, float]] = field(default_factory=list)


def record_number(record: dict[str, Any], *keys: str) -> float | None:
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
            start, end = record_number(record, "start_tick"), record_number(record, "end_tick")
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
            tick = record_number(record, "device_tick")
            begin, end = record_number(record, "host_time_begin_ns"), record_number(record, "host_time_end_ns")
            if tick is not None and begin is not None and end is not None:
                records.clocks.append(
                    ClockCorrelation(_int(record, "physical_device_ordinal"), tick, (begin + end) / 2, end - begin)
                )
        elif kind == "memory_event":
            mark = record_number(record, "host_time_ns")
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
    value = record_number(record, key)
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
            end_ns=record_number(record, "end_tick") if clock == "device_tick" else None,
        )
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise ProfileError(f"profile export line {number}: bad dispatch record ({exc})") from None


def _host_op_span(record: dict[str, Any]) -> list[OpSpan]:
    start, end = record_number(record, "start_host_time_ns"), record_number(record, "end_host_time_ns")
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


def decode_bundle(path: Path, *, dispatches: bool = True) -> ProfileRecords:
    """The records of an `.ireeprof` bundle, via `iree-profile export`; with `dispatches`, at least one dispatch."""
    if require_file(path, allow_empty=True) == 0:
        raise ProfileError(f"{path}: empty profile bundle")
    records = parse_records(export_jsonl(path, runtime_tool("iree-profile")))
    if dispatches and not records.dispatches:
        raise ProfileError(f"{path}: the profile holds no dispatch events")
    return records


def read_profile(path: Path, *, calls: int | None = None, device_id: str = "?") -> ProfileSummary:
    """Decode an `.ireeprof` bundle into a kernel table (calls = submissions unless given)."""
    records = decode_bundle(path)
    events = records.dispatches
    submissions = len({(e.device_ordinal, e.submission_id) for e in events})
    return summarize_events(
        events, calls=calls or submissions, source="ireeprof", device_id=device_id, pools=records.pools,
        profile_path=str(path),
    )  # fmt: skip
