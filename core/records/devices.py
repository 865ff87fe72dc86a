"""The devices a run can use or watch.

`DeviceInfo` is what device discovery (`module.device_discovery`) finds and what every
runner, profiler and loader is handed: its own module because almost every
other part of the engine needs it and nothing else of the records.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputop.core.records.base import now

__all__ = ["DeviceInfo"]


@dataclass(frozen=True)
class DeviceInfo:
    """One device gputop can run on or watch, or a backend that is missing."""

    id: str
    backend: str
    name: str
    memory_total_bytes: int | None
    compile_target: tuple[str, ...] | None
    available: bool
    reason: str | None = None
    kind: str = "gpu"  # gpu, cpu, software-gpu (lavapipe), monitor, host
    uuid: str | None = None
    driver_info: str | None = None
    uri: str | None = None  # what IREE's tools take as --device= (paths, since vulkan://N is refused)
    timestamp: float = field(default_factory=now)

    @property
    def runnable(self) -> bool:
        """Whether gputop can run modules on it (not only watch it)."""
        return self.available and self.compile_target is not None
