"""One profile pass: the Kernels table, its synced call time, and what the pass cost.

`profiling.ireeprof` and the tool pass build a `ProfileSummary` of
`KernelTiming` rows; `profiling.work.efficiency` adds work and the roofline, the
counters pass joins its measured counters, and the run adds the pass's clocks,
breakdown and neighbours. It gathers the records of those other modules; none
of them needs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputop.core.records.base import now
from gputop.core.records.breakdown import CallBreakdown
from gputop.core.records.clocks import DevicePeaks, PassClocks
from gputop.core.records.counters import KernelCounters
from gputop.core.records.neighbours import Neighbours

__all__ = ["KernelTiming", "LayerTime", "PoolUsage", "ProfileOverhead", "ProfileSummary", "SourceOp"]


@dataclass(frozen=True)
class SourceOp:
    """One op of the user's model that a kernel was formed from (`profiling/work/source_ops.py`)."""

    name: str | None  # the ONNX node's name, or a name location's (`loc("fc1")`); None for a plain MLIR op
    op: str  # the ONNX op type (Conv) or the MLIR op (linalg.matmul)
    loc: str | None  # file:line[:col] in the user's file (for ONNX, the line of gputop's imported MLIR)


@dataclass(frozen=True)
class LayerTime:
    """The kernel time per call of the kernels formed from one group of source ops."""

    name: str  # the source op's name, or the group's: `conv1 + relu1`
    op: str  # its op types: `Conv + Relu`; `copy` for kernels that only move data for them
    kernels: tuple[str, ...]  # the kernels formed from exactly this group
    ms_per_call: float
    share: float  # of the summed kernel time of a call, as the kernels' share
    # The group named as every face names it (`profiling/work/layer_names.py`): its ops' common scope first,
    # `layer1.0: conv2 + add + relu_1`, or `copy for conv1`.
    label: str = ""
    source_ops: tuple[SourceOp, ...] = ()  # the group's ops, as `name` names them (empty for UNMAPPED)
    copy: bool = False  # its kernels compute nothing: copies (a convolution's padding) made for these ops


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
    # Work and efficiency (core/profiling/work/: ir_count, name_work, efficiency): counted from the dispatch's own IR
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
    # What the kernel was formed from, in the user's words: ONNX nodes or source lines, in graph or line order;
    # None with source_ops_reason where they are not known.
    source_ops: tuple[SourceOp, ...] | None = None
    source_ops_reason: str | None = None


@dataclass(frozen=True)
class PoolUsage:
    """A HAL pool's reserved and committed bytes, from profiling memory events."""

    pool_id: int
    reserved_bytes: int
    committed_bytes: int


@dataclass(frozen=True)
class ProfileOverhead:
    """What a profile pass cost: its calls' synced time against unprofiled calls of the same work.

    Its first five keys are the report's `profile.overhead` contract; `method` says which unprofiled calls
    were the reference (the run's own calls just before the pass, or the tool's own unprofiled run). The
    ratio is of medians (`statistic`): one slow call among twenty moved a mean reference so far that a pass
    read 0.80x of the calls it slowed. `within_spread` says the profiled median lies between the unprofiled
    calls' p25 and p75 (`unprofiled_spread_ms`): then no cost is measurable, either way.
    """

    ratio: float  # profiled_median_ms / unprofiled_median_ms (of the means in sessions older than issue 47)
    profiled_mean_ms: float
    unprofiled_mean_ms: float
    unprofiled_calls: int
    method: str
    statistic: str = "mean"  # what `ratio` sets side by side: "median" (older sessions: "mean")
    profiled_median_ms: float | None = None
    unprofiled_median_ms: float | None = None
    unprofiled_spread_ms: tuple[float, float] | None = None  # the unprofiled calls' p25 and p75
    profiled_calls: int | None = None
    within_spread: bool | None = None  # profiled median within unprofiled_spread_ms: no cost measurable
    # The least a pass of this kind can cost these calls, where measured (CUDA: CUPTI's kernel records alone, per
    # kernel, times the call's kernels, over the unprofiled median; `floor_basis` says how it was had).
    floor_ratio: float | None = None
    floor_basis: str | None = None


@dataclass(frozen=True)
class ProfileSummary:
    """One profile pass: kernels, the synced call time beside the kernel time, and files.

    Where a run's kernel table merges several passes (`passes` > 1), its rows and `calls` are the merged
    table's, while the per-call figures (`call_wall_ms`, `call_kernel_ms`, `gap_ms`) stay the newest pass's
    own, as do its breakdown, cost and log line: the Kernels header, the Timeline and the Log quote one pass.
    """

    source: str
    device_id: str
    calls: int  # calls the kernel table covers (every merged pass's)
    call_wall_ms: float | None  # synced wall time of one call during the (newest) pass
    call_kernel_ms: float  # summed kernel time of one call of the (newest) pass
    gap_ms: float | None  # wall minus kernel, of that one pass: host work, transfers, idle
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
    # Set where the call breakdown comes from other calls than the kernel times (a default CUDA pass: kernels timed
    # with CUPTI's kernel records alone, the breakdown from as many calls again with every kind on): their cost.
    breakdown_overhead: ProfileOverhead | None = None
    breakdown_profiling_on: str | None = None
    passes: int = 1  # profile passes the kernel table merges (the TUI's repeated passes)
    pass_calls: int | None = None  # calls of the newest pass, where the table merges several (else `calls`)
    layers: tuple[LayerTime, ...] = ()  # kernel time by the source ops the kernels came from, largest first
    source_ops_reason: str | None = None  # why no kernel has source ops (a .vmfb without sources)
