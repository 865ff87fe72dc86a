"""The values a run publishes: frozen dataclasses, each stamped with the time it was taken.

Everything the engine tells the outside world (the command line, the TUI, the
session folder, a test) is one of these values. They are immutable so they can
cross threads without locks, compare equal in tests, and turn into JSON with
`to_json()` without knowing who reads them. This module imports nothing else of
gputop's: every other part of the engine may depend on it.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BUSY_STATES",
    "CALL_BUCKETS_MS",
    "SEGMENT_KINDS",
    "BoundBuffer",
    "BreakdownTotals",
    "CallBreakdown",
    "CallSegment",
    "CallStats",
    "CaptureDispatch",
    "CaptureInfo",
    "CaptureReplay",
    "ClockReading",
    "CompileRecord",
    "CounterRule",
    "CountersPass",
    "DeviceInfo",
    "DeviceMemory",
    "DevicePeaks",
    "Diagnostic",
    "Event",
    "ExportAffinity",
    "KernelCounters",
    "KernelTiming",
    "MemorySample",
    "Mismatch",
    "OutputCheck",
    "ParameterLoad",
    "ParameterStages",
    "PassClocks",
    "Phases",
    "PoolStats",
    "PoolUsage",
    "ProfileOverhead",
    "ProfileSummary",
    "RunSnapshot",
    "RunSummary",
    "StageTimings",
    "TensorSummary",
    "Transfer",
    "now",
    "to_json",
]


def now() -> float:
    """Wall-clock time for stamping records (seconds since the epoch)."""
    return time.time()


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def to_json(value: Any) -> Any:
    """Turn a record (or a tuple/list/dict of them) into JSON-ready data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # Field names cached per class: a running session turns ten snapshots a second into JSON.
        return {name: to_json(getattr(value, name)) for name in _field_names(type(value))}
    if isinstance(value, (int, float, str)) or value is None:
        return value
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
    calls_per_s: float | None = None  # over the whole run: what a report of a finished run says
    recent_calls_per_s: float | None = None  # over the calls that ended in the last few seconds: what runs now
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
class Mismatch:
    """The first element of an output that differs from its reference."""

    output: int
    index: tuple[int, ...]
    got: float | int | bool
    expected: float | int | bool


@dataclass(frozen=True)
class Tolerance:
    """The tolerance one output was held to: its element type's (or the coarser reference's), or given."""

    output: int
    dtype: str  # the element type whose tolerance applied; given, demo or spec when those set both
    rtol: float
    atol: float


@dataclass(frozen=True)
class OutputCheck:
    """How the outputs compare with a reference; on a failure the errors are never 0."""

    passed: bool
    max_abs_err: float  # inf when a NaN or an infinity sits where the reference has none (or another)
    max_rel_err: float
    reference: str
    mismatches: int = 0  # elements outside the tolerance, NaN/Inf misplaced included
    first_mismatch: Mismatch | None = None
    tolerances: tuple[Tolerance, ...] = ()  # one per checked output
    unchecked: tuple[int, ...] = ()  # outputs that had no reference: a pass says nothing of them


@dataclass(frozen=True)
class StageTimings:
    """The OpenCL chain demo's two stages timed three ways, plus the naive reading that misleads."""

    a_synced_ms: float
    b_synced_ms: float
    a_then_b_synced_ms: float
    a_enqueue_only_ms: float  # "A took this long" if you forget to sync
    b_after_unsynced_a_ms: float  # ...and then B seems to take A's time too
    a_kernel_ms: float
    b_kernel_ms: float


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
class CounterRule:
    """One of Nsight Compute's rules on a kernel: its verdict in one line and what following it may win."""

    name: str  # SOLBottleneck, LaunchConfiguration, AchievedOccupancy, ...
    text: str  # the rule's description, its first sentence, on one line
    kind: str | None = None  # ncu's rule type: OPT (an optimisation), WRN, INF
    speedup_pct: float | None = None  # ncu's estimated speedup, percent
    speedup_type: str | None = None  # global (of the whole kernel) or local (of the part the rule looks at)


