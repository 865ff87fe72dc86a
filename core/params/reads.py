"""How the streamed loader's readers read an archive: through the page cache, or around it with O_DIRECT.

A warm archive is read fastest through the page cache (a memory copy). A cold
one read that way costs the disk's time and then the kernel's copy out of
the cache, and on a fast NVMe array the copy is what limits. O_DIRECT reads
the disk straight into the pinned staging slot, so a cold load can reach the
disk's own speed. Whether a file is cold is measured (`page_cache.resident_share`),
not guessed.

O_DIRECT wants the buffer address, the file offset and the length aligned to
the device's logical block size (`ALIGNMENT`, 4096, is safe for every one).
Chunks are not: a parameter starts wherever the archive put it. So a direct
read covers the chunk's aligned superset (start rounded down, end up) into a
slot that is `SLOT_PADDING` larger than a chunk, starting at the slot's first
aligned address, and the copy to the device starts at the chunk's own first
byte inside it. Nothing is read twice and no bounce buffer is needed. Where
the filesystem refuses O_DIRECT (EINVAL on open or on a read), the file is
read through the page cache instead, and the reason is kept to be said once.
"""

from __future__ import annotations

import errno
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gputop.core.params.page_cache import COLD_BELOW, resident_share

__all__ = ["ALIGNMENT", "READ_PATHS", "SLOT_PADDING", "ArchiveFile", "open_archive_file", "read_buffered"]

ALIGNMENT = 4096
# A slot holds a chunk plus: up to ALIGNMENT-1 bytes before its first aligned address, the chunk's
# unaligned head (up to ALIGNMENT-1), and its end rounded up to a block (up to ALIGNMENT-1).
SLOT_PADDING = 3 * ALIGNMENT
READ_PATHS = ("auto", "page-cache", "o_direct")  # StreamOptions.read_path
_REFUSALS = (errno.EINVAL, errno.EOPNOTSUPP, errno.EFAULT)


@dataclass
class ArchiveFile:
    """One archive opened for a load: a buffered descriptor always, an O_DIRECT one while it is read cold."""

    path: str
    fd: int
    direct_fd: int | None
    note: str | None = None  # why O_DIRECT was wanted and not used, once
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _retired: list[int] = field(default_factory=list)

    @property
    def direct(self) -> bool:
        return self.direct_fd is not None

    def read_chunk(self, slot: np.ndarray, offset: int, length: int) -> tuple[int, bool]:
        """File bytes [offset, offset + length) into the slot: where in the slot they start, and whether directly.

        Readers on several threads share the file; each reads its own slot.
        """
        direct_fd = self.direct_fd
        if direct_fd is not None:
            try:
                return _read_direct(direct_fd, slot, offset, length), True
            except OSError as exc:
                if exc.errno not in _REFUSALS:
                    raise
                self._refuse(f"O_DIRECT reads of {Path(self.path).name} refused ({os.strerror(exc.errno or 0)})")
        read_buffered(self.fd, slot[:length], offset)
        return 0, False

    def close(self) -> None:
        for fd in (self.fd, self.direct_fd, *self._retired):
            if fd is not None:
                os.close(fd)

    def _refuse(self, why: str) -> None:
        """Stop reading directly; the descriptor closes with the file (another reader may be inside a read)."""
        with self._lock:
            if self.note is None:
                self.note = f"{why}: read through the page cache"
            if self.direct_fd is not None:
                self._retired.append(self.direct_fd)
                self.direct_fd = None


def open_archive_file(path: str, read_path: str = "auto") -> ArchiveFile:
    """Open an archive for a load; with `auto`, O_DIRECT when under half of the file is in the page cache."""
    fd = os.open(path, os.O_RDONLY)
    if read_path == "page-cache":
        return ArchiveFile(path, fd, None)
    if read_path == "auto":
        share = resident_share(Path(path))
        if share is None or share >= COLD_BELOW:
            return ArchiveFile(path, fd, None)
    try:
        direct_fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError as exc:
        reason = os.strerror(exc.errno or 0)
        note = f"the filesystem of {Path(path).name} refuses O_DIRECT ({reason}): read through the page cache"
        return ArchiveFile(path, fd, None, note)
    return ArchiveFile(path, fd, direct_fd)


def _read_direct(fd: int, slot: np.ndarray, offset: int, length: int) -> int:
    """An aligned O_DIRECT read covering [offset, offset + length) into the slot; where the bytes start in it."""
    base = -int(slot.ctypes.data) % ALIGNMENT
    head = offset % ALIGNMENT
    span = (head + length + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
    if base + span > slot.size:
        raise ValueError(f"staging slot of {slot.size} bytes too small for a direct read of {span}")
    memory = memoryview(slot[base : base + span].data).cast("B")
    position, needed = offset - head, head + length
    got = 0
    while got < needed:
        count = os.preadv(fd, [memory[got:]], position + got)
        if count <= 0:
            raise RuntimeError(f"DATA_LOSS; the parameter file ended at byte {position + got} before its index said")
        got += count
        if got < needed and got % ALIGNMENT:  # a short read off a block boundary: the file's end
            raise RuntimeError(f"DATA_LOSS; the parameter file ended at byte {position + got} before its index said")
    return base + head


def read_buffered(fd: int, view: np.ndarray, offset: int) -> None:
    """`preadv` until `view` is full (reads may come back short), releasing the GIL while it reads."""
    memory = memoryview(view.data).cast("B")
    while memory:
        got = os.preadv(fd, [memory], offset)
        if got <= 0:
            raise RuntimeError(f"DATA_LOSS; the parameter file ended at byte {offset} before its index said")
        memory, offset = memory[got:], offset + got
