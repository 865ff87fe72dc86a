"""Whether a model's parameters can be placed on a device, decided before any byte is loaded.

A parameter the device cannot hold used to fail minutes into a load with an
allocator's `RESOURCE_EXHAUSTED` that named neither the parameter nor the
limit. Here each parameter of the archives is compared with what the device
allows one allocation (Vulkan's `maxMemoryAllocationSize` and `maxBufferSize`,
read through the loader: IREE 3.13 puts each parameter in one allocation and
refuses larger ones without sparse binding), and all of them together with the
memory that is free (NVML on NVIDIA GPUs, `VK_EXT_memory_budget` elsewhere,
the host's available memory for the CPU and software Vulkan). The first
parameter that cannot be placed is named in one line with its size and the
limit, and where the figure comes from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import psutil

from gputop.core.errors import ParameterPlacementError
from gputop.core.params.archive import ParameterEntry
from gputop.core.records.devices import DeviceInfo
from gputop.core.units import human_bytes
from gputop.core.watch import nvml

__all__ = ["DeviceRoom", "ParameterPlacementError", "check_placement", "device_room"]


@dataclass(frozen=True)
class DeviceRoom:
    """What one device allows a single parameter and all of them, and where each figure comes from."""

    max_allocation_bytes: int | None = None
    max_allocation_source: str | None = None  # e.g. "maxMemoryAllocationSize"
    max_binding_bytes: int | None = None  # maxStorageBufferRange: the most one dispatch binds
    free_bytes: int | None = None
    free_source: str | None = None  # "NVML", "VK_EXT_memory_budget", "host memory available"
    zero_copy_files: bool = False  # host-memory devices map file-backed parameters instead of copying them


def device_room(device: DeviceInfo, mode: str) -> DeviceRoom:
    """The limits of `device` for loading parameters by `mode` (mmap, file_async, streamed)."""
    host_memory = device.backend.startswith("local") or device.kind in ("cpu", "software-gpu")
    # IREE maps file-backed parameters in place on the CPU (a 0.5 GiB model in 7 ms); lavapipe
    # imports small files only (236 MiB in 54 ms, 256 MiB copied in 1.2 s), so it is counted as copying.
    zero_copy = device.backend.startswith("local") and mode == "mmap"
    max_allocation = max_source = max_binding = None
    limits = None
    if device.backend == "vulkan":  # one Vulkan query (an instance made and destroyed): limits and budget
        from gputop.core.module.vulkan_limits import limits_for_uuid

        limits = limits_for_uuid(device.uuid)
        if limits is not None:
            max_allocation, max_source = limits.max_memory_allocation_size, "maxMemoryAllocationSize"
            if limits.max_buffer_size is not None and limits.max_buffer_size < max_allocation:
                max_allocation, max_source = limits.max_buffer_size, "maxBufferSize"
            max_binding = limits.max_storage_buffer_range
    free = free_source = None
    gpu = nvml.match_gpu(device.uuid, device.name) if device.kind == "gpu" else None
    if gpu is not None and (used := nvml.memory_used(gpu.index)) is not None:
        free, free_source = used[1] - used[0], "NVML"
    elif host_memory:
        free, free_source = int(psutil.virtual_memory().available), "host memory available"
    elif limits is not None and limits.device_local_budget_bytes is not None:
        free, free_source = limits.device_local_budget_bytes, "VK_EXT_memory_budget"
    return DeviceRoom(max_allocation, max_source, max_binding, free, free_source, zero_copy)


def check_placement(entries: Sequence[ParameterEntry], device: DeviceInfo, room: DeviceRoom) -> list[str]:
    """Raise `ParameterPlacementError` if a parameter or the whole cannot be placed; return warnings."""
    if room.max_allocation_bytes is not None:
        too_large = [e for e in entries if e.length > room.max_allocation_bytes]
        if too_large:
            worst = max(too_large, key=lambda e: e.length)
            more = f" (and {len(too_large) - 1} more)" if len(too_large) > 1 else ""
            raise ParameterPlacementError(
                f"parameter '{worst.key}' ({human_bytes(worst.length, 2)}) in {worst.path.name} cannot be placed on "
                f"{device.id}: one allocation may hold at most {human_bytes(room.max_allocation_bytes, 2)} "
                f"({room.max_allocation_source}) and IREE keeps each parameter in one allocation{more}"
            )
    needed = sum(e.length for e in entries if e.splat is not None or not room.zero_copy_files)
    if room.free_bytes is not None and needed > room.free_bytes:
        largest = max(entries, key=lambda e: e.length)
        raise ParameterPlacementError(
            f"the parameters need {human_bytes(needed, 2)} on {device.id} but only {human_bytes(room.free_bytes, 2)} "
            f"is free ({room.free_source}); the largest is '{largest.key}' ({human_bytes(largest.length, 2)})"
        )
    warnings = []
    if room.max_binding_bytes is not None:
        wide = [e for e in entries if e.length > room.max_binding_bytes]
        if wide:
            worst = max(wide, key=lambda e: e.length)
            warnings.append(
                f"{len(wide)} parameter(s) exceed {device.id}'s maxStorageBufferRange "
                f"({human_bytes(room.max_binding_bytes, 2)}), "
                f"the largest '{worst.key}' ({human_bytes(worst.length, 2)}): "
                "a dispatch that binds one of them whole will fail"
            )
    return warnings