@dataclass(frozen=True)
class KernelCounters:
    """One kernel's hardware counters from a counters pass (Nsight Compute), per launch.

    A kernel launched several times in the call has its launches averaged (`launches` says how
    many). A counter the report lacks or gives as `n/a` (an older chip, a metric it does not know)
    is None, never 0, and named in `absent`.
    """

    name: str
    source: str  # "ncu 2025.3.1.0"
    launches: int
    time_us: float | None  # gpu__time_duration: the mean over its launches
    flops: int | None  # 2 FMA + add + mul over fp16, fp32 and fp64, plus tensor_ops
    flops_fp16: int | None
    flops_fp32: int | None
    flops_fp64: int | None
    tensor_ops: int | None  # math ops in the tensor path (sm__ops_path_tensor_src_*), counted as FLOPs
    tensor_type: str | None  # the tensor path's main source type: fp16, bf16, tf32, fp64, fp8, int8
    dram_read_bytes: int | None
    dram_write_bytes: int | None
    l2_bytes: int | None  # lts__t_bytes: every byte through the L2 slices
    sm_pct: float | None  # SM throughput, % of peak sustained
    dram_pct: float | None  # DRAM throughput, % of peak sustained
    compute_memory_pct: float | None  # the higher of compute and memory throughput, % of peak
    occupancy_pct: float | None  # achieved occupancy: active warps, % of the SM's maximum
    registers_per_thread: int | None
    shared_bytes_per_block: int | None  # static plus dynamic shared memory
    block_size: int | None  # threads per block
    grid_size: int | None  # blocks
    sm_mhz: float | None  # the SM clock the kernel ran at (no clock control)
    verdict: str | None  # ncu's speed-of-light verdict (the SOLBottleneck rule), one line
    rules: tuple[CounterRule, ...] = ()  # its other rules, with their estimated speedups
    absent: tuple[str, ...] = ()  # metrics the report lacked or gave as n/a


@dataclass(frozen=True)
class CountersPass:
    """A counters pass: one call of the run's module profiled by Nsight Compute in another process.

    `error` says in one line why it gave nothing (ncu's own first error, a permission, no kernel
    profiled); `kernels` are then empty. `live_calls` counts the calls the run made meanwhile: the
    pass never touches them, but they share the GPU with it.
    """

    source: str  # "ncu 2025.3.1.0", or "ncu" when its version could not be read
    command: str  # the profiling command as run
    wall_s: float  # from starting ncu to the report read back
    calls: int  # calls of the module the pass made (one)
    kernels: tuple[KernelCounters, ...] = ()
    report_path: str | None = None  # the .ncu-rep (ncu-ui opens it)
    log_path: str | None = None
    error: str | None = None
    live_calls: int = 0
    timestamp: float = field(default_factory=now)


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
    # Work and efficiency (core/profiling/work.py, name_work.py, efficiency.py): counted from the dispatch's own IR
    # or read from its name (work_source), against the device's peaks at the pass's clock. None where the work or
    # the peak is unknown.
    flops: int | None = None  # per dispatch: adds, subs, muls, divs, FMA as 2, math functions as 1
    bytes: int | None = None  # per dispatch: bytes_read + bytes_written
    bytes_read: int | None = None  # tensors loaded from its bindings, plus constant tensors it embeds
    bytes_written: int | None = None  # tensors stored to its bindings
    intensity: float | None = None  # FLOP per byte
    achieved_tflops: float | None = None  # flops / avg_us
    achieved_gbps: float | None = None  # bytes / avg_us
    pct_peak_compute: float | None = None  # percent of the compute peak for its type at the pass's clock
    pct_peak_bandwidth: float | None = None  # percent of the memory bandwidth at the pass's clock
    bound: str | None = None  # compute | memory: which side of the roofline's ridge its intensity is on
    work: str | None = None  # what it does (matmul+elementwise), or why its work is unknown
    peak_tflops: float | None = None  # the compute ceiling used for it (its type's peak at the pass's clock)
    work_source: str | None = None  # where flops and bytes come from: "ir" (its executable source), "name", "counters"
    counters: KernelCounters | None = None  # measured by a counters pass (ncu), joined by the kernel's name
    # Where work_source is "counters", the estimate the measurement replaced (so both can be drawn): its FLOPs,
    # bytes and their source ("ir" or "name"); None where there was none.
    estimate_flops: int | None = None
    estimate_bytes: int | None = None
    estimate_source: str | None = None


