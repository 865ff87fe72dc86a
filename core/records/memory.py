"""Memory at one moment: every device's allocator pools and use, and the host process.

The memory sampler builds these from the runners' `PoolStats`; the Memory
pane, the peaks of a run's report and its sparkline read them. `ModuleBytes`
says what the module itself brings (its weights), which the pools may not show.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputop.core.records.base import now

__all__ = ["DeviceMemory", "MemorySample", "ModuleBytes", "PoolStats"]


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


@dataclass(frozen=True)
class ModuleBytes:
    """The weights a loaded module holds for one device beside its calls' buffers, and whether the pools show them.

    An allocator's statistics (the pools) count what it allocates, and not alike on every backend, all seen
    with a 1 MiB inlined constant (IREE 3.13). local-task reads the constants in place from the mapped `.vmfb`
    (as it reads parameters mapped by mmap): no counter moves, and a model with 33.5 MB of weights inlined
    showed `DEVICE_LOCAL 48.0 KiB`, its input. Vulkan (lavapipe) uploads them as the context is made: the
    allocated bytes grow by exactly their size, and the pools' live bytes hold them. CUDA (H200) uploads them
    too (NVML's used memory grew 16.0 MiB for a 16 MiB constant) yet only the pools' peak grows: their
    allocated and live bytes stay 0. `loaded_bytes` and `loaded_peak_bytes` are those two growths, read
    around the parameters' load and context creation. `core/module/contents.py` says how the `.vmfb` is read.
    """

    device_id: str
    vmfb_bytes: int  # the .vmfb file
    constant_bytes: int | None  # constants inlined in it (its .bin entries); None where it could not be read
    executable_bytes: int | None  # the compiled kernels it embeds
    parameter_bytes: int  # read from parameter archives (--params, the weights an ONNX import moved out)
    loaded_bytes: int | None  # growth of the allocator's allocated device bytes while the module loaded; None: unread
    loaded_peak_bytes: int | None = None  # growth of its peak device bytes meanwhile (CUDA: where the weights show)
    devices: int = 1  # devices the module runs on: with several, the bytes above are the whole module's
    reason: str | None = None  # why constant_bytes is None
    timestamp: float = field(default_factory=now)
