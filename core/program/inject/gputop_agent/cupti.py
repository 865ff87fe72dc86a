"""A profile of the program's next calls: CUDA kernel times through gputop's CUPTI, in the program's own process.

`Cupti` is cupti-python imported from gputop's environment into this program, once per
process (CUPTI takes one pair of activity callbacks per process: the loaded one is this
module's `_cupti`); `Profile` is one `profile` request, armed on the agent's thread and
run on the thread of the program's next call. The protocol's side of it (`kernels`,
`profile_refused`) is written down in the package's docstring.
"""

from __future__ import annotations

import os
import sys
import time

from .helpers import one_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["CUPTI_BUFFER_BYTES", "MAX_KERNEL_RECORDS", "Cupti", "Profile"]

CUPTI_BUFFER_BYTES = 8 * 1024 * 1024  # each activity buffer CUPTI asks for (as gputop's own profiler gives)
# Kernel records in one `kernels` line (about 200 bytes each): the engine takes lines up to 16 MiB (agent_link.py)
MAX_KERNEL_RECORDS = 50_000

_cupti: Cupti | None = None  # CUPTI, once loaded: its activity callbacks are registered once per process


class Cupti:
    """gputop's CUPTI (`cupti-python`), imported into this program from gputop's environment, once per process.

    Its activity callbacks are registered once (CUPTI takes one pair per process) and
    keep what CUPTI hands over until the agent's thread takes it.
    """

    def __init__(self, module: Any, source: str) -> None:
        import threading

        self.module = module
        self.kernel_kind = module.ActivityKind.CONCURRENT_KERNEL
        self.source = source
        self.library: str | None = None
        self.lock = threading.Lock()
        self.activities: list[Any] = []

    @staticmethod
    def load(paths: list[str]) -> tuple[Cupti | None, str]:
        """The process's CUPTI, imported from `paths` (gputop's folders) the first time; else None and why."""
        global _cupti
        if _cupti is not None:
            return _cupti, ""
        if not paths:
            return None, "gputop named no folder to import CUPTI's Python package (cupti) from"
        _preload_libcupti(paths)
        added = [p for p in paths if p not in sys.path]
        sys.path.extend(added)  # after the program's own folders: its own packages come first
        try:
            try:
                from cupti import cupti as module
            except Exception as exc:
                where = ", ".join(paths)
                return None, f"CUPTI's Python package (cupti) cannot be imported from {where}: {one_line(exc)}"
            try:
                # Its library and the driver load now, on the agent's thread, while gputop's folders are still
                # on the path (cupti-python finds its library through cuda.pathfinder at its first call).
                module.get_timestamp()
                folder = os.path.dirname(os.path.dirname(os.path.abspath(module.__file__ or "")))
                version = _distribution_version(folder, "cupti_python")
                cupti = Cupti(module, f"CUPTI {version}" if version else "CUPTI")
                module.activity_register_callbacks(cupti.buffer_requested, cupti.buffer_completed)
            except Exception as exc:
                return None, f"CUPTI cannot start in this program: {one_line(exc)}"
        finally:
            for path in reversed(added):
                _remove_last(sys.path, path)
        cupti.library = _loaded_library("libcupti.so")
        _cupti = cupti
        return cupti, ""

    def buffer_requested(self) -> tuple[int, int]:
        return CUPTI_BUFFER_BYTES, 0

    def buffer_completed(self, activities: list[Any]) -> None:
        with self.lock:
            self.activities.extend(activities)

    def has_records(self) -> bool:
        with self.lock:
            return bool(self.activities)

    def take(self) -> list[Any]:
        with self.lock:
            activities, self.activities = self.activities, []
        return activities

    def clear(self) -> None:
        self.take()


