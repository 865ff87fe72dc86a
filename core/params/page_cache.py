"""Whether a file sits in the page cache, measured on the file itself, so a load can pick how to read it.

A parameter archive read from the page cache costs one memory copy per byte;
read from a cold disk through the page cache it costs the disk's time plus
that copy, and the copy is what keeps a buffered cold load under the disk's
speed. The streamed loader reads cold files with O_DIRECT instead
(`direct_read`), which is only a win when the pages are really not there,
and a hint (`posix_fadvise`) cannot say whether they are. `mincore(2)` can:
over a read-only mapping of the file (which faults nothing in) it reports,
page by page, what the kernel holds. Sampling evenly spread windows keeps
the cost of asking a few hundred system calls, whatever the file's size.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["COLD_BELOW", "resident_share"]

# Below this share of sampled pages resident, a file counts as cold and is read with O_DIRECT: O_DIRECT
# reads every byte from the disk, so a file that is mostly cached reads faster through the cache.
COLD_BELOW = 0.5
_WINDOW_PAGES = 16  # 64 KiB windows: one readahead's worth, so a window says what a read would meet
_SAMPLE_WINDOWS = 256


def _mincore() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    function = libc.mincore
    function.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    function.restype = ctypes.c_int
    return function


def resident_share(path: Path, windows: int = _SAMPLE_WINDOWS) -> float | None:
    """The share of the file's pages in the page cache, from `windows` evenly spread 64 KiB windows.

    `windows=0` asks about every page (exact; one byte of answer per 4 KiB of file).
    None when the kernel will not say (a file that cannot be mapped, such as one in /proc).
    """
    size = path.stat().st_size
    if size == 0:
        return 1.0
    page = mmap.PAGESIZE
    pages = (size + page - 1) // page
    if windows <= 0 or windows * _WINDOW_PAGES >= pages:
        spans = [(0, pages)]
    else:
        step = pages // windows
        spans = [(i * step, min(_WINDOW_PAGES, pages - i * step)) for i in range(windows)]
    mincore = _mincore()
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        with mmap.mmap(fd, size, prot=mmap.PROT_READ) as mapped:
            # NumPy reads the mapping's address from the buffer protocol, touching (faulting in) no page.
            array = np.frombuffer(mapped, dtype=np.uint8)
            base = int(array.ctypes.data)
            del array  # the mapping cannot close while a view of it lives
            resident = counted = 0
            answer = ctypes.create_string_buffer(max(count for _, count in spans))
            for first, count in spans:
                if mincore(ctypes.c_void_p(base + first * page), count * page, answer) != 0:
                    return None
                resident += int(np.count_nonzero(np.frombuffer(answer.raw, np.uint8, count) & 1))  # bit 0: resident
                counted += count
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    return resident / counted if counted else None
