"""CUDA kernel times from NVIDIA's CUPTI activity API, recorded in-process.

IREE 3.13's CUDA HAL has no native profiling, so for CUDA runs gputop asks
CUPTI (the `cupti-python` bindings) to record every kernel the GPU ran while
it makes real calls on the session's own device and context. Each record
carries the kernel's name (the IREE dispatch name), its start and end in GPU
nanoseconds, and its grid and block sizes: device timestamps, not host guesses.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from gputop.core.errors import ProfileError
from gputop.core.profiling.breakdown import CallRecords, Interval
from gputop.core.profiling.dispatches import DispatchEvent

__all__ = ["BREAKDOWN_KINDS", "BUFFER_BYTES", "CuptiPass", "cupti_unavailable_reason", "record_calls", "record_kernels"]

_lock = threading.Lock()
_registered = False
_records: list[Any] = []
BUFFER_BYTES = 8 * 1024 * 1024


def cupti_unavailable_reason() -> str | None:
    try:
        from cupti import cupti  # noqa: F401
    except ImportError as exc:
        return f"CUDA kernel timing needs cupti-python (pip install cupti-python): {exc}"
    except Exception as exc:  # the library is there but CUPTI itself failed to load
        return f"CUPTI cannot be loaded: {exc}"
    return None


def _buffer_requested() -> tuple[int, int]:
    return BUFFER_BYTES, 0


def _buffer_completed(activities: list[Any]) -> None:
    with _lock:
        _records.extend(activities)


def record_kernels(
    run_calls: Callable[[], list[float]], extra_kinds: tuple[str, ...] = ()
) -> tuple[list[DispatchEvent], list[float]]:
    """Run `run_calls` (which returns per-call wall seconds) with kernel recording on, and `extra_kinds`
    (names of BREAKDOWN_KINDS): what each activity kind costs is measured this way (bench/profile_overhead.py)."""
    with _recording(extra_kinds) as records:
        walls = run_calls()
    return _kernel_events(records.result()), walls


@dataclass(frozen=True)
class CuptiPass:
    """What one CUDA pass recorded: the kernels and their calls' walls, and the calls the breakdown explains.

    At the default level the kernels are timed in calls with CUPTI's kernel records alone (their cost is the
    floor, about 1.0 µs a kernel), and the call breakdown comes from as many calls again with the driver, copy,
    memset and synchronization records on as well, which cost more on a call of many short kernels. Kernel
    times then describe calls at the floor, and each set of calls states its own cost. At the full level one
    set of calls has every kind on and gives both.
    """

    events: list[DispatchEvent]
    kernel_walls_s: list[float]  # the calls the kernel times come from: each one's synced wall (CUPTI's clock)
    breakdown_walls_s: list[float]  # the calls the breakdown explains (the same calls where one set gave both)
    call_records: list[CallRecords]
    apart: bool  # the breakdown's calls are another set than the kernels'


def record_calls(call_once: Callable[[], object], calls: int, *, apart: bool = False) -> CuptiPass:
    """`calls` calls with kernels, copies, driver API calls and syncs recorded, each call's window on CUPTI's
    clock; with `apart`, `calls` calls with kernel records alone first, which the kernel table comes from."""
    _prime_once(call_once)
    kernels_only = _recorded_calls(call_once, calls, ()) if apart else None
    activities, windows = _recorded_calls(call_once, calls, BREAKDOWN_KINDS)
    kernel_activities, kernel_windows = kernels_only or (activities, windows)
    return CuptiPass(
        events=_kernel_events(kernel_activities),
        kernel_walls_s=_walls(kernel_windows),
        breakdown_walls_s=_walls(windows),
        call_records=_call_records(activities, windows),
        apart=apart,
    )


def _recorded_calls(
    call_once: Callable[[], object], calls: int, extra_kinds: tuple[str, ...]
) -> tuple[list[Any], list[tuple[float, float]]]:
    """`calls` calls (after RECORDING_WARMUP_CALLS) with kernels and `extra_kinds` recorded: the records of the
    timed calls and each call's window (CUPTI's clock, ns)."""
    from cupti import cupti

    windows: list[tuple[float, float]] = []
    with _recording(extra_kinds) as records:
        for _ in range(RECORDING_WARMUP_CALLS):
            call_once()
        for _ in range(calls):
            started = float(cupti.get_timestamp())
            call_once()
            windows.append((started, float(cupti.get_timestamp())))
    # The warm-up calls' records fall before the first window: neither a kernel of the table nor part of a call.
    return [a for a in records.result() if not _began_before(a, windows[0][0])], windows


# A process's first CUPTI recordings cost its calls more than later ones, however many calls each warms up with: on
# an H200's ResNet-20 (26 kernels, 0.35 ms calls) the first of a fresh process's kernel-record sets read 1.09-1.18x
# the unprofiled calls and later sets 0.98-1.07x; 100 warm-up calls inside the first set did not help, a few short
# recordings before it did (bench/cupti_first_pass.py, BENCHMARKS.md "A CNN's CUDA pass"). So before its first pass
# a process makes PRIMING_CYCLES recordings of up to PRIMING_CALLS calls, within PRIMING_S, and keeps none of them.
PRIMING_CYCLES = 5
PRIMING_CALLS = 5
PRIMING_S = 1.0
_primed = False


def _prime_once(call_once: Callable[[], object]) -> None:
    global _primed
    if _primed:
        return
    _primed = True
    deadline = time.monotonic() + PRIMING_S
    for _ in range(PRIMING_CYCLES):
        with _recording(()):
            for _ in range(PRIMING_CALLS):
                call_once()
        if time.monotonic() > deadline:
            break


def _walls(windows: list[tuple[float, float]]) -> list[float]:
    return [(end - start) / 1e9 for start, end in windows]


# The first call with recording on pays CUPTI's own set-up (seen on an H200: a 10-call pass's mean 2.9-3.5 ms against
# a median of 0.83 ms, the calls unprofiled 0.68 ms): made and left out, so the pass explains the calls the run makes.
RECORDING_WARMUP_CALLS = 1


def _began_before(record: Any, at_ns: float) -> bool:
    """Whether an activity record (kernel, copy, API call, sync: each has `start`, CUPTI clock) began before `at_ns`."""
    start = getattr(record, "start", None)
    return start is not None and float(start) < at_ns


class _Collected:
    def __init__(self) -> None:
        self.activities: list[Any] = []

    def result(self) -> list[Any]:
        return self.activities


BREAKDOWN_KINDS = ("DRIVER", "MEMCPY", "MEMSET", "SYNCHRONIZATION")


@contextlib.contextmanager
def _recording(extra_kinds: tuple[str, ...]) -> Iterator[_Collected]:
    """Kernels (and `extra_kinds`, where CUPTI allows them) recorded while the block runs."""
    global _registered
    reason = cupti_unavailable_reason()
    if reason:
        raise ProfileError(reason)
    from cupti import cupti

    with _lock:
        _records.clear()
    kinds = [cupti.ActivityKind.CONCURRENT_KERNEL]
    try:
        if not _registered:
            cupti.activity_register_callbacks(_buffer_requested, _buffer_completed)
            _registered = True
        cupti.activity_enable(cupti.ActivityKind.CONCURRENT_KERNEL)
    except Exception as exc:
        raise ProfileError(f"CUPTI refused to record kernels: {exc}") from None
    for name in extra_kinds:
        with contextlib.suppress(Exception):  # the breakdown then says less, the kernel table is whole
            kind = getattr(cupti.ActivityKind, name)
            cupti.activity_enable(kind)
            kinds.append(kind)
    collected = _Collected()
    try:
        yield collected
    finally:
        with contextlib.suppress(Exception):
            cupti.activity_flush_all(1)
            for kind in kinds:
                cupti.activity_disable(kind)
    deadline = time.monotonic() + 2.0
    while True:
        with _lock:
            records = list(_records)
        if records or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    collected.activities = records


def _kernel_events(records: list[Any]) -> list[DispatchEvent]:
    from cupti import cupti

    events = []
    for record in records:
        if int(getattr(record, "kind", -1)) != int(cupti.ActivityKind.CONCURRENT_KERNEL):
            continue
        events.append(
            DispatchEvent(
                name=str(record.name),
                start_ns=float(record.start),
                duration_ns=float(record.end - record.start),
                submission_id=int(getattr(record, "correlation_id", 0)),
                device_ordinal=int(getattr(record, "device_id", 0)),
                queue_ordinal=int(getattr(record, "stream_id", 0)),
                workgroup_count=(int(record.grid_x), int(record.grid_y), int(record.grid_z)),
                workgroup_size=(int(record.block_x), int(record.block_y), int(record.block_z)),
                timing="device timestamps (CUPTI)",
                clock="cupti",
            )
        )
    if not events:
        raise ProfileError("CUPTI recorded no kernels during the profiled calls")
    return events


def _api_name(cbid: int) -> str:
    from cupti import cupti

    try:
        return str(cupti.get_callback_name(cupti.CallbackDomain.DRIVER_API, cbid))
    except Exception:
        return f"driver call {cbid}"


def _call_records(records: list[Any], windows: list[tuple[float, float]]) -> list[CallRecords]:
    """Each call's driver calls, launches, copies and kernels, by the call window they fall in."""
    from cupti import cupti

    kind_of = {int(getattr(cupti.ActivityKind, n)): n for n in ("CONCURRENT_KERNEL", *BREAKDOWN_KINDS)}
    api_by_correlation: dict[int, Interval] = {}
    parts: list[dict[str, list[Interval]]] = [{"api": [], "alloc": [], "queue": [], "work": []} for _ in windows]
    kernel_ns = [0.0 for _ in windows]

    def call_of(t: float) -> int | None:
        for index, (start, end) in enumerate(windows):
            if start <= t <= end:
                return index
        return None

    device_records = []
    for record in records:
        kind = kind_of.get(int(getattr(record, "kind", -1)))
        start, end = float(getattr(record, "start", 0)), float(getattr(record, "end", 0))
        if kind is None or end <= 0:
            continue
        if kind in ("DRIVER", "SYNCHRONIZATION"):
            name = _api_name(int(record.cbid)) if kind == "DRIVER" else "stream/event synchronization"
            interval = Interval(start, end, name)
            if kind == "DRIVER":
                api_by_correlation[int(record.correlation_id)] = interval
            index = call_of(start)
            if index is not None:
                is_alloc = kind == "DRIVER" and ("MemAlloc" in name or "MemFree" in name or "MemPool" in name)
                parts[index]["alloc" if is_alloc else "api"].append(interval)
        else:
            device_records.append((kind, record, start, end))
    for kind, record, start, end in device_records:
        launch = api_by_correlation.get(int(getattr(record, "correlation_id", 0)))
        index = call_of(launch.start if launch is not None else start)
        if index is None:
            continue
        device = f"cuda:{int(getattr(record, 'device_id', 0))}"
        if kind == "CONCURRENT_KERNEL":
            name = str(record.name)
            kernel_ns[index] += end - start
        else:
            size = int(getattr(record, "bytes", 0))
            name = f"{kind.lower()} {size} B"
        detail: tuple[tuple[str, object], ...] = (("timing", "device timestamps (CUPTI)"),)
        if kind == "CONCURRENT_KERNEL":
            detail += (
                ("workgroup_count", [int(record.grid_x), int(record.grid_y), int(record.grid_z)]),
                ("workgroup_size", [int(record.block_x), int(record.block_y), int(record.block_z)]),
            )
        parts[index]["work"].append(Interval(start, end, name, device, detail))
        if launch is not None and launch.start < start:
            parts[index]["queue"].append(Interval(launch.start, start, f"launch of {name}", device))
    return [
        CallRecords(
            wall_ns=end - start,
            start_ns=start,
            end_ns=end,
            api_calls=tuple(part["api"]),
            alloc_ops=tuple(part["alloc"]),
            queue_ops=tuple(part["queue"]),
            device_work=tuple(part["work"]),
            kernel_ns=kernel_ns[index],
        )
        for index, ((start, end), part) in enumerate(zip(windows, parts, strict=True))
    ]
