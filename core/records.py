"""The engine's outputs: frozen dataclasses, each stamped with the time it was taken.

Everything the engine tells the outside world (the command line, the TUI, a
test) is one of these values. They are immutable so they can cross threads
without locks, compare equal in tests, and turn into JSON with `to_json()`
without knowing who reads them.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any


def now() -> float:
    """Wall-clock time for stamping records (seconds since the epoch)."""
    return time.time()


def to_json(value: Any) -> Any:
    """Turn a record (or a tuple/list/dict of them) into JSON-ready data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class DeviceInfo:
    """One device gputop can run on or watch, or a backend that is missing."""

    id: str
    backend: str
    name: str
    memory_total_bytes: int | None
    compile_target: tuple[str, ...] | None
    available: bool
    reason: str | None = None
    kind: str = "gpu"  # gpu, cpu, software-gpu (lavapipe), monitor, host
    uuid: str | None = None
    driver_info: str | None = None
    uri: str | None = None  # what IREE's tools take as --device= (paths, since vulkan://N is refused)
    timestamp: float = field(default_factory=now)

    @property
    def runnable(self) -> bool:
        """Whether gputop can run modules on it (not only watch it)."""
        return self.available and self.compile_target is not None


@dataclass(frozen=True)
class Diagnostic:
    """One compiler diagnostic, reduced to what a person needs to read."""

    severity: str
    location: str | None
    message: str
    dispatch: str | None = None
    kind: str = "generic"
    used_bytes: int | None = None
    limit_bytes: int | None = None
    log_path: str | None = None
    timestamp: float = field(default_factory=now)

    def one_line(self) -> str:
        where = f"{self.location}: " if self.location else ""
        if self.kind == "shared_memory_exceeded" and self.used_bytes and self.limit_bytes:
            who = self.dispatch or "a dispatch"
            return (
                f"{self.severity}: {who} needs {self.used_bytes} bytes of shared memory, "
                f"the device allows {self.limit_bytes} ({self.used_bytes / self.limit_bytes:.1f}x over)"
            )
        return f"{self.severity}: {where}{self.message}"


@dataclass(frozen=True)
class Phases:
    """Seconds spent in each phase of a run; None until the phase has run."""

    compile_s: float | None = None
    load_s: float | None = None
    import_s: float | None = None  # ONNX models: iree-import-onnx, before the compile
    parameters_s: float | None = None
    context_s: float | None = None
    first_call_s: float | None = None
    teardown_s: float | None = None


# Upper bounds of the call-time histogram, in milliseconds: 50 us to 10 s, then +Inf.
CALL_BUCKETS_MS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 10000.0)


@dataclass(frozen=True)
class CallStats:
    """Synchronised wall time of the steady calls (after the first)."""

    count: int = 0
    min_ms: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    max_ms: float | None = None
    mean_ms: float | None = None
    calls_per_s: float | None = None
    recent_ms: tuple[float, ...] = ()
    # Every call since the start, counted per bucket of CALL_BUCKETS_MS (not cumulative; the last
    # bucket is +Inf), and their summed time: what a Prometheus histogram needs, exact over hours.
    buckets: tuple[int, ...] = ()
    sum_ms: float = 0.0


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
class Event:
    """A line for the log: what happened, in one line, and where details are."""

    seq: int
    level: str  # info, warning, error
    message: str
    log_path: str | None = None
    timestamp: float = field(default_factory=now)


@dataclass(frozen=True)
class OutputCheck:
    """How the outputs compare with a reference."""

    passed: bool
    max_abs_err: float
    max_rel_err: float
    reference: str


@dataclass(frozen=True)
class TensorSummary:
    """Shape, type and a few numbers of one output, enough to eyeball a result."""

    index: int
    shape: tuple[int, ...]
    dtype: str
    mean: float | None
    min: float | None
    max: float | None