@dataclass(frozen=True)
class PoolUsage:
    """A HAL pool's reserved and committed bytes, from profiling memory events."""

    pool_id: int
    reserved_bytes: int
    committed_bytes: int


# The kinds of time a call is made of, in the order the call breakdown lists them.
SEGMENT_KINDS = ("host", "queue", "alloc", "device_busy", "device_idle", "return_wait", "unaccounted")


@dataclass(frozen=True)
class CallSegment:
    """One stretch of a call on the host time axis: what the host, a queue or a device was doing."""

    kind: str  # one of SEGMENT_KINDS
    name: str  # the queue operation, the dispatches running, or what the stretch is
    device: str | None  # the device (queue) it happened on; None for the host
    start_ms: float  # from the start of the call (the first record of the call where the start is not seen)
    duration_ms: float


@dataclass(frozen=True)
class BreakdownTotals:
    """Where a call's synced wall time went, in disjoint parts that add up to the wall time (ms per call)."""

    host_ms: float = 0.0  # the host working with nothing submitted pending: VM, command recording, API calls
    queue_ms: float = 0.0  # queue operations submitted and not yet done: waiting for dependencies, launch latency
    alloc_ms: float = 0.0  # queue-ordered allocations and frees pending
    device_busy_ms: float = 0.0  # a dispatch running on the device
    device_idle_ms: float = 0.0  # inside a device submission with no dispatch running
    return_wait_ms: float = 0.0  # the device done, the host not yet returned from its wait
    unaccounted_ms: float = 0.0  # what the records cannot attribute; never folded into another part


@dataclass(frozen=True)
class CallBreakdown:
    """Where the synced call time goes, from the profile pass's own records (see README: call breakdown)."""

    calls: int  # profiled calls the totals are averaged over
    wall_ms: float  # mean synced wall time of those calls; the totals add up to it
    kernel_ms: float  # the dispatches' own summed time per call (inside device_busy_ms unless they overlap)
    totals: BreakdownTotals
    median_call: tuple[CallSegment, ...]  # the call with the median wall time, segment by segment
    source: str  # which records: ireeprof queue/device events, host execution, CUPTI API activity, OpenCL events
    fit: str  # how device time was put on the host time axis
    # True where kernel_ms was timed in another run than the segments (a default pass that explained a run without
    # per-dispatch timestamps): then it is not inside device_busy_ms, and may exceed it.
    kernels_apart: bool = False