class Profile:
    """One profile request: armed on the agent's thread; started, timed and ended on the thread of the next call.

    States: armed, running (CUPTI records kernels), over. What a profile costs falls on
    its calls only: `activity_enable` before the first, two `get_timestamp` reads around
    each (CUPTI's clock, the one its records use), `activity_flush_all(1)` and
    `activity_disable` after the last.
    """

    def __init__(self, cupti: Cupti, calls: int, level: str, on_over: Callable[[Profile], None]) -> None:
        import threading

        self.cupti = cupti
        self.calls = calls
        self.level = level
        self.on_over = on_over
        self.lock = threading.Lock()
        self.thread_id = threading.get_ident
        self.owner: int | None = None
        self.state = "armed"
        self.started_ns = 0
        self.started_perf_ns = 0
        self.windows: list[list[int]] = []
        self.perf_starts: list[int] = []  # each window's start on the calls' clock (perf_counter_ns): the trace's
        self.error: str | None = None
        self.ended_at = 0.0

    def begin_call(self) -> bool:
        """Whether this call is one of the profile's (starting CUPTI at the first); never raises."""
        with self.lock:
            if self.state == "over":
                return False
            me = self.thread_id()
            if self.owner is None:
                self.owner = me
            elif self.owner != me:
                return False
            module = self.cupti.module
            try:
                if self.state == "armed":
                    self.state = "running"  # a half-done enable is undone as a running profile is
                    module.activity_enable(self.cupti.kernel_kind)
                self.started_ns = int(module.get_timestamp())
                self.started_perf_ns = time.perf_counter_ns()
                return True
            except Exception as exc:
                self._end_locked(f"CUPTI would not record kernels: {one_line(exc)}")
        self.on_over(self)
        return False

    def end_call(self) -> None:
        """The call's window; after the last call, CUPTI's records handed over and recording off. Never raises."""
        with self.lock:
            if self.state != "running":
                return
            try:
                self.windows.append([self.started_ns, int(self.cupti.module.get_timestamp())])
                self.perf_starts.append(self.started_perf_ns)
                if len(self.windows) < self.calls:
                    return
                self._end_locked(None)
            except Exception as exc:
                self._end_locked(f"CUPTI failed during the profiled calls: {one_line(exc)}")
        self.on_over(self)

    def stop(self, why: str, keep: bool) -> None:
        """End now, from any thread: with `keep` the calls timed so far are the result, else `why` is the refusal."""
        with self.lock:
            if self.state == "over":
                return
            self._end_locked(None if keep and self.windows else why)
        self.on_over(self)

    def _end_locked(self, error: str | None) -> None:
        module = self.cupti.module
        if self.state == "running":
            try:
                module.activity_flush_all(1)
            except Exception as exc:
                error = error or f"CUPTI could not hand over its records: {one_line(exc)}"
            try:
                module.activity_disable(self.cupti.kernel_kind)
            except Exception as exc:
                error = error or f"CUPTI could not stop recording: {one_line(exc)}"
        self.state = "over"
        self.error = error
        self.ended_at = time.monotonic()

    def result(self) -> dict[str, Any]:
        """The `kernels` event (or `profile_refused`), built on the agent's thread from what CUPTI handed over."""
        activities = self.cupti.take()
        if self.error is not None:
            return {"kind": "profile_refused", "reason": self.error}
        try:
            kind = int(self.cupti.kernel_kind)
            rows = [_kernel_row(a) for a in activities if int(getattr(a, "kind", -1)) == kind]
        except Exception as exc:
            return {"kind": "profile_refused", "reason": f"CUPTI's records could not be read: {one_line(exc)}"}
        windows = self.windows
        if len(rows) > MAX_KERNEL_RECORDS:  # the first whole calls whose kernels fit in one line
            rows.sort(key=lambda row: row[1])
            last = rows[MAX_KERNEL_RECORDS - 1][1]
            windows = [w for w in windows if w[1] <= last]
            end = windows[-1][1] if windows else 0
            rows = [row for row in rows[:MAX_KERNEL_RECORDS] if row[1] <= end]
        return {
            "kind": "kernels",
            "calls": len(windows),
            "asked": self.calls,
            "windows": windows,
            "perf_starts": self.perf_starts[: len(windows)],
            "records": rows,
            "source": self.cupti.source,
            "level": self.level,
            "library": self.cupti.library,
        }


def _kernel_row(record: Any) -> list[Any]:
    """A CONCURRENT_KERNEL record as the protocol's list (times in CUPTI nanoseconds)."""
    return [
        str(record.name),
        int(record.start),
        int(record.end),
        int(record.grid_x),
        int(record.grid_y),
        int(record.grid_z),
        int(record.block_x),
        int(record.block_y),
        int(record.block_z),
        int(record.device_id),
        int(record.stream_id),
        int(record.correlation_id),
    ]


def _preload_libcupti(paths: list[str]) -> None:
    """Load the libcupti of gputop's environment (the nvidia-cuda-cupti wheel's) before cupti-python looks for one.

    cupti-python finds its library through cuda.pathfinder, which searches
    `site.getsitepackages()` (this program's environment, not gputop's), then takes one
    already loaded, then asks the system loader (a CUDA toolkit's libcupti, of whatever
    version: with 13.0's, PM sampling failed where the wheel's worked, PLATFORM.md).
    Loaded first, the wheel's is the one found, as in gputop's own process.
    """
    import ctypes

    for folder in paths:
        for sub in ("nvidia/cu13/lib", "nvidia/cuda_cupti/lib", "nvidia/cu12/lib"):
            lib_dir = os.path.join(folder, sub)
            try:
                names = sorted(os.listdir(lib_dir))
            except OSError:
                continue
            for name in names:
                if name.startswith("libcupti.so"):
                    try:
                        ctypes.CDLL(os.path.join(lib_dir, name), mode=ctypes.RTLD_GLOBAL)
                        return
                    except OSError:
                        continue  # cupti-python's own search follows; a failure there is the refusal


def _loaded_library(prefix: str) -> str | None:
    """The path of the first library whose file name starts with `prefix` mapped into this process."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(None, 5)
                if len(fields) == 6 and os.path.basename(fields[5].strip()).startswith(prefix):
                    return fields[5].strip()
    except OSError:
        pass
    return None


def _distribution_version(folder: str, name: str) -> str | None:
    """The version of distribution `name` (underscored) installed in `folder`, from its dist-info folder's name."""
    try:
        for entry in os.listdir(folder):
            if entry.startswith(name + "-") and entry.endswith(".dist-info"):
                return entry[len(name) + 1 : -len(".dist-info")]
    except OSError:
        pass
    return None


def _remove_last(items: list[str], item: str) -> None:
    for index in range(len(items) - 1, -1, -1):
        if items[index] == item:
            del items[index]
            return
