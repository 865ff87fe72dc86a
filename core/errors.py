"""gputop's own error types, each carrying a one-line message and an exit code.

Every failure a user can cause or meet (a bad file, a device that is not
there, a compiler crash) is raised as one of these, so the command line can
print one line and exit with the documented code instead of a traceback. The
exit codes are part of gputop's contract: 0 ok, 2 usage, 3 compile, 4 device
unavailable, 5 runtime, 6 output check failed, 7 a regression against a
baseline (`gputop compare --fail-above`, `gputop run --baseline --fail-above`:
the gated time is significantly slower by more than the threshold), 130/143
interrupted (129: the terminal hung up).
"""

from __future__ import annotations

import errno
import os
from typing import Any

__all__ = [
    "EXIT_CHECK",
    "EXIT_COMPILE",
    "EXIT_DEVICE",
    "EXIT_OK",
    "EXIT_REGRESSION",
    "EXIT_RUNTIME",
    "EXIT_SIGHUP",
    "EXIT_SIGINT",
    "EXIT_SIGPIPE",
    "EXIT_SIGTERM",
    "EXIT_UNDECIDED",
    "EXIT_USAGE",
    "CaptureError",
    "CompileError",
    "ControlUnavailable",
    "ConvertError",
    "DeviceUnavailableError",
    "EngineExited",
    "GputopError",
    "Interrupted",
    "ParameterPlacementError",
    "ProfileError",
    "RuntimeFailure",
    "UnwritableFile",
    "UnwritableFolder",
    "UsageError",
    "no_space_left",
    "unwritable_file",
]

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_COMPILE = 3
EXIT_DEVICE = 4
EXIT_RUNTIME = 5
EXIT_CHECK = 6
EXIT_REGRESSION = 7  # gputop compare / run --baseline with --fail-above: significantly slower than the threshold
# ... and the runs cannot tell: slower beyond chance (or their kernels slower beyond their floor) by more than the
# threshold, within how far their own calls wandered. The gate fails closed rather than pass a noisy pair.
EXIT_UNDECIDED = 8
EXIT_NOT_EXECUTABLE = 126  # gputop -- CMD: CMD is there but cannot be run (a shell's code)
EXIT_NOT_FOUND = 127  # gputop -- CMD: no such command (a shell's code)
EXIT_SIGINT = 130
EXIT_SIGTERM = 143
EXIT_SIGHUP = 129  # the terminal went away (a dropped SSH session): the run is recorded as interrupted
EXIT_SIGPIPE = 141  # the reader of our output left (`gputop sessions | head`): quiet, as a shell tool is


class GputopError(Exception):
    """An error meant for the user: one line, plus where the details are."""

    exit_code: int = EXIT_RUNTIME

    def __init__(self, message: str, *, log_path: str | None = None) -> None:
        # Keep the message to one line: multi-line tool output belongs in a log.
        first_line = message.strip().splitlines()[0] if message.strip() else "error"
        super().__init__(first_line)
        self.message = first_line
        self.log_path = log_path

    def __str__(self) -> str:
        if self.log_path:
            return f"{self.message} (full log: {self.log_path})"
        return self.message


class UsageError(GputopError):
    """Bad arguments or input files: the user can fix the command line."""

    exit_code = EXIT_USAGE


class CompileError(GputopError):
    """The compiler rejected the module or crashed; `diagnostics` holds what it said."""

    exit_code = EXIT_COMPILE
    diagnostics: tuple[Any, ...] = ()
    output: str = ""  # all the compiler printed (also in the log): known failures are matched against it
    # Where the first error is, in a file the user can open: (file, line, column). A dumped dispatch
    # source kept after the failure, or the module itself; None where the compiler gave no location.
    located_at: tuple[str, int, int] | None = None


class DeviceUnavailableError(GputopError):
    """The requested device does not exist or its driver cannot be loaded."""

    exit_code = EXIT_DEVICE


class RuntimeFailure(GputopError):
    """Loading, context creation or a call failed at run time."""

    exit_code = EXIT_RUNTIME


class ProfileError(GputopError):
    """A profile pass could not be taken or its records not read (the run goes on without it)."""

    exit_code = EXIT_RUNTIME


class CaptureError(GputopError):
    """A RenderDoc capture could not be taken, verified or read."""

    exit_code = EXIT_RUNTIME


class Interrupted(GputopError):
    """The run was stopped by SIGINT or SIGTERM."""

    def __init__(self, message: str, *, exit_code: int = EXIT_SIGINT) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class EngineExited(GputopError):
    """The engine process a viewer started ended before its run could be followed: its own line and exit code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class ParameterPlacementError(RuntimeFailure):
    """A parameter, or the model as a whole, cannot be placed on the device (found before loading)."""


class ControlUnavailable(UsageError):
    """A run's control channel cannot be reached (it ended, or it is not this user's)."""


class UnwritableFolder(RuntimeFailure):
    """A folder gputop must write cannot be (read-only, full, not ours): the folder, why, and what to set."""

    def __init__(self, folder: object, exc: OSError, variable: str = "GPUTOP_STATE_DIR") -> None:
        why = exc.strerror or str(exc)
        super().__init__(f"cannot write {folder}: {why} (set {variable} to a writable folder)")
        self.folder = folder


class UnwritableFile(RuntimeFailure):
    """A file of the run's own cannot be written mid-run (a disk that filled, one remounted read-only).

    Its line names the file and why, as a full `samples.jsonl` does, never a traceback: the error path
    that would keep one cannot write it either.
    """

    def __init__(self, path: str | os.PathLike[str], why: str, variable: str = "GPUTOP_STATE_DIR") -> None:
        super().__init__(f"cannot write {path}: {why} (free space or set {variable} to a writable folder)")
        self.path = path


# What a disk says when it cannot take a write: full, over quota, read-only. Any other OSError is a bug's.
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})


def no_space_left(path: str | os.PathLike[str]) -> bool:
    """Whether the disk under `path` (a file, or the folder it was to be in) has no room left."""
    for where in (os.fspath(path), os.path.dirname(os.fspath(path)) or "."):
        try:
            return os.statvfs(where).f_bavail == 0
        except OSError:
            continue
    return False


def unwritable_file(exc: OSError, where: str | os.PathLike[str]) -> UnwritableFile | None:
    """`exc` as an `UnwritableFile` when a disk refused a write, else None (the error is not the disk's).

    `where` is the file or folder being written, named when `exc` names none (a write to an open file
    fails without a name). NumPy's short write (`262144 requested and 118752 written`) carries no errno:
    the disk is asked, before the partial file is removed (which gives room back).
    """
    path = exc.filename or where
    if exc.errno in DISK_ERRNOS:
        return UnwritableFile(path, exc.strerror or os.strerror(exc.errno))
    if exc.errno is None and no_space_left(path):
        return UnwritableFile(path, os.strerror(errno.ENOSPC))
    return None


class ConvertError(Exception):
    """A failure of the ONNX conversion child, said in one line (it crosses a process boundary as text)."""
