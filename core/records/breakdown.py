"""Where a profiled call's wall time goes: disjoint parts that add up, and its median call's segments.

`profiling.breakdown` builds a `CallBreakdown` from a profile pass's own
records; it rides on the pass's `ProfileSummary` and the Calls pane draws it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SEGMENT_KINDS", "BreakdownGroup", "BreakdownTotals", "CallBreakdown", "CallSegment"]


# The kinds of time a call is made of, in the order the call breakdown lists them.
SEGMENT_KINDS = ("host", "queue", "alloc", "device_busy", "device_idle", "return_wait", "unaccounted")


@dataclass(frozen=True)
class CallSegment:
    """One stretch of a call on the host time axis: what the host, a queue or a device was doing."""

    kind: str  # one of SEGMENT_KINDS
    name: str  # the queue operation, the dispatches running, or what the stretch is
    device: str | None  # the device (queue) it happened on; None for the host
    start_ms: float  # from the start of the call (the first record of the call where the start is not seen)
    duration_ms: float


@dataclass(frozen=True)
class BreakdownTotals:
    """Where a call's synced wall time went, in disjoint parts that add up to the wall time (ms per call)."""

    host_ms: float = 0.0  # the host working with nothing submitted pending: VM, command recording, API calls
    queue_ms: float = 0.0  # queue operations submitted and not yet done: waiting for dependencies, launch latency
    alloc_ms: float = 0.0  # queue-ordered allocations and frees pending
    device_busy_ms: float = 0.0  # a dispatch running on the device
    device_idle_ms: float = 0.0  # inside a device submission with no dispatch running
    return_wait_ms: float = 0.0  # the device done, the host not yet returned from its wait
    unaccounted_ms: float = 0.0  # what the records cannot attribute; never folded into another part


@dataclass(frozen=True)
class BreakdownGroup:
    """The profiled calls of one group (`call_modes.find_modes` over the pass's own calls): where their time went."""

    share: float  # of the pass's calls
    median_ms: float  # their median synced wall time
    calls: int
    totals: BreakdownTotals  # their mean parts


@dataclass(frozen=True)
class CallBreakdown:
    """Where the synced call time goes, from the profile pass's own records (see docs/kernels.md: call breakdown)."""

    calls: int  # profiled calls the totals are averaged over
    wall_ms: float  # mean synced wall time of those calls; the totals add up to it
    kernel_ms: float  # the dispatches' own summed time per call (inside device_busy_ms unless they overlap)
    totals: BreakdownTotals
    median_call: tuple[CallSegment, ...]  # the call with the median wall time, segment by segment
    source: str  # which records: ireeprof queue/device events, host execution, CUPTI API activity, OpenCL events
    fit: str  # how device time was put on the host time axis
    # True where kernel_ms was timed in another run than the segments (a default pass that explained a run without
    # per-dispatch timestamps): then it is not inside device_busy_ms, and may exceed it.
    kernels_apart: bool = False
    # Where the pass's calls fall into separate groups (a clock that fell mid-pass), each group's own parts,
    # fastest first: what differs between them. () where they form one group.
    groups: tuple[BreakdownGroup, ...] = ()
