"""Where a call's time goes: the call breakdown, built from a profile pass's own records.

A synced call of 2.3 ms with 0.09 ms of kernels leaves 2.2 ms to explain.
The records a pass already has say where they went: queue operations with
their submit and ready times, device submissions and the dispatches inside
them, host API calls. This module lays them on one host time axis per call
and gives every instant exactly one kind, by priority: a dispatch running
(`device_busy`), a submission on the device with no dispatch running
(`device_idle`), the device done and the host not yet back (`return_wait`),
an allocation pending (`alloc`), another queue operation pending (`queue`),
else the host working (`host`). What lies outside the records' sight (the
start of a call before its first record, when the producer marks no call
boundaries) is `unaccounted`, never folded into a neighbour. The parts are
disjoint and add up to the call's synced wall time by construction.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gputop.core.call_modes import assign_groups, find_modes
from gputop.core.records.breakdown import SEGMENT_KINDS, BreakdownGroup, BreakdownTotals, CallBreakdown, CallSegment
from gputop.core.units import ms, ms_fixed

__all__ = [
    "CallRecords",
    "ClockFit",
    "Interval",
    "breakdown_groups_text",
    "breakdown_line",
    "build_breakdown",
    "call_trace",
    "classify_call",
    "fit_clock",
]

HOST_KINDS = ("host", "queue", "alloc", "return_wait", "unaccounted")


@dataclass(frozen=True)
class Interval:
    """A stretch of time on the host axis (nanoseconds), with what it was and where."""

    start: float
    end: float
    name: str
    device: str | None = None
    detail: tuple[tuple[str, object], ...] = ()  # what else the record said (workgroups, timing), for the trace


@dataclass(frozen=True)
class CallRecords:
    """What the records say of one call, every time on the same host clock (nanoseconds)."""

    wall_ns: float  # the call's synced wall time, as the caller measured it
    start_ns: float | None  # the call's own start, when the records see it (in-process calls)
    end_ns: float | None  # and its return
    api_calls: tuple[Interval, ...] = ()  # host API calls (cuLaunchKernel, ...): host work, named
    alloc_ops: tuple[Interval, ...] = ()  # allocations and frees, from submission to done
    queue_ops: tuple[Interval, ...] = ()  # other queue operations, from submission to start or ready
    submissions: tuple[Interval, ...] = ()  # device spans of submitted work (a command buffer's execution)
    device_work: tuple[Interval, ...] = ()  # dispatches (and copies) running on a device
    completion_seen_ns: float | None = None  # when the host saw the device's last work done
    kernel_ns: float = 0.0  # the dispatches' own summed time
    # False where the records time submissions but not their dispatches (a pass's run without per-dispatch
    # timestamps): a submission's span is then the device busy with it, idle gaps inside it not told apart.
    dispatches_timed: bool = True


@dataclass(frozen=True)
class ClockFit:
    """A device clock put on the host clock: host_ns = slope * tick + offset."""

    slope: float
    offset: float
    description: str

    def host_ns(self, tick: float) -> float:
        return self.slope * tick + self.offset


def fit_clock(samples: Sequence[tuple[float, float]], what: str = "clock_correlation") -> ClockFit | None:
    """A least-squares line through (device tick, host ns) samples; None without samples.

    One sample fixes only the offset (ticks are taken as nanoseconds). The
    description says which fit was used and how far the worst sample lies
    from it, the figure to distrust device placement by.
    """
    if not samples:
        return None
    if len(samples) == 1:
        tick, host = samples[0]
        return ClockFit(1.0, host - tick, f"offset from 1 {what} sample (ticks taken as ns)")
    ticks = [t for t, _ in samples]
    hosts = [h for _, h in samples]
    mean_t, mean_h = statistics.fmean(ticks), statistics.fmean(hosts)
    var = sum((t - mean_t) ** 2 for t in ticks)
    slope = sum((t - mean_t) * (h - mean_h) for t, h in samples) / var if var > 0 else 1.0
    offset = mean_h - slope * mean_t
    worst = max(abs(slope * t + offset - h) for t, h in samples)
    return ClockFit(
        slope,
        offset,
        f"least-squares line through {len(samples)} {what} samples (worst residual {worst / 1e3:.1f} us)",
    )


def _active(intervals: Sequence[Interval], t0: float, t1: float) -> list[Interval]:
    return [i for i in intervals if i.start <= t0 and i.end >= t1 and i.end > i.start]


def _record_times(call: CallRecords) -> list[float]:
    intervals = (*call.api_calls, *call.alloc_ops, *call.queue_ops, *call.device_work, *call.submissions)
    return [t for i in intervals for t in (i.start, i.end)]


def call_window(call: CallRecords) -> tuple[float, float, float]:
    """(start, end, hidden): the stretch the records see, and the wall time outside it (ns)."""
    if call.start_ns is not None and call.end_ns is not None:
        return call.start_ns, call.end_ns, 0.0
    times = _record_times(call)
    if not times:
        return 0.0, 0.0, call.wall_ns
    start = min(times)
    seen_end = call.completion_seen_ns if call.completion_seen_ns is not None else max(times)
    end = max(start, min(seen_end, start + call.wall_ns))  # records past the return belong after the call
    return start, end, max(0.0, call.wall_ns - (end - start))


def classify_call(call: CallRecords) -> tuple[list[CallSegment], dict[str, float]]:
    """The call's segments (start from the call's start, ms) and its time per kind (ns)."""
    per_kind = dict.fromkeys(SEGMENT_KINDS, 0.0)
    window_start, window_end, hidden = call_window(call)
    if window_end <= window_start:
        per_kind["unaccounted"] = hidden
        return [CallSegment("unaccounted", "no records for this call", None, 0.0, hidden / 1e6)], per_kind
    last_device_end = max((i.end for i in (*call.device_work, *call.submissions)), default=None)
    inside = (t for t in _record_times(call) if window_start < t < window_end)
    bounds = sorted({window_start, window_end, *inside})
    segments: list[CallSegment] = []
    for t0, t1 in itertools.pairwise(bounds):
        kind, name, device = _kind_at(call, t0, t1, last_device_end)
        per_kind[kind] += t1 - t0
        start_ms, duration_ms = (t0 - window_start) / 1e6, (t1 - t0) / 1e6
        last = segments[-1] if segments else None
        if last is not None and (last.kind, last.name, last.device) == (kind, name, device):
            segments[-1] = CallSegment(kind, name, device, last.start_ms, last.duration_ms + duration_ms)
        else:
            segments.append(CallSegment(kind, name, device, start_ms, duration_ms))
    if hidden > 0:
        # The producer marks no call boundaries: the call's start before its first record and its
        # return after the completion the host saw are outside the records.
        end_ms = (window_end - window_start) / 1e6
        segments.append(CallSegment("unaccounted", "outside the records", None, end_ms, hidden / 1e6))
        per_kind["unaccounted"] += hidden
    return segments, per_kind


def _kind_at(call: CallRecords, t0: float, t1: float, last_device_end: float | None) -> tuple[str, str, str | None]:
    running = _active(call.device_work, t0, t1)
    if running:
        names = sorted({i.name for i in running})
        return "device_busy", " + ".join(names), running[0].device
    submitted = _active(call.submissions, t0, t1)
    if submitted and not call.dispatches_timed:
        return "device_busy", f"{submitted[0].name} (its dispatches untimed)", submitted[0].device
    if submitted:
        return "device_idle", submitted[0].name, submitted[0].device
    if last_device_end is not None and t0 >= last_device_end:
        pending_api = _active(call.api_calls, t0, t1)
        return "return_wait", pending_api[0].name if pending_api else "waiting for the device's completion", None
    allocs = _active(call.alloc_ops, t0, t1)
    if allocs:
        return "alloc", allocs[0].name, allocs[0].device
    queued = _active(call.queue_ops, t0, t1)
    if queued:
        return "queue", queued[0].name, queued[0].device
    api = _active(call.api_calls, t0, t1)
    if api:
        return "host", api[0].name, None
    return "host", "host work", None


def build_breakdown(calls: Sequence[CallRecords], *, source: str, fit: str) -> CallBreakdown | None:
    """Mean parts over the profiled calls, and the median call segment by segment; None without calls."""
    if not calls:
        return None
    classified = [classify_call(call) for call in calls]
    walls = [call.wall_ns for call in calls]
    means = {kind: statistics.fmean(parts[kind] for _, parts in classified) / 1e6 for kind in SEGMENT_KINDS}
    wall_ms = statistics.fmean(walls) / 1e6
    # Whatever rounding leaves goes to unaccounted, so the parts add up to the wall time exactly.
    attributed = sum(value for kind, value in means.items() if kind != "unaccounted")
    means["unaccounted"] = wall_ms - attributed
    median_index = sorted(range(len(calls)), key=lambda i: walls[i])[len(calls) // 2]
    per_kind = [parts for _, parts in classified]
    return CallBreakdown(
        calls=len(calls),
        wall_ms=wall_ms,
        kernel_ms=statistics.fmean(call.kernel_ns for call in calls) / 1e6,
        totals=BreakdownTotals(**{f"{kind}_ms": value for kind, value in means.items()}),
        median_call=tuple(classified[median_index][0]),
        source=source,
        fit=fit,
        groups=_groups(np.asarray(walls) / 1e6, per_kind),
    )


def _groups(walls_ms: np.ndarray, per_kind: Sequence[dict[str, float]]) -> tuple[BreakdownGroup, ...]:
    """The pass's calls in groups (`call_modes.find_modes`), each with its mean parts; () for one group."""
    modes = find_modes(walls_ms)
    if len(modes) < 2:
        return ()
    which = assign_groups(walls_ms, modes)
    groups = []
    for number, mode in enumerate(modes):
        members = [parts for parts, group in zip(per_kind, which, strict=True) if group == number]
        means = {f"{kind}_ms": statistics.fmean(p[kind] for p in members) / 1e6 for kind in SEGMENT_KINDS}
        groups.append(BreakdownGroup(mode.share, mode.median_ms, mode.calls, BreakdownTotals(**means)))
    return tuple(groups)


