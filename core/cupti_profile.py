"""CUDA kernel times from NVIDIA's CUPTI activity API, recorded in-process.

IREE 3.13's CUDA HAL has no native profiling, so for CUDA runs gputop asks
CUPTI (the `cupti-python` bindings) to record every kernel the GPU ran while
it makes real calls on the session's own device and context. Each record
carries the kernel's name (the IREE dispatch name), its start and end in GPU
nanoseconds, and its grid and block sizes: device timestamps, not host guesses.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from gputop.core.profiles import DispatchEvent, ProfileError

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


def record_kernels(run_calls: Callable[[], list[float]]) -> tuple[list[DispatchEvent], list[float]]:
    """Run `run_calls` (which returns per-call wall seconds) with kernel recording on."""
    global _registered
    reason = cupti_unavailable_reason()
    if reason:
        raise ProfileError(reason)
    from cupti import cupti

    with _lock:
        _records.clear()
    try:
        if not _registered:
            cupti.activity_register_callbacks(_buffer_requested, _buffer_completed)
            _registered = True
        cupti.activity_enable(cupti.ActivityKind.CONCURRENT_KERNEL)
    except Exception as exc:
        raise ProfileError(f"CUPTI refused to record kernels: {exc}") from None
    try:
        walls = run_calls()
    finally:
        try:
            cupti.activity_flush_all(1)
            cupti.activity_disable(cupti.ActivityKind.CONCURRENT_KERNEL)
        except Exception:
            pass
    deadline = time.monotonic() + 2.0
    while True:
        with _lock:
            records = list(_records)
        if records or time.monotonic() > deadline:
            break
        time.sleep(0.01)
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
            )
        )
    if not events:
        raise ProfileError("CUPTI recorded no kernels during the profiled calls")
    return events, walls