@dataclass(frozen=True)
class ProfileOverhead:
    """What a profile pass cost: its calls' mean synced time against unprofiled calls of the same work.

    Its five keys are the report's `profile.overhead` contract; `method` says which unprofiled calls
    were the reference (the run's own calls just before the pass, or the tool's own unprofiled run).
    """

    ratio: float  # profiled_mean_ms / unprofiled_mean_ms
    profiled_mean_ms: float
    unprofiled_mean_ms: float
    unprofiled_calls: int
    method: str


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
    call_breakdown: CallBreakdown | None = None  # where the call time went (the newest pass)
    hints: tuple[str, ...] = ()  # iree-profile explain's hints and queue-gap figures
    clocks: PassClocks | None = None  # the GPU's clocks over the pass (NVML); None with clocks_reason
    clocks_reason: str | None = None  # why there are no clocks (no NVIDIA GPU behind the device)
    peaks: DevicePeaks | None = None  # the device's peaks the kernels are measured against
    peaks_reason: str | None = None  # why there are none (a part gputop has no datasheet for)
    work_source: str | None = None  # where the kernels' work came from, in words (sources, a work file, names)
    overhead: ProfileOverhead | None = None  # the newest pass's calls against unprofiled ones (None: unmeasured)
    profiling_on: str | None = None  # what the pass had on: CUPTI activity kinds or IREE profiling modes
    neighbours: Neighbours | None = None  # who else used the GPU and the host during the newest pass
    level: str = "default"  # default: explained calls within 5% where a cheaper run allows; full: every record
    # Set where the kernel times come from another run than the explained calls (a default pass whose run with
    # per-dispatch timestamps cost over 5%): that run's cost and what it had on.
    kernels_overhead: ProfileOverhead | None = None
    kernels_profiling_on: str | None = None


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
    flag: str | None  # hidden_transfer | transfer | undeclared | passthrough | None
    timestamp: float = field(default_factory=now)
    # Bytes a profiled call showed moving for this value (copies matched to the analysis);
    # None where no profile was taken or nothing a profile records moves it (an export handed over).
    observed_transfer_bytes: int | None = None
    # Sizes known only at run time (dynamic shapes): the formula of transfer_bytes in the arguments'
    # dimensions (`argN[i]`), None where every size is a constant; bytes_from_call: transfer_bytes
    # was computed from a profiled call's real input shapes.
    transfer_bytes_expr: str | None = None
    bytes_from_call: bool = False


@dataclass(frozen=True)
class Transfer:
    function: str
    source: str
    target: str
    bytes: int
    op: str
    observed_bytes: int | None = None  # the matching copy in a profiled call; None where a profile cannot see it
    bytes_expr: str | None = None  # a dynamic size: `bytes` as a formula in the arguments' dims (`argN[i]`)
    bytes_from_call: bool = False  # `bytes` computed from a profiled call's real input shapes


@dataclass(frozen=True)
class BoundBuffer:
    """One buffer a dispatch sees: its binding, and the bytes of the slice bound there."""

    binding: int
    bytes: int | None  # the bound range (VK_WHOLE_SIZE resolved); None when the buffer's size is unknown
    set: int = 0
    offset: int = 0  # where the slice starts in its VkBuffer (IREE suballocates one arena)
    buffer: str = ""  # RenderDoc's resource id of the VkBuffer
    buffer_bytes: int | None = None  # the whole VkBuffer


@dataclass(frozen=True)
class CaptureDispatch:
    """One dispatch in a RenderDoc capture, as recorded, and its GPU time when the capture was replayed."""

    index: int  # in recording order, from 0
    name: str  # the pipeline's entry point: IREE's executable export name
    workgroup_count: tuple[int, ...] | None  # (x, y, z); None for an indirect dispatch not replayed
    buffers: tuple[BoundBuffer, ...] = ()
    pipeline: str = ""  # RenderDoc's resource id of the compute pipeline
    debug_name: str | None = None  # the pipeline's debug-utils name, when the program set one
    chunk: int = 0  # the call's index in the capture's structured data
    event_id: int | None = None  # RenderDoc's event id (replay only), as qrenderdoc shows it
    gpu_duration_us: float | None = None  # median over the replay passes
    gpu_duration_us_min: float | None = None


@dataclass(frozen=True)
class CaptureReplay:
    """Whether a capture was replayed here for per-dispatch GPU times, on what, or why not."""

    device: str | None
    ok: bool
    reason: str
    passes: int = 0
    seconds: float | None = None


