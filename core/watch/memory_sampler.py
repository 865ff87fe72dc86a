"""Memory sampling: each device's allocator pools, the whole GPU, and the host process.

A sampler thread reads, at a fixed rate, what the IREE allocator of every
device of the run holds (peak, allocated, freed, live per memory type), the
device memory in use from NVML on NVIDIA GPUs, and the process's resident
set size. It never blocks the runner: reading allocator statistics takes a
lock inside IREE for microseconds, and NVML does not need a CUDA context.
"""

from __future__ import annotations

from collections.abc import Callable

import psutil

from gputop.core.records.devices import DeviceInfo
from gputop.core.records.memory import DeviceMemory, MemorySample, PoolStats
from gputop.core.watch import nvml
from gputop.core.watch.watcher import Watcher

__all__ = ["MemorySampler", "PoolReader"]

PoolReader = Callable[[], list[tuple[str, tuple[PoolStats, ...]]]]


class MemorySampler(Watcher[MemorySample]):
    """Calls `on_sample(MemorySample)` every `interval_s` until stopped."""

    def __init__(
        self,
        devices: list[DeviceInfo],
        read_pools: PoolReader,
        on_sample: Callable[[MemorySample], None],
        interval_s: float = 0.1,
        pid: int | None = None,
    ) -> None:
        """`pid`: whose resident memory to read (a watched program's); this process's by default."""
        super().__init__("gputop-memory", interval_s, on_sample)
        self._devices = devices
        self._read_pools = read_pools
        self._process = psutil.Process(pid)
        self._nvml_index = {}
        for info in devices:
            gpu = nvml.match_gpu(info.uuid, info.name) if info.kind == "gpu" else None
            if gpu is not None:
                self._nvml_index[info.id] = gpu.index

    def look(self) -> MemorySample:
        return self.sample()

    def sample(self) -> MemorySample:
        """What every device's allocator, the devices and the process hold now (a run's end takes one last)."""
        pools = dict(self._read_pools())
        host = psutil.virtual_memory()
        devices = []
        for info in self._devices:
            used_total: tuple[int, int] | None = None
            source = None
            if info.id in self._nvml_index:
                used_total = nvml.memory_used(self._nvml_index[info.id])
                source = "nvml" if used_total else None
            elif info.backend.startswith("local"):
                used_total = (host.total - host.available, host.total)
                source = "host"
            devices.append(
                DeviceMemory(
                    device_id=info.id,
                    pools=pools.get(info.id, ()),
                    device_used_bytes=used_total[0] if used_total else None,
                    device_total_bytes=used_total[1] if used_total else info.memory_total_bytes,
                    source=source,
                )
            )
        return MemorySample(
            devices=tuple(devices),
            host_rss_bytes=int(self._process.memory_info().rss),
            host_total_bytes=int(host.total),
        )
