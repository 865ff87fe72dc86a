"""A watched program's memory, read from gputop's side: its RSS, NVML for its GPUs, its allocators' pools.

The watcher inside the program sends each device's `allocator.statistics`
(a dict of host and device bytes peak/allocated/freed); the engine turns them
into gputop's pools here and samples what the program's process and GPUs
hold with the memory sampler every gputop run uses, reading the program's
pid instead of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gputop.core.records.devices import DeviceInfo
from gputop.core.records.memory import MemorySample, PoolStats
from gputop.core.watch.memory_sampler import MemorySampler

__all__ = ["ProgramMemory", "pools_from"]


class ProgramMemory(MemorySampler):
    """The memory sampler, reading the watched process's RSS (not the engine's own)."""

    def __init__(
        self,
        devices: list[DeviceInfo],
        read_pools: Callable[[], list[tuple[str, tuple[PoolStats, ...]]]],
        on_sample: Callable[[MemorySample], None],
        interval_s: float,
        pid: int,
    ) -> None:
        super().__init__(devices, read_pools, on_sample, interval_s, pid=pid)
        self.latest_rss: int | None = None

    def sample(self) -> MemorySample:
        sample = super().sample()
        self.latest_rss = sample.host_rss_bytes
        return sample


def pools_from(device_id: str, stats: dict[str, Any]) -> tuple[PoolStats, ...]:
    """An allocator's `statistics` dict (host/device bytes peak/allocated/freed) as gputop's pools."""
    pools = []
    for memory_type in ("host", "device"):
        peak = stats.get(f"{memory_type}_bytes_peak")
        allocated = stats.get(f"{memory_type}_bytes_allocated")
        freed = stats.get(f"{memory_type}_bytes_freed")
        if not isinstance(allocated, int) or not isinstance(freed, int):
            continue
        pools.append(
            PoolStats(
                device_id=device_id,
                memory_type=memory_type.upper(),
                peak_bytes=int(peak or 0),
                allocated_bytes=allocated,
                freed_bytes=freed,
                live_bytes=max(allocated - freed, 0),
            )
        )
    return tuple(pools)


def pools_in_report(rows: object, devices: dict[str, DeviceInfo]) -> tuple[dict[str, tuple[PoolStats, ...]], int]:
    """A watcher's `memory` report's allocator statistics as pools per device id, and their live bytes in all;
    `devices` by the uri the watcher names them with (a device it has not reported is skipped)."""
    pools: dict[str, tuple[PoolStats, ...]] = {}
    live = 0
    for row in rows if isinstance(rows, list) else ():
        info = devices.get(str(row.get("device"))) if isinstance(row, dict) else None
        stats = row.get("statistics") if isinstance(row, dict) else None
        if info is None or not isinstance(stats, dict):
            continue
        pools[info.id] = pools_from(info.id, stats)
        live += sum(p.live_bytes for p in pools[info.id])
    return pools, live