@dataclass(frozen=True)
class CaptureInfo:
    """A RenderDoc capture, verified in another process."""

    path: str
    bytes: int
    dispatches: int
    dispatch_names: tuple[str, ...]
    api: str
    calls: int = 1
    gpu_durations_us: tuple[float, ...] = ()  # per dispatch, in order, when a replay timed them all
    timestamp: float = field(default_factory=now)
    dispatch_list: tuple[CaptureDispatch, ...] = ()  # empty when read by renderdoccmd (and in a run's snapshots)
    actions: tuple[str, ...] = ()  # the frame's action calls in order ("vkCmdDispatch 64x1x1 NAME", ...)
    replay: CaptureReplay | None = None  # None when no replay was asked for
    reader: str = "renderdoccmd"  # what read it: RenderDoc's Python module (which Python), or renderdoccmd
    reader_note: str | None = None  # the one line saying what is missing, when renderdoccmd stood in
    captured_on: str | None = None  # the GPU and driver the capture was made on


@dataclass(frozen=True)
class ParameterStages:
    """Where a streamed load's time went, stage by stage, so a reader can tell which stage limits it.

    Two kinds of thread do the work. `readers` threads each take a chunk, wait
    for a free pinned staging slot (`slot_wait_s`) and read the file into it
    (`read_s`). One loading thread queues each filled slot's copy to the device
    and hands slots back; it waits either for a read to finish (`read_wait_s`)
    or for a copy to land (`dma_wait_s`), and the rest of its time is its own
    work (`submit_s`: recording and queueing copies, polling), so those three
    add up to `wall_s`, the time from the first read to the last copy landed.
    The readers' times overlap: they are worker-seconds, summed over threads,
    out of `reader_s` (readers x wall).

    How to read them: the readers' shares say whether reads hold the pipeline
    back. Readers busy reading (`read_share` near 1, `slot_wait_share` low):
    the disk or the page cache limits. Readers mostly waiting for a slot: what
    comes after the reads limits, and the loading thread says which: waiting
    for copies to land (`dma_wait_share`: the bus) or busy on its own
    (`submit_share`: the host's submissions). `limited_by` is that verdict:
    reads, copies or submissions. The loading thread's `read_wait_share` is a
    lower bound: while a copy is in flight it waits for that copy first.
    `allocate_s` (what was made before the first read: one pinned staging
    slot per reader, or every buffer when allocation is not overlapped; on
    CUDA the slots are the process's own memory, page-locked by the loading
    thread before each one's first copy, which falls in `submit_s`) and
    `context_after_s` (context creation after the last byte) lie outside
    `wall_s`; `allocate_overlapped_s` is the loading thread's allocation while
    the reads ran (the other staging slots, the device buffers), a part of
    `submit_s`. The staging slots (`staging_bytes` of pinned memory) are kept
    for the stream's later loads and freed when the run closes, so their
    release is not in the load either.
    """

    read_path: str  # page-cache (preadv), mapped (copied out of a mapping), o_direct, or mixed (several files)
    read_path_note: str | None  # why O_DIRECT or a mapping was wanted and not used, when it was not
    readers: int  # reader threads (the most one load used)
    chunks: int
    chunk_bytes: int
    bytes_read: int  # file bytes read into staging (splats are filled on the device, never read)
    allocate_s: float  # loading thread: device buffers and pinned staging, before the first read
    fill_s: float  # loading thread: splat fills on the device
    wall_s: float  # first read to last copy landed, summed over the loads
    reader_s: float  # worker-seconds the readers had: readers x wall
    read_s: float  # worker-seconds in reads into staging
    slot_wait_s: float  # worker-seconds waiting for a free staging slot
    read_wait_s: float  # loading thread: waiting for a read to finish
    dma_wait_s: float  # loading thread: waiting for a copy to land
    submit_s: float  # loading thread: its own work (wall - read_wait - dma_wait)
    read_share: float  # of reader_s
    slot_wait_share: float  # of reader_s
    read_wait_share: float  # of wall_s
    dma_wait_share: float  # of wall_s
    submit_share: float  # of wall_s
    limited_by: str  # reads, copies or submissions (none: nothing was read); see above
    context_before_s: float | None = None  # context creation before the first parameter was asked for
    context_after_s: float | None = None  # context creation after the last byte landed
    allocate_overlapped_s: float = 0.0  # loading thread: buffers made while the reads ran (part of submit_s)
    staging_bytes: int = 0  # pinned staging the stream holds (kept for its later loads, freed at close)


