"""A warm archive mapped read-only, copied out by the readers, and unmapped behind them as they go.

The streamed loader's readers copy every byte of a warm archive from the page
cache into pinned staging. Copying out of a mapping of the file (`memmove`,
with the GIL released and the page faults taken inside it) finished that
stream sooner than `preadv` in 21 of 26 pairs on four H100 and two H200
hosts, by 4-11% a host (BENCHMARKS.md). Dropping the mapping's page tables
at the end cost about 7 ms between the last byte and the context, though, on
the loading thread or on a thread of its own alike (most likely because the
unmap holds the address space's lock, which the driver's work after the
load then waits for). So the mapping
is cut into windows, the readers say which bytes they will copy (`expect`),
and the reader that copies the last expected byte of a window unmaps that
window on the spot. By the last byte almost nothing is left mapped, and the
process's resident memory (the host figure gputop shows) does not keep the
archive either.

A mapping turns a file cut short under it into SIGBUS, where `preadv` would
return short: every copy is checked against the size the file had when it
was mapped, and a file truncated while it loads is the one case left, as it
is for IREE's own `mmap` mode.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import threading

__all__ = ["WINDOW_BYTES", "MappedFile", "map_file"]

WINDOW_BYTES = 256 * 2**20  # a multiple of every page and fault-around size: a fault never crosses into the next
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.restype = ctypes.c_int
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_FAILED = ctypes.c_void_p(-1).value


class MappedFile:
    """One file mapped whole, in windows that are unmapped once every byte expected of them was copied."""

    def __init__(self, address: int, size: int, window_bytes: int = WINDOW_BYTES) -> None:
        self.address = address
        self.size = size
        self.window_bytes = window_bytes
        count = (size + window_bytes - 1) // window_bytes
        self._pending = [0] * count  # bytes still to be copied out of each window
        self._mapped = [True] * count
        self._lock = threading.Lock()

    def expect(self, offset: int, length: int) -> None:
        """A reader will copy [offset, offset + length): its windows stay mapped until it has."""
        with self._lock:
            for window, overlap in self._windows(offset, length):
                self._pending[window] += overlap

    def copy_into(self, destination: int, offset: int, length: int) -> None:
        """Copy [offset, offset + length) to `destination`, then unmap the windows this copy finished."""
        if offset + length > self.size:  # past the end a mapping raises SIGBUS: say it as preadv would
            raise RuntimeError(f"DATA_LOSS; the parameter file ended at byte {self.size} before its index said")
        ctypes.memmove(destination, self.address + offset, length)  # ctypes releases the GIL
        finished = []
        with self._lock:
            for window, overlap in self._windows(offset, length):
                self._pending[window] -= overlap
                if self._pending[window] <= 0 and self._mapped[window]:
                    self._mapped[window] = False
                    finished.append(window)
        for window in finished:  # outside the lock: other readers go on copying meanwhile
            self._unmap(window)

    def close(self) -> None:
        """Unmap what is still mapped (windows no reader touched, or the rest of a load that failed)."""
        with self._lock:
            left = [window for window, mapped in enumerate(self._mapped) if mapped]
            for window in left:
                self._mapped[window] = False
        for window in left:
            self._unmap(window)

    def mapped_windows(self) -> int:
        with self._lock:
            return sum(self._mapped)

    def _windows(self, offset: int, length: int) -> list[tuple[int, int]]:
        """The windows [offset, offset + length) overlaps within the file, and by how many bytes each."""
        spans = []
        position, end = offset, min(offset + length, self.size)  # past the end: copy_into says DATA_LOSS
        while position < end:
            window = position // self.window_bytes
            stop = min(end, (window + 1) * self.window_bytes)
            spans.append((window, stop - position))
            position = stop
        return spans

    def _unmap(self, window: int) -> None:
        start = window * self.window_bytes
        length = min(start + self.window_bytes, self.size) - start
        _libc.munmap(self.address + start, length)  # ctypes releases the GIL; munmap rounds up to a page


def map_file(fd: int, window_bytes: int = WINDOW_BYTES) -> MappedFile | str:
    """The open file mapped read-only and shared (its page cache, no copy), or why it cannot be.

    `window_bytes` is a multiple of the page size."""
    size = os.fstat(fd).st_size
    if size == 0:
        return "it is empty"
    address = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if address is None or address == _MAP_FAILED:
        return os.strerror(ctypes.get_errno())
    return MappedFile(int(address), size, window_bytes)
