"""Hardware counters from a counters pass: one call profiled by Nsight Compute in another process.

`profiling.ncu` runs the pass and `profiling.ncu.kernel_counters` reads its
report into these; they are joined onto the Kernels table's rows by kernel
name (`KernelTiming.counters`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputop.core.records.base import now

__all__ = ["CounterRule", "CountersPass", "KernelCounters"]


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
