"""Who else used the GPU and the host while we measured: the other half of every timing's conditions.

A time is only as true as what ran beside it. On a shared GPU server the
first thing that makes a run slow is other work on the same device, and on
the CPU backends other processes on the same cores: on the 2-core machine,
runs taken while others used 0.5-1 core had about double the p50 of quiet
ones. `NeighbourWatch` reads, once a second on its own thread, NVML's compute
and graphics processes on the run's GPU (pid, memory, and their SM and
memory utilisation since the last look, `nvmlDeviceGetProcessUtilization`)
and the host's CPU time (psutil: system-wide busy time less this run's own
process tree, in cores). It keeps the newest view for the live screens and
sums any number of open windows (a profile pass, the run's calls) exactly:
host CPU from cumulative counters read at the window's ends, GPU
utilisation from every sample NVML gave in between. A window others used
carries a warning with the figures, as a pass at a low clock does.
Where NVML cannot tell (no NVIDIA GPU, no per-process utilisation on the
driver, pids of another container) a reason says so instead of a zero.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import psutil

from gputop.core.records.base import to_json
from gputop.core.records.devices import DeviceInfo
from gputop.core.records.neighbours import GpuProcess, HostLoad, Neighbours
from gputop.core.watch import nvml
from gputop.core.watch.watcher import Watcher
from gputop.core.wording import host_load_text, neighbours_text

__all__ = [
    "HOST_LOAD_FLOOR_CORES",
    "HOST_LOAD_SHARE",
    "HostCounters",
    "NeighbourWatch",
    "NeighbourWindow",
    "host_load_limit",
    "is_ours",
    "watch_roots",
]

EVERY_S = 1.0  # NVML keeps a few seconds of per-process samples; a look a second misses none
HOST_LOAD_SHARE = 0.1  # others using more than this share of the host's cores flag a timing ...
HOST_LOAD_FLOOR_CORES = 0.25  # ... and never less than a quarter of a core (a quiet machine's noise is below)
LIVE_WINDOW_S = 3.0  # the live view's host load: over the last few seconds, not one noisy second


def host_load_limit(cores: int) -> float:
    """Cores others may use before a timing is flagged: 10% of the host's, at least a quarter of one."""
    return max(HOST_LOAD_FLOOR_CORES, HOST_LOAD_SHARE * cores)


def is_ours(pid: int, roots: Iterable[int]) -> bool:
    """Whether `pid` is one of `roots` or a descendant of one (a profiling tool the engine started)."""
    roots = set(roots)
    if pid in roots:
        return True
    try:
        return any(parent.pid in roots for parent in psutil.Process(pid).parents())
    except (psutil.Error, ValueError):  # gone, a pid of another container, or not a pid
        return False


