"""Memory at one moment: every device's allocator pools and use, and the host process.

The memory sampler builds these from the runners' `PoolStats`; the Memory
pane, the peaks of a run's report and its sparkline read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputop.core.records.base import now

__all__ = ["DeviceMemory", "MemorySample", "PoolStats"]


@dataclass(frozen=True)
class PoolStats:
    """One memory type of one device's allocator: bytes peak/allocated/freed/live."""

    device_id: str
    memory_type: str
    peak_bytes: int
    allocated_bytes: int
    freed_bytes: int
    live_bytes: int


@dataclass(frozen=True)
class DeviceMemory:
    """What one device holds: its allocator's pools and, where known, the whole device."""

    device_id: str
    pools: tuple[PoolStats, ...] = ()
    device_used_bytes: int | None = None
    device_total_bytes: int | None = None
    source: str | None = None  # where device_used came from: nvml, opencl, host


@dataclass(frozen=True)
class MemorySample:
    """Memory of every device of the run plus the host process, at one moment."""

    devices: tuple[DeviceMemory, ...]
    host_rss_bytes: int
    host_total_bytes: int
    timestamp: float = field(default_factory=now)
