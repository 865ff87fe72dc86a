"""Memory sampling: each device's allocator pools, the whole GPU, and the host process.

A sampler thread reads, at a fixed rate, what the IREE allocator of every
device of the run holds (peak, allocated, freed, live per memory type), the
device memory in use from NVML on NVIDIA GPUs, and the process's resident
set size. It never blocks the runner: reading allocator statistics takes a
lock inside IREE for microseconds, and NVML does not need a CUDA context.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import psutil

from gputop.core import nvml
from gputop.core.snapshot import DeviceInfo, DeviceMemory, MemorySample, PoolStats

__all__ = ["MemorySampler", "PoolReader"]

PoolReader = Callable[[], list[tuple[str, tuple[PoolStats, ...]]]]


class MemorySampler:
    """Calls `on_sample(MemorySample)` every `interval_s` until stopped."""

    def __init__(
        self,
        devices: list[DeviceInfo],
        read_pools: PoolReader,
        on_sample: Callable[[MemorySample], None],
        interval_s: float = 0.1,
    ) -> None:
        self._devices = devices
        self._read_pools = read_pools
        self._on_sample = on_sample
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._process = psutil.Process()
        self._nvml_index = {}
        for info in devices:
            gpu = nvml.match_gpu(info.uuid, info.name) if info.kind == "gpu" else None
            if gpu is not None:
                self._nvml_index[info.id] = gpu.index
        self._thread = threading.Thread(target=self._loop, name="gputop-memory", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)

    def sample(self) -> MemorySample:
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

    def _loop(self) -> None:
        # Re-arm after each sample so a slow read never piles up samples.
        while not self._stop.wait(self._interval_s):
            try:
                self._on_sample(self.sample())
            except Exception:  # a failed read skips one sample, never kills the run
                continue