GROUP_KINDS = ("host", "queue", "return_wait", "device_busy", "device_idle", "alloc")  # what can tell groups apart
GROUPS_APART = 0.2  # a part differs between the groups by more than this share of the larger ...
GROUPS_APART_MS = 0.01  # ... and this many ms


def breakdown_groups_text(groups: Sequence[Mapping[str, Any]] | None) -> str | None:
    """`in the profile pass: queue 0.210 ms vs 1.400 ms, device busy 2.100 ms vs 4.900 ms`: the parts (at most
    two, the most apart) that differ between a pass's groups of calls (`call_breakdown.groups`' JSON form);
    None without groups or differences."""
    if not groups or len(groups) < 2:
        return None
    apart = []
    for kind in GROUP_KINDS:
        values = [float(group["totals"][f"{kind}_ms"]) for group in groups]
        spread = max(values) - min(values)
        if spread > GROUPS_APART * max(values) and spread > GROUPS_APART_MS:
            apart.append((spread, kind, values))
    if not apart:
        return None
    apart.sort(key=lambda item: -item[0])
    parts = [f"{LABELS[kind]} " + " vs ".join(ms(v) for v in values) for _, kind, values in apart[:2]]
    return "in the profile pass: " + ", ".join(parts)


def call_trace(calls: Sequence[CallRecords], device_id: str) -> dict[str, Any]:
    """A Chrome trace of the profiled calls on the host time axis: each call's breakdown on a host
    track and device tracks (what the Timeline view draws), and every dispatch on its device."""
    windows = [call_window(call) for call in calls]
    origin = min((start for start, _, _ in windows), default=0.0)
    devices = sorted({i.device for call in calls for i in (*call.device_work, *call.submissions) if i.device})
    pid_of = {name: index + 1 for index, name in enumerate(devices)}
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": f"gputop host ({device_id} run)"}},
        {"name": "thread_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "call breakdown"}},
        {"name": "thread_name", "ph": "M", "pid": 0, "tid": 1, "args": {"name": "calls"}},
    ]
    for name, pid in pid_of.items():
        events.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": f"gputop {name}"}})
        events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "call breakdown"}})
        events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": 1, "args": {"name": "dispatches"}})
    for number, (call, (start, _, _)) in enumerate(zip(calls, windows, strict=True), 1):
        segments, _ = classify_call(call)
        base_us = (start - origin) / 1e3
        events.append(
            {"name": f"call {number}", "cat": "call", "ph": "X", "ts": base_us, "dur": call.wall_ns / 1e3,
             "pid": 0, "tid": 1, "args": {"wall_ms": call.wall_ns / 1e6, "kernel_ms": call.kernel_ns / 1e6}}
        )  # fmt: skip
        for segment in segments:
            pid = 0 if segment.kind in HOST_KINDS else pid_of.get(segment.device or "", 0)
            events.append(
                {"name": f"{segment.kind}: {segment.name}", "cat": segment.kind, "ph": "X",
                 "ts": base_us + segment.start_ms * 1e3, "dur": segment.duration_ms * 1e3, "pid": pid, "tid": 0}
            )  # fmt: skip
        for work in call.device_work:
            events.append(
                {"name": work.name, "cat": "dispatch", "ph": "X", "ts": (work.start - origin) / 1e3,
                 "dur": (work.end - work.start) / 1e3, "pid": pid_of.get(work.device or "", 0), "tid": 1,
                 "args": {"call": number, **dict(work.detail)}}
            )  # fmt: skip
    return {"traceEvents": events, "displayTimeUnit": "ms"}


LABELS = {
    "host": "host",
    "queue": "queue",
    "alloc": "alloc",
    "device_busy": "device busy",
    "device_idle": "device idle",
    "return_wait": "return wait",
    "unaccounted": "unaccounted",
}


def breakdown_line(breakdown: CallBreakdown) -> str:
    """The breakdown in one line, largest part first: for the log and progress lines."""
    parts = sorted(((getattr(breakdown.totals, f"{kind}_ms"), kind) for kind in SEGMENT_KINDS), key=lambda p: -p[0])
    # ms_fixed: rounding noise reads 0.000 ms, never -0.000 ms
    shown = ", ".join(
        f"{LABELS[kind]} {ms_fixed(value)}" for value, kind in parts if value > 0 or kind == "unaccounted"
    )
    return f"call {ms_fixed(breakdown.wall_ms)} = {shown}"
