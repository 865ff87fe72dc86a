"""Each profiled call's records on IREE's host clock: the queue operations, submissions and dispatches of a call.

A profile bundle holds the records of every call the benchmark tool made, on
the device's clock and the host's. This module cuts them into calls (the same
sequence of queue operations repeats every call), puts device ticks on the
host clock by the bundle's clock correlations, and hands each call to the
breakdown (`profiling/breakdown.py`) as `CallRecords`. `iree-profile explain`'s
own hints come with them.
"""

from __future__ import annotations

import itertools
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gputop.core.errors import ProfileError
from gputop.core.processes import child_options
from gputop.core.profiling.breakdown import CallRecords, ClockFit, Interval, fit_clock
from gputop.core.profiling.ireeprof.call_marks import call_windows
from gputop.core.profiling.ireeprof.ireeperf import ProfileRecords, record_number
from gputop.core.profiling.ireeprof.queue_events import QueueEvent
from gputop.core.profiling.ireeprof.tools import runtime_tool

__all__ = ["ALLOC_OPS", "breakdown_source", "calls_window_ns", "explain_hints", "ireeprof_calls"]


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


@dataclass(frozen=True)
class _HostAxis:
    """Where a record goes on IREE's host clock: each device's clock fit, and each device's name."""

    fits: dict[int, ClockFit]
    device_ids: list[str]

    def device_name(self, ordinal: int) -> str:
        return self.device_ids[ordinal] if ordinal < len(self.device_ids) else f"device {ordinal}"

    def host_time(self, tick: float, ordinal: int) -> float:
        fit = self.fits.get(ordinal)
        return fit.host_ns(tick) if fit is not None else tick


def _host_axis(records: ProfileRecords, device_ids: list[str]) -> tuple[_HostAxis, str]:
    """Each device's clock fit from the bundle's clock correlations, and how device time was placed."""
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
    return _HostAxis(fits, device_ids), fit_text


def _submission_spans(
    records: ProfileRecords, axis: _HostAxis
) -> tuple[dict[int, list[Interval]], dict[int, Interval]]:
    """Each submission's spans on the device (allocations left out), and the last span of each submission."""
    spans: dict[int, list[Interval]] = {}
    span_of: dict[int, Interval] = {}
    for span in records.op_spans:
        start = span.start_ns if span.on_host_clock else axis.host_time(span.start_ns, span.device_ordinal)
        end = span.end_ns if span.on_host_clock else axis.host_time(span.end_ns, span.device_ordinal)
        interval = Interval(start, end, span.op, axis.device_name(span.device_ordinal))
        span_of[span.submission_id] = interval
        if span.op not in ALLOC_OPS:
            spans.setdefault(span.submission_id, []).append(interval)
    return spans, span_of


def _dispatch_work(
    records: ProfileRecords, by_submission: dict[int, int], axis: _HostAxis
) -> tuple[dict[int, list[Interval]], dict[int, float]]:
    """Each call's dispatches on the host clock, and its kernel time (ns), by the call's index."""
    work: dict[int, list[Interval]] = {}
    kernel_ns: dict[int, float] = {}
    for event in records.dispatches:
        call = by_submission.get(event.submission_id)
        if call is None:
            continue
        if event.clock == "device_tick":
            start = axis.host_time(event.start_ns, event.device_ordinal)
            end = (
                axis.host_time(event.end_ns, event.device_ordinal)
                if event.end_ns is not None
                else start + event.duration_ns
            )
        else:
            start, end = event.start_ns, event.start_ns + event.duration_ns
        detail = (
            ("submission", event.submission_id),
            ("workgroup_count", list(event.workgroup_count or ())),
            ("workgroup_size", list(event.workgroup_size or ())),
            ("timing", event.timing),
        )
        work.setdefault(call, []).append(
            Interval(start, end, event.name, axis.device_name(event.device_ordinal), detail)
        )
        kernel_ns[call] = kernel_ns.get(call, 0.0) + event.duration_ns
    return work, kernel_ns


def _queued(
    chunk: list[QueueEvent], spans: dict[int, list[Interval]], span_of: dict[int, Interval], axis: _HostAxis
) -> tuple[list[Interval], list[Interval], list[Interval]]:
    """A call's allocations, its other queue operations (each until it ran) and its submissions' device spans."""
    allocs, queued, submissions = [], [], []
    for op in chunk:
        ran = span_of.get(op.submission_id)
        name = f"{op.op} {op.payload_bytes} B" if op.payload_bytes else op.op
        device = axis.device_name(op.device_ordinal)
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
    return allocs, queued, submissions


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
    axis, fit_text = _host_axis(records, device_ids)
    chunks, split = _split_calls(records.queue_ops, len(walls_ms))
    windows = call_windows(marks or [], [min(op.host_time_ns for op in chunk) for chunk in chunks])
    if marks:
        marked = sum(w is not None for w in windows)
        split += f"; {marked} of {len(chunks)} calls' windows from the benchmark timer's marks"
    by_submission: dict[int, int] = {}
    for index, chunk in enumerate(chunks):
        for op in chunk:
            by_submission[op.submission_id] = index
    spans, span_of = _submission_spans(records, axis)
    work, kernel_ns = _dispatch_work(records, by_submission, axis)
    result = []
    for index, (chunk, wall) in enumerate(zip(chunks, walls_ms, strict=False)):
        allocs, queued, submissions = _queued(chunk, spans, span_of, axis)
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
            busy, gaps, worst = (record_number(row, k) or 0.0 for k in ("busy_ns", "total_gap_ns", "max_gap_ns"))
            hints.append(
                f"queue {row.get('physical_device_ordinal', 0)}.{row.get('queue_ordinal', 0)}: "
                f"{row['submissions']} submissions, busy {busy / 1e6:.3f} ms, {row.get('gaps', 0)} gaps "
                f"totalling {gaps / 1e6:.3f} ms (largest {worst / 1e6:.3f} ms)"
            )
    return tuple(hints)