@dataclass(frozen=True)
class KernelTiming:
    """One dispatch function's device times over a profile pass (microseconds)."""

    name: str
    count: int
    total_us: float
    avg_us: float
    min_us: float
    p50_us: float
    max_us: float
    share: float  # of the summed kernel time of a call
    per_call: float  # how many times one call runs it
    workgroup_count: tuple[int, ...] | None
    workgroup_size: tuple[int, ...] | None
    source: str  # ireeprof, cupti, opencl
    timing: str  # what the clock is: device timestamps, or host execution on CPU devices
    timestamp: float = field(default_factory=now)


@dataclass(frozen=True)
class PoolUsage:
    """A HAL pool's reserved and committed bytes, from profiling memory events."""

    pool_id: int
    reserved_bytes: int
    committed_bytes: int


@dataclass(frozen=True)
class ProfileSummary:
    """One profile pass: kernels, the synced call time beside the kernel time, and files."""

    source: str
    device_id: str
    calls: int
    call_wall_ms: float | None  # synced wall time of one call during the pass
    call_kernel_ms: float  # summed kernel time of one call
    gap_ms: float | None  # wall minus kernel: host work, transfers, idle
    kernels: tuple[KernelTiming, ...]
    pools: tuple[PoolUsage, ...] = ()
    profile_path: str | None = None
    trace_path: str | None = None
    timestamp: float = field(default_factory=now)


@dataclass(frozen=True)
class ExportAffinity:
    """Where one argument or result of an exported function lives."""

    function: str
    kind: str  # argument | result
    index: int
    declared: str | None  # the source's iree.abi.affinity device, None if undeclared
    export_affinity: str | None  # the device the value is imported on / exported from
    producer_affinity: str | None  # results: the device whose work wrote it; arguments: where it is consumed
    transfer_bytes: int  # bytes moved between devices for this value
    flag: str | None  # hidden_transfer | undeclared | transfer | None
    timestamp: float = field(default_factory=now)


@dataclass(frozen=True)
class Transfer:
    function: str
    source: str
    target: str
    bytes: int
    op: str


@dataclass(frozen=True)
class CaptureInfo:
    """A RenderDoc capture, verified in another process."""

    path: str
    bytes: int
    dispatches: int
    dispatch_names: tuple[str, ...]
    api: str
    calls: int = 1
    gpu_durations_us: tuple[float, ...] = ()
    timestamp: float = field(default_factory=now)


# States in which a run works toward its first call and publishes nothing new for a while:
# the TUI's header and `gputop run` show how long the current one has lasted.
BUSY_STATES = ("importing", "compiling", "loading")


@dataclass(frozen=True)
class RunSnapshot:
    """The whole state of one run at one moment, as the TUI and reports see it."""

    state: str  # idle, compiling, loading, running, paused, finished, stopped, error
    target: str
    function: str | None
    device: DeviceInfo | None
    phases: Phases
    calls: CallStats
    memory: MemorySample | None
    memory_history: tuple[int, ...]  # live device bytes, oldest first, for sparklines
    diagnostics: tuple[Diagnostic, ...]
    events: tuple[Event, ...]  # the newest events; seq numbers let readers skip seen ones
    error: str | None = None
    error_exit_code: int | None = None
    result_types: tuple[str, ...] = ()  # the function's results, e.g. "256x256xf32"
    device_ids: tuple[str, ...] = ()  # every device of the run (two for demo:pipeline)
    session_dir: str | None = None
    profile: ProfileSummary | None = None
    profiling: bool = False  # a profile pass is under way
    enqueue: CallStats | None = None  # OpenCL: time for the enqueues to return, beside the synced time
    exports: tuple[ExportAffinity, ...] = ()  # multi-device runs: affinity of every argument and result
    transfers: tuple[Transfer, ...] = ()
    device_names: tuple[tuple[str, str], ...] = ()  # (compiler device name, gputop device id)
    captures: tuple[CaptureInfo, ...] = ()
    renderdoc: str | None = None  # "RenderDoc 1.6.0 loaded", or why capture is unavailable
    seq: int = 0  # numbered as published, so a gap in a session's samples.jsonl shows a lost line
    errors: int = 0  # error events since the session started (the event tuple keeps only the newest)
    state_since: float | None = None  # when the current state began: how long a compile has run so far
    timestamp: float = field(default_factory=now)
