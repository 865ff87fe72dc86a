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

A file that is (nearly) all in the page cache is not read with `preadv`
but copied out of a read-only mapping of it, unmapped behind the readers
(`mapped_file`); one that is partly cached is read with `preadv`, whose
readahead fetches the missing pages better than a mapping's faults do.
"""

from __future__ import annotations

import errno
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from gputop.core.params.mapped_file import MappedFile, map_file
from gputop.core.params.page_cache import COLD_BELOW, resident_share

__all__ = [
    "ALIGNMENT", "MAPPED_FROM", "READ_PATHS", "SLOT_PADDING", "ArchiveFile", "ReadHow", "open_archive_file",
    "read_buffered",
]  # fmt: skip

ALIGNMENT = 4096
# A slot holds a chunk plus: up to ALIGNMENT-1 bytes before its first aligned address, the chunk's
# unaligned head (up to ALIGNMENT-1), and its end rounded up to a block (up to ALIGNMENT-1).
SLOT_PADDING = 3 * ALIGNMENT
READ_PATHS = ("auto", "page-cache", "mapped", "o_direct")  # StreamOptions.read_path
# From this share of the file resident, `auto` copies out of a mapping: a page that is not cached costs a
# fault that reads it alone (with the mapping's small read-around), where preadv's readahead reads ahead.
MAPPED_FROM = 0.9
ReadHow = Literal["o_direct", "mapped", "page-cache"]  # how one chunk was read
_REFUSALS = (errno.EINVAL, errno.EOPNOTSUPP, errno.EFAULT)


@dataclass
class ArchiveFile:
    """One archive opened for a load: a buffered descriptor always, an O_DIRECT one while it is read cold, a
    mapping while it is read warm."""

    path: str
    fd: int
    direct_fd: int | None
    note: str | None = None  # why O_DIRECT or a mapping was wanted and not used, once
    mapping: MappedFile | None = None  # read_path mapped: the file mapped read-only
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _retired: list[int] = field(default_factory=list)

    @property
    def direct(self) -> bool:
        return self.direct_fd is not None

    def read_chunk(self, slot: np.ndarray, offset: int, length: int) -> tuple[int, ReadHow]:
        """File bytes [offset, offset + length) into the slot: where in the slot they start, and how they came.

        Readers on several threads share the file; each reads its own slot.
        """
        if self.mapping is not None:
            self.mapping.copy_into(int(slot.ctypes.data), offset, length)
            return 0, "mapped"
        direct_fd = self.direct_fd
        if direct_fd is not None:
            try:
                return _read_direct(direct_fd, slot, offset, length), "o_direct"
            except OSError as exc:
                if exc.errno not in _REFUSALS:
                    raise
                self._refuse(f"O_DIRECT reads of {Path(self.path).name} refused ({os.strerror(exc.errno or 0)})")
        read_buffered(self.fd, slot[:length], offset)
        return 0, "page-cache"

    def expect(self, offset: int, length: int) -> None:
        """A chunk that a reader will read (a mapped file keeps its bytes mapped until then)."""
        if self.mapping is not None:
            self.mapping.expect(offset, length)

    def close(self) -> None:
        """Close the descriptors and unmap what the readers left mapped; the readers have stopped by now."""
        if self.mapping is not None:
            self.mapping.close()
            self.mapping = None
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
    """Open an archive for a load; with `auto`, O_DIRECT when under half of the file is in the page cache,
    copied out of a mapping when nearly all of it is, `preadv` through the cache in between."""
    fd = os.open(path, os.O_RDONLY)
    if read_path == "page-cache":
        return ArchiveFile(path, fd, None)
    if read_path == "mapped":
        return _mapped(path, fd)
    if read_path == "auto":
        share = resident_share(Path(path))
        if share is None:
            return ArchiveFile(path, fd, None)
        if share >= MAPPED_FROM:
            return _mapped(path, fd)
        if share >= COLD_BELOW:
            return ArchiveFile(path, fd, None)
    try:
        direct_fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError as exc:
        reason = os.strerror(exc.errno or 0)
        note = f"the filesystem of {Path(path).name} refuses O_DIRECT ({reason}): read through the page cache"
        return ArchiveFile(path, fd, None, note)
    return ArchiveFile(path, fd, direct_fd)


def _mapped(path: str, fd: int) -> ArchiveFile:
    """The archive mapped read-only; read with preadv where it cannot be mapped."""
    mapping = map_file(fd)
    if isinstance(mapping, str):
        return ArchiveFile(path, fd, None, f"{Path(path).name} cannot be mapped ({mapping}): read with preadv")
    return ArchiveFile(path, fd, None, mapping=mapping)


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
