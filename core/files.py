"""One gate for every file a user hands gputop (exists, is a file, can be read, is not empty), and its digest.

Modules, parameters, inputs, references, profiles, captures and run specs all
arrive as paths on the command line, and each way a path can be wrong must end
in one line, not a traceback or a hang: a FIFO named `model.mlir` would block
a reader forever, so only regular files pass.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from gputop.core.errors import UsageError

__all__ = ["file_sha256", "require_file"]


def require_file(path: Path, what: str = "", *, allow_empty: bool = False) -> int:
    """The file's size in bytes, or a UsageError saying what is wrong with `path`."""
    name = f"{what} {path}" if what else str(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise UsageError(f"{name}: no such file") from None
    except PermissionError:
        raise UsageError(f"{name}: permission denied") from None
    except OSError as exc:
        raise UsageError(f"{name}: cannot read ({exc.strerror})") from None
    if stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{name}: is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{name}: not a regular file (a pipe or device cannot be read as a whole)")
    if not os.access(path, os.R_OK):
        raise UsageError(f"{name}: permission denied")
    if info.st_size == 0 and not allow_empty:
        raise UsageError(f"{name}: file is empty")
    return info.st_size


def file_sha256(path: Path) -> str:
    """SHA-256 of a file, read in 4 MiB pieces (a model can be gigabytes): the cache's digests, a report's target."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while piece := handle.read(4 << 20):
            digest.update(piece)
    return digest.hexdigest()
