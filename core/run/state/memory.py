"""The run's memory: the newest sample, the live bytes' recent history, the peaks, and the module's weights.

A state part (see `gputop.core.run.state`): its events take the run's lock
and publish (a sample within the publishing interval, the weights at once).
`fields()` is its piece of every snapshot;
`summary_fields()` its piece of the run's report (the peaks).
"""

from __future__ import annotations

from collections import deque
from typing import TypedDict

from gputop.core.records.memory import MemorySample, ModuleBytes
from gputop.core.run.state.link import RunLink

__all__ = ["MEMORY_HISTORY", "MemoryFields", "MemoryState", "MemorySummaryFields"]

MEMORY_HISTORY = 120  # samples the sparkline shows


class MemoryFields(TypedDict):
    """The snapshot's fields this part fills."""

    memory: MemorySample | None
    memory_history: tuple[int, ...]
    module_bytes: tuple[ModuleBytes, ...]


class MemorySummaryFields(TypedDict):
    """The run summary's fields this part fills."""

    peak_live_bytes: tuple[tuple[str, int], ...]
    host_rss_peak_bytes: int
    memory_samples: int


class MemoryState:
    """The sampler's newest sample, the total live device bytes of the newest MEMORY_HISTORY, and the peaks."""

    def __init__(self, link: RunLink | None = None) -> None:
        self.link = link or RunLink.alone()
        self.latest: MemorySample | None = None
        self.history: deque[int] = deque(maxlen=MEMORY_HISTORY)  # live device bytes, oldest first
        self.peak_live: dict[str, int] = {}  # per device: the most live or peak pool bytes seen
        self.peak_rss = 0
        self.samples = 0
        self.module_bytes: tuple[ModuleBytes, ...] = ()  # per device, once the module's context exists

    def add(self, sample: MemorySample) -> None:
        """A sample from the sampler thread: pools, device and host; the peaks take it in."""
        with self.link.lock:
            self.latest = sample
            self.samples += 1
            self.peak_rss = max(self.peak_rss, sample.host_rss_bytes)
            total_live = 0
            for dev in sample.devices:
                live = sum(p.live_bytes for p in dev.pools)
                peak = max((p.peak_bytes for p in dev.pools), default=0)
                self.peak_live[dev.device_id] = max(self.peak_live.get(dev.device_id, 0), live, peak)
                total_live += live
            self.history.append(total_live)
        self.link.publish(False)

    def set_module_bytes(self, module_bytes: tuple[ModuleBytes, ...]) -> None:
        """The module's weights per device, once its context exists (the Memory pane's weights row)."""
        with self.link.lock:
            self.module_bytes = module_bytes
        self.link.publish(True)

    def fields(self) -> MemoryFields:
        return MemoryFields(memory=self.latest, memory_history=tuple(self.history), module_bytes=self.module_bytes)

    def summary_fields(self) -> MemorySummaryFields:
        return MemorySummaryFields(
            peak_live_bytes=tuple(self.peak_live.items()),
            host_rss_peak_bytes=self.peak_rss,
            memory_samples=self.samples,
        )