@dataclass(frozen=True)
class ParameterLoad:
    """Parameters on their way to the device: bytes in place of all, how fast, and how long still.

    gputop's streamed loader counts every chunk as its copy lands (`observed`).
    IREE's own loaders hold the Python interpreter until the context exists, so
    for them only the start and the end are seen.
    """

    mode: str  # streamed, mmap, file_async
    total_bytes: int
    loaded_bytes: int
    seconds: float  # since the load began; its whole length once done
    done: bool = False
    observed: bool = True
    files: int = 1
    timestamp: float = field(default_factory=now)
    zero_copy: bool = False  # mapped in place (mmap on the CPU): nothing moved, so no rate
    stages: ParameterStages | None = None  # gputop's streamed loader, once done

    @property
    def gbps(self) -> float | None:
        """Decimal gigabytes per second so far (the bus's unit: PCIe Gen5 x16 is about 64 GB/s)."""
        if self.zero_copy or self.seconds <= 0 or not self.loaded_bytes:
            return None
        return self.loaded_bytes / self.seconds / 1e9

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the rate so far."""
        if self.done:
            return 0.0
        rate = self.loaded_bytes / self.seconds if self.seconds > 0 else 0.0
        return (self.total_bytes - self.loaded_bytes) / rate if rate > 0 else None


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
    parameters: ParameterLoad | None = None  # the parameters' load: live while it runs, its totals after
    segment: int = 0  # which run of the session folder (a TUI reload continues the folder as segment 1, 2, ...)
    neighbours: Neighbours | None = None  # who else uses the GPU and the host now (the last few seconds)
    counters_pass: CountersPass | None = None  # the newest counters pass (Nsight Compute), or why it failed
    counting: bool = False  # a counters pass is under way


@dataclass(frozen=True)
class CompileRecord:
    """How the module of a run came to be: what the manifest and the report say of the compile."""

    vmfb: str
    flags: tuple[str, ...]
    cache_hit: bool
    cache_key: str | None
    log: str | None
    seconds: float
    f64: str | None = None  # "kept" (compiled with f64), "demoted" (IREE's default, f64 as f32), None: no f64


@dataclass(frozen=True)
class RunSummary:
    """What only the live run knows at its end, beside its last snapshot: the report's other half."""

    state: str  # the final state, `interrupted` when a signal ended the run
    exit_code: int
    peak_live_bytes: tuple[tuple[str, int], ...]  # (device id, peak of live pool bytes)
    host_rss_peak_bytes: int
    memory_samples: int
    compile: CompileRecord | None
    parameter_files: tuple[str, ...]
    parameter_mode: str | None
    inputs: tuple[TensorSummary, ...]
    outputs: tuple[TensorSummary, ...]
    check: OutputCheck | None
    stages: StageTimings | None
    session_dir: str
    timestamp: float = field(default_factory=now)
    parameter_bytes: int | None = None  # bytes the parameters' load placed on the device
    parameter_seconds: float | None = None  # from reading the index to the last byte in place
    parameter_zero_copy: bool = False  # the device reads the mapped file in place: nothing was moved
    neighbours: Neighbours | None = None  # who else used the GPU and the host over the run's calls
    parameter_stages: ParameterStages | None = None  # the streamed loader's stage times


@dataclass(frozen=True)
class ClockReading:
    """One NVML reading of a GPU's clocks, performance state, power and throttle reasons."""

    sm_mhz: int
    mem_mhz: int
    max_sm_mhz: int | None
    max_mem_mhz: int | None
    pstate: str | None  # P0 (full performance) .. P12 (idle)
    power_w: float | None
    throttle_reasons: tuple[str, ...]  # NVML clock event reasons: gpu_idle, sw_power_cap, hw_slowdown, ...
    timestamp: float = field(default_factory=now)