@dataclass(frozen=True)
class HostCounters:
    """Cumulative CPU seconds at one moment: the whole host's busy time and this run's own tree's."""

    at: float  # time.monotonic()
    busy_s: float
    steal_s: float
    own_s: float

    @classmethod
    def read(cls, roots: Iterable[int]) -> HostCounters:
        times = psutil.cpu_times()
        # Busy: everything but idle and iowait. guest time is already inside user on Linux.
        busy = sum(getattr(times, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq"))
        own = 0.0
        for pid in roots:
            try:
                cpu = psutil.Process(pid).cpu_times()
            except (psutil.Error, ValueError):  # gone, not ours to read, or no pid at all (ValueError: pid < 0)
                continue
            # children_*: the children it has waited for (a profiling tool once it ended). The roots alone,
            # not a walk of the process table: that would cost milliseconds of the GIL a second on a big server.
            own += cpu.user + cpu.system + cpu.children_user + cpu.children_system
        return cls(time.monotonic(), busy, getattr(times, "steal", 0.0), own)

    def load_since(self, earlier: HostCounters) -> HostLoad | None:
        seconds = self.at - earlier.at
        if seconds <= 0:
            return None
        own = max(0.0, self.own_s - earlier.own_s)
        busy = max(0.0, self.busy_s - earlier.busy_s)
        return HostLoad(
            other_cores=round(max(0.0, busy - own) / seconds, 3),
            own_cores=round(own / seconds, 3),
            cores=psutil.cpu_count() or 1,
            seconds=round(seconds, 3),
            steal_cores=round(max(0.0, self.steal_s - earlier.steal_s) / seconds, 3),
        )


@dataclass
class _Seen:
    """One pid over a window: the most memory it held and its utilisation samples."""

    name: str | None
    ours: bool
    kinds: set[str]
    used_memory_bytes: int | None = None
    sm: list[int] = field(default_factory=list)
    memory: list[int] = field(default_factory=list)


@dataclass
class NeighbourWindow:
    """An open interval the watch sums into: a profile pass, or the run's calls."""

    started: HostCounters
    seen: dict[int, _Seen] = field(default_factory=dict)
    utilisation_reason: str | None = None


class _Gpu:
    """The run's GPU as NVML sees it: its processes and their utilisation since the last look."""

    def __init__(self, index: int, label: str) -> None:
        self.label = label
        self._index = index
        self._last_us = int(time.time() * 1e6)

    def look(self) -> tuple[dict[int, tuple[str, int | None]], dict[int, tuple[int, int]], str | None]:
        """({pid: (kind, memory)}, {pid: (sm %, memory %)} since the last look, why no utilisation)."""
        import pynvml

        handle = pynvml.nvmlDeviceGetHandleByIndex(self._index)
        listed: dict[int, tuple[str, int | None]] = {}
        for kind, read in (
            ("compute", pynvml.nvmlDeviceGetComputeRunningProcesses),
            ("graphics", pynvml.nvmlDeviceGetGraphicsRunningProcesses),
        ):
            try:
                for process in read(handle):
                    memory = getattr(process, "usedGpuMemory", None)
                    earlier_kind, earlier_memory = listed.get(int(process.pid), ("", None))
                    kinds = f"{earlier_kind}+{kind}" if earlier_kind else kind
                    listed[int(process.pid)] = (kinds, memory if memory is not None else earlier_memory)
            except pynvml.NVMLError:
                continue
        since, self._last_us = self._last_us, int(time.time() * 1e6)
        busy: dict[int, tuple[int, int]] = {}
        reason = None
        try:
            for sample in pynvml.nvmlDeviceGetProcessUtilization(handle, since):
                if int(sample.timeStamp) > since:
                    sm, mem = busy.get(int(sample.pid), (0, 0))
                    busy[int(sample.pid)] = (max(sm, int(sample.smUtil)), max(mem, int(sample.memUtil)))
        except pynvml.NVMLError_NotFound:
            pass  # no process used the GPU since the last look: every one idle
        except pynvml.NVMLError as exc:
            reason = f"NVML gives no per-process utilisation here ({exc}): who is busy is unknown, not zero"
        return listed, busy, reason


def _process_name(pid: int) -> str | None:
    try:
        return psutil.Process(pid).name()
    except psutil.Error:
        return None


class NeighbourWatch(Watcher[Neighbours]):
    """Looks at the GPU's other processes and the host's load every second; sums open windows exactly.

    `roots` are the pids whose process trees are the run's own (the engine, and the TUI that owns it).
    `on_update` is told of every new live view (also kept as `latest`).
    """

    def __init__(self, device: DeviceInfo | None, roots: Iterable[int], every_s: float = EVERY_S) -> None:
        super().__init__("gputop-neighbours", every_s)
        self._device = device
        self._roots = tuple(roots)
        self._lock = threading.Lock()
        self._windows: list[NeighbourWindow] = []
        self._gpu: _Gpu | None = None
        self._gpu_reason: str | None = None
        if device is not None and device.kind == "gpu":
            reason = nvml.nvml_unavailable_reason()
            match = nvml.match_gpu(device.uuid, device.name) if reason is None else None
            if match is not None:
                self._gpu = _Gpu(match.index, f"{match.name} (nvml:{match.index})")
            else:
                self._gpu_reason = f"no GPU processes: {reason or f'NVML sees no GPU matching {device.name}'}"
        self._history: list[HostCounters] = [HostCounters.read(self._roots)]
        self._live = NeighbourWindow(started=self._history[0])
        self.latest: Neighbours | None = None

    def open_window(self) -> NeighbourWindow:
        """Start summing: its host counters now, its GPU samples from the next look on."""
        window = NeighbourWindow(started=HostCounters.read(self._roots))
        with self._lock:
            self._windows.append(window)
        return window

    def close_window(self, window: NeighbourWindow) -> Neighbours:
        """Who else used the GPU and the host over the window: a last look now, then the sums."""
        with self._lock:
            ended = self._add_look()
            if window in self._windows:
                self._windows.remove(window)
        return self._summary(window, ended)

    def look(self) -> Neighbours:
        """The live view: one look summed over the last few seconds (`Watcher` hands it to `on_update`)."""
        with self._lock:
            now = self._add_look()
            self._history.append(now)
            # The live view spans the last few seconds: keep the counters from then on.
            while len(self._history) > 2 and now.at - self._history[1].at >= LIVE_WINDOW_S:
                self._history.pop(0)
            live, self._live = self._live, NeighbourWindow(started=now)
        self.latest = self._summary(NeighbourWindow(self._history[0], live.seen, live.utilisation_reason), now)
        return self.latest

    def _add_look(self) -> HostCounters:
        """One look at the GPU, added to every open window and the live one; the host's counters now."""
        counters = HostCounters.read(self._roots)
        if self._gpu is None:
            return counters
        try:
            listed, busy, reason = self._gpu.look()
        except Exception as exc:  # an NVML error: this look says so and the next tries again
            listed, busy, reason = {}, {}, f"NVML could not list the GPU's processes: {exc}"
        for window in (*self._windows, self._live):
            window.utilisation_reason = reason or window.utilisation_reason
            for pid in {*listed, *busy}:
                seen = window.seen.get(pid)
                if seen is None:
                    seen = window.seen[pid] = _Seen(_process_name(pid), is_ours(pid, self._roots), set())
                if pid in listed:
                    kinds, memory = listed[pid]
                    seen.kinds.update(kinds.split("+"))
                    if memory is not None:
                        seen.used_memory_bytes = max(seen.used_memory_bytes or 0, memory)
                if pid in busy:
                    seen.sm.append(busy[pid][0])
                    seen.memory.append(busy[pid][1])
        return counters

    def _summary(self, window: NeighbourWindow, ended: HostCounters) -> Neighbours:
        host = ended.load_since(window.started)
        utilisation_known = self._gpu is not None and window.utilisation_reason is None
        processes = tuple(
            GpuProcess(
                pid=pid,
                name=seen.name,
                used_memory_bytes=seen.used_memory_bytes,
                sm_percent=(max(seen.sm) if seen.sm else 0) if utilisation_known else None,
                memory_percent=(max(seen.memory) if seen.memory else 0) if utilisation_known else None,
                kinds="+".join(sorted(seen.kinds)) or "compute",
                ours=seen.ours,
            )
            for pid, seen in sorted(window.seen.items())
        )
        reasons = [r for r in (self._gpu_reason, window.utilisation_reason) if r]
        others = sum(not p.ours for p in processes)
        if processes and not any(p.ours for p in processes) and self._holds_gpu():
            # NVML's pids are the host's: in a container our own engine is listed under a pid we cannot see.
            reasons.append("NVML's pids are not this container's: gputop cannot tell its own process from others")
            others = max(0, others - 1)
        neighbours = Neighbours(
            device_id=self._device.id if self._device else None,
            gpu=self._gpu.label if self._gpu else None,
            processes=processes,
            others=others,
            reason="; ".join(reasons) or None,
            host=host,
            warning=None,
            seconds=round(ended.at - window.started.at, 3),
        )
        return _with_warning(neighbours)

    def _holds_gpu(self) -> bool:
        return self._device is not None and self._device.kind == "gpu" and self._gpu is not None


def _with_warning(neighbours: Neighbours) -> Neighbours:
    """The neighbours with a warning where others used the GPU (SM or memory busy, or there where utilisation is
    unknown) or more than `host_load_limit` of the host's cores."""
    notes = []
    others = [p for p in neighbours.processes if not p.ours]
    busy = [p for p in others if p.sm_percent is None or p.sm_percent > 0 or (p.memory_percent or 0) > 0]
    ours_among_them = neighbours.others < len(others)  # pids of another namespace: one of them is our engine
    if len(busy) - ours_among_them > 0:
        line = neighbours_text(to_json(neighbours))
        if line:
            notes.append(f"{line}: times were taken on a shared GPU")
    host = neighbours.host
    if host is not None and host.other_cores > host_load_limit(host.cores):
        notes.append(f"{host_load_text(to_json(host))}: times were taken on a busy host")
    if not notes:
        return neighbours
    return replace(neighbours, warning="; ".join(notes))


def watch_roots(owner_pid: int | None) -> list[int]:
    """The pids whose trees are this run's own: this process, and the TUI that owns it where there is one."""
    return [os.getpid(), *([owner_pid] if owner_pid and owner_pid > 0 else [])]
