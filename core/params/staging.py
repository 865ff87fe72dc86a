"""The streamed loader's buffers: pinned staging slots, kept in a pool, and the device buffers a load fills.

Pinned memory is slow to make and slow to free (on the H200, freeing 16
slots of 16 MiB held context creation 56 ms after the last byte), and a
program may ask for its parameters in many loads. So the slots live in a
`StagingPool` owned by the stream: a load takes what it needs, new slots are
made only when the pool has too few or too small ones, and the run frees
them all once, when it closes. Each slot has its own semaphore timeline, so
copies out of one slot never overtake each other. `DeviceTargets` makes
each parameter's device buffer when it is first asked for, which lets the
loading thread make them while the reads run. Every call here goes to IREE
from the loading thread: IREE's CUDA driver allocates on the calling
thread's CUDA context, and the reader threads have none.

Two kinds of slot (`StagingPool(imported=...)`). Allocated: pinned memory
the device's allocator makes and pins itself (cuMemHostAlloc on CUDA: 1.4-2.6
ms per 4 MiB slot on an H100, and each reader's first slot is made before the
reads can start). Imported: an anonymous mapping of the process's own on huge
pages, which costs microseconds to make; the reader's first read into it
faults its pages in (on the reader's thread, in parallel), and the loading
thread hands it to the driver (`import_host_allocation`, which page-locks it:
cuMemHostRegister) just before its first copy, when the pages are already
there. On the H100 that took the allocation before the first read from 14-28
ms to 0.3-0.6 ms (BENCHMARKS.md, issue 32).
"""

from __future__ import annotations

import contextlib
import mmap
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["DeviceTargets", "StagingPool", "StagingSlot"]

_HUGE_PAGE = 2 * 2**20


@dataclass
class StagingSlot:
    """A pinned staging buffer with its own timeline: copies out of one slot never overtake each other.

    `buffer` is None for an imported slot until the loading thread imports it (`StagingPool.ready`)."""

    buffer: Any
    mapping: Any  # keeps the mapping (and so `view`) alive
    view: np.ndarray
    semaphore: Any
    value: int = 0
    pending_bytes: int = 0

    def landed(self) -> bool:
        """Whether the slot's last copy has landed (asks the semaphore; never waits)."""
        return not self.pending_bytes or int(self.semaphore.query()) >= self.value


class StagingPool:
    """Pinned, mapped, host-local and device-visible slots for one device, kept until `release`: from its
    allocator, or (`imported`) the process's own memory, imported by `ready` before a slot's first copy."""

    def __init__(self, device: Any, *, cached: bool, imported: bool = False) -> None:
        import iree.runtime as rt

        self._rt = rt
        self._device = device
        # Cached: without HOST_CACHED, IREE's CUDA allocator makes write-combined pinned memory, which the
        # kernel's page-cache copy (preadv) fills far more slowly than ordinary memory.
        self._cached = cached
        self._imported = imported
        self.slots: list[StagingSlot] = []

    @property
    def bytes(self) -> int:
        return sum(len(slot.view) for slot in self.slots)

    def take(self, size: int, count: int, *, have: int = 0) -> list[StagingSlot]:
        """`count` slots of at least `size` bytes: the pool's (after the `have` already taken), then new ones
        (kept in the pool). Slots too small for `size` are freed and made again at that size."""
        if any(len(slot.view) < size for slot in self.slots):
            self.slots = [slot for slot in self.slots if len(slot.view) >= size]
        while len(self.slots) < have + count:
            self.slots.append(self._make(size))
        return self.slots[have : have + count]

    def release(self) -> None:
        """Free every slot (the pool makes new ones if asked again)."""
        self.slots = []

    def ready(self, slot: StagingSlot) -> Any:
        """The slot's device-visible buffer, importing its memory first if it has not been yet (loading thread)."""
        if slot.buffer is None:
            rt = self._rt
            slot.buffer = self._device.allocator.import_host_allocation(
                slot.view,
                memory_type=int(rt.MemoryType.HOST_LOCAL) | int(rt.MemoryType.DEVICE_VISIBLE),
                allowed_usage=int(rt.BufferUsage.TRANSFER_SOURCE),
            )
        return slot.buffer

    def _make(self, size: int) -> StagingSlot:
        rt = self._rt
        if self._imported:
            # No page is touched here. The slot starts on a 2 MiB boundary and asks for transparent huge pages:
            # an O_DIRECT read into 4 KiB pages is split into one segment per page, and the driver pins (and
            # the DMA walks) 512 times fewer pages.
            backing = mmap.mmap(-1, size + _HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            with contextlib.suppress(OSError, AttributeError):  # no THP here: 4 KiB pages, still correct
                backing.madvise(mmap.MADV_HUGEPAGE)
            whole = np.frombuffer(backing, dtype=np.uint8)
            skip = -int(whole.ctypes.data) % _HUGE_PAGE
            view = whole[skip : skip + size]
            return StagingSlot(None, backing, view, self._device.create_semaphore(0))
        memory_type = int(rt.MemoryType.HOST_LOCAL) | int(rt.MemoryType.DEVICE_VISIBLE)
        if self._cached:
            memory_type |= int(rt.MemoryType.HOST_CACHED)
        buffer = self._device.allocator.allocate_buffer(
            memory_type=memory_type,
            allowed_usage=int(rt.BufferUsage.TRANSFER_SOURCE | rt.BufferUsage.MAPPING_SCOPED),
            allocation_size=size,
        )
        mapping = buffer.map()
        view = mapping.asarray([size], np.dtype(np.uint8))
        return StagingSlot(buffer, mapping, view, self._device.create_semaphore(0))


class DeviceTargets:
    """The device buffers a load fills, each made when first asked for."""

    def __init__(self, makers: list[Callable[[], Any]]) -> None:
        self._makers = makers
        self._buffers: list[Any] = [None] * len(makers)
        self._locks = [threading.Lock() for _ in makers]

    def made(self, index: int) -> bool:
        return self._buffers[index] is not None

    def get(self, index: int) -> Any:
        with self._locks[index]:
            if self._buffers[index] is None:
                self._buffers[index] = self._makers[index]()
            return self._buffers[index]

    def all(self) -> list[Any]:
        return [self.get(i) for i in range(len(self._makers))]