@dataclass(frozen=True)
class GpuProcess:
    """One process NVML lists on the run's GPU: what it holds there and how busy it kept the GPU."""

    pid: int  # as NVML gives it: the host's pid, which another container's process may not share with us
    name: str | None  # from the process table; None where the pid is not visible here (another container)
    used_memory_bytes: int | None  # None where the driver does not say (some drivers, some containers)
    sm_percent: int | None  # NVML's per-process SM utilisation over the interval; None where unavailable
    memory_percent: int | None  # ... and its memory-controller (bandwidth) utilisation
    kinds: str  # compute, graphics, or compute+graphics
    ours: bool  # this run's engine, its tools or the TUI that owns it


@dataclass(frozen=True)
class HostLoad:
    """What other processes took of the host's CPUs over an interval, in cores (1.0 = one core busy)."""

    other_cores: float  # system-wide busy time less this run's own process tree, per second of wall time
    own_cores: float  # this run's engine, its children (tools) and the TUI that owns it
    cores: int  # logical CPUs of the host
    seconds: float  # the interval's length
    steal_cores: float = 0.0  # taken by the hypervisor for other machines (a VM): contention too, not a process


@dataclass(frozen=True)
class Neighbours:
    """Who else used the run's GPU and the host's CPUs over an interval: the live view, a pass or the run."""

    device_id: str | None
    gpu: str | None  # the NVML device, e.g. "NVIDIA H100 80GB HBM3 (nvml:0)"; None: not an NVIDIA GPU
    processes: tuple[GpuProcess, ...]  # every process NVML lists on the GPU, ours marked
    others: int  # processes on the GPU that are not ours (counted, even where which one is ours is unknown)
    reason: str | None  # what could not be read, in one line (no NVML, no per-process utilisation, hidden pids)
    host: HostLoad | None
    warning: str | None  # others used the GPU, or more than the host-load limit of the CPUs, with the figures
    seconds: float = 0.0  # over how long
    timestamp: float = field(default_factory=now)


@dataclass(frozen=True)
class PassClocks:
    """A GPU's clocks over one profile pass: at its start and end, the SM clock's range between, and a warning."""

    gpu: str  # the NVML device, e.g. "NVIDIA H200 (nvml:0)"
    start: ClockReading
    end: ClockReading
    min_sm_mhz: int  # over every reading taken during the pass (start and end included)
    max_sm_mhz: int
    mean_sm_mhz: float
    mean_mem_mhz: float
    readings: int
    warning: str | None  # under 80% of the maximum clock, or changed during the pass
    warmup: str | None = None  # what the warm-up before the pass did
    # Which readings count, when not all the pass's: those while its calls ran, and what was left out.
    window: str | None = None


@dataclass(frozen=True)
class DevicePeaks:
    """A device's peak rates: from its datasheet (GPUs) or its cores, SIMD width and clock (CPUs)."""

    part: str  # the part matched, e.g. "NVIDIA H200 SXM", or the CPU's model
    source: str  # where the numbers come from (a datasheet, or how a CPU's were computed)
    f32_tflops: float | None  # vector (non-tensor) FP32: what an f32 matmul without TF32 can reach
    f64_tflops: float | None
    tf32_tensor_tflops: float | None  # dense, without sparsity
    f16_tensor_tflops: float | None
    bf16_tensor_tflops: float | None
    bandwidth_gbps: float | None  # memory bandwidth
    boost_mhz: int | None  # the clock the datasheet's numbers are for
    sm_mhz: float | None = None  # the clock of the pass, where NVML read one
    compute_scale: float = 1.0  # sm_mhz / boost_mhz: the peaks at the pass's clock are the numbers times this
    bandwidth_scale: float = 1.0  # memory clock / its maximum
    # True where the numbers are this machine's estimate (a CPU's cores x lanes x FMA x clock, a copy's
    # bandwidth), not a datasheet's: a kernel can beat them (a turbo clock, a working set in cache), and
    # a share above 100% of them is shown as `>100%*`, never as a figure above the ceiling.
    estimate: bool = False
