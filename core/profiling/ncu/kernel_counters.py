"""Hardware counters per kernel from Nsight Compute's CSV pages, and the Kernels table joined with them.

The work gputop sets a kernel's time against is otherwise an estimate: counted
from the dispatch's IR (`work/ir_count.py`) or read from its name (`work/name_work.py`), with
bytes that are what the kernel's bindings hold, not what DRAM served. A
counters pass (`core/run/counters_pass.py`) measures them: this module reads ncu's
`raw` page (a row per launch, every metric, numbers with thousands separators)
and its `details` page (the rules' verdicts) into one `KernelCounters` per
kernel name, a kernel launched several times in the call averaged over its
launches. A metric the report lacks (an older chip) or gives as `n/a` is
absent, never 0.

FLOPs are counted as Nsight Compute's roofline counts them: per precision
(fp16 `h*`, fp32 `f*`, fp64 `d*`) two per FMA plus adds and muls, from the SASS
thread-instruction counters. The tensor path's math ops
(`sm__ops_path_tensor_src_*`, "# of math ops executed in Tensor path", GH100 on)
are kept apart as `tensor_ops` and added into the FLOPs as they are (int8 and
fp8 ones too; IREE's f32 matmuls do not use that path, so this sum is not yet
checked against a tensor-core kernel's known work). Joined to the Kernels table
by name, a kernel with measured FLOPs is rated on them and on its DRAM bytes
(`work_source: "counters"`), and its estimate is kept beside them
(`estimate_flops`, `estimate_bytes`) so that both can be drawn.
"""

from __future__ import annotations

import csv
import io
import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, replace

from gputop.core.profiling.work.dispatch_work import DispatchWork, kernel_key
from gputop.core.profiling.work.efficiency import rate_kernel
from gputop.core.records.counters import CounterRule, CountersPass, KernelCounters
from gputop.core.records.profile import KernelTiming, ProfileSummary

__all__ = [
    "COUNTERS_SOURCE",
    "COUNTERS_TIMING",
    "counter_value",
    "one_line",
    "read_counters",
    "summary_from_counters",
    "with_counters",
]

COUNTERS_SOURCE = "counters"  # a kernel's work_source once its FLOPs were measured
COUNTERS_TIMING = "ncu gpu__time_duration: one call, each kernel replayed alone"
PRECISIONS = {"fp16": "h", "fp32": "f", "fp64": "d"}
TENSOR_TYPES = {  # the metric's suffix after sm__ops_path_tensor_src_, and the type it is reported as
    "fp16": "fp16",
    "bf16_dst_fp32": "bf16",
    "tf32_dst_fp32": "tf32",
    "fp64": "fp64",
    "fp8": "fp8",
    "int8": "int8",
}
TENSOR_DTYPES = {"fp16": "f16", "bf16": "bf16", "tf32": "tf32", "fp64": "f64"}  # peaks.compute_peak_tflops' names
# --print-units base is asked for; a report printed with other units is scaled to the base ones.
UNIT_SCALE = {
    "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12,
    "nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9,
    "Khz": 1e3, "Mhz": 1e6, "Ghz": 1e9,
}  # fmt: skip
SOL_RULE = "SOLBottleneck"
PCT_ELAPSED = "avg.pct_of_peak_sustained_elapsed"


def counter_value(text: str, unit: str = "") -> float | None:
    """A number as ncu prints it (`287,488`, `3,199,410,062.33`), in base units; None for `n/a` or nothing."""
    text = text.strip().removeprefix("(!)").strip()
    if not text or text.lower() == "n/a":
        return None
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return None
    return value * UNIT_SCALE.get(unit.strip(), 1.0)


def one_line(text: str) -> str:
    """A rule's description as one line: its first sentence, whitespace collapsed."""
    flat = " ".join(text.split())
    return re.split(r"(?<=[.!?])\s+(?=[A-Z])", flat, maxsplit=1)[0]


@dataclass
class _Launch:
    """One kernel launch of the raw page: its metrics (None where absent or n/a)."""

    launch_id: str
    name: str
    values: dict[str, float | None]

    def get(self, metric: str) -> float | None:
        return self.values.get(metric)


def _rows(text: str) -> tuple[list[str], list[list[str]]]:
    """The CSV's header and its rows, from the header on (ncu may print lines of its own before it)."""
    rows = list(csv.reader(io.StringIO(text)))
    for index, row in enumerate(rows):
        if "Kernel Name" in row and "ID" in row:
            return row, [r for r in rows[index + 1 :] if r]
    return [], []


def _launches(raw_csv: str) -> list[_Launch]:
    header, rows = _rows(raw_csv)
    if not header:
        return []
    ids, names = header.index("ID"), header.index("Kernel Name")
    units = rows[0] if rows and not rows[0][ids].strip() else [""] * len(header)
    launches = []
    for row in rows:
        if len(row) < len(header) or not row[ids].strip():
            continue  # the units row; a row cut short
        values = {column: counter_value(cell, unit) for column, cell, unit in zip(header, row, units, strict=False)}
        launches.append(_Launch(row[ids].strip(), row[names], values))
    return launches


def _rules(details_csv: str) -> dict[str, list[CounterRule]]:
    """Each launch's rules (by launch ID) from the details page, in the page's order."""
    header, rows = _rows(details_csv)
    if not header or "Rule Name" not in header:
        return {}
    at = {name: header.index(name) for name in header}
    rules: dict[str, list[CounterRule]] = {}
    for row in rows:
        if len(row) < len(header) or not row[at["Rule Name"]].strip():
            continue  # a metric row
        speedup_type = row[at["Estimated Speedup Type"]].strip() if "Estimated Speedup Type" in at else ""
        speedup = row[at["Estimated Speedup"]] if "Estimated Speedup" in at else ""
        rules.setdefault(row[at["ID"]].strip(), []).append(
            CounterRule(
                name=row[at["Rule Name"]].strip(),
                text=one_line(row[at["Rule Description"]]) if "Rule Description" in at else "",
                kind=row[at["Rule Type"]].strip() or None if "Rule Type" in at else None,
                speedup_pct=counter_value(speedup),
                speedup_type=speedup_type or None,
            )
        )
    return rules


def _metric(launches: list[_Launch], name: str, absent: set[str]) -> float | None:
    """The mean of metric `name` over the launches that have it; None (and noted absent) where none has."""
    present = [v for launch in launches if (v := launch.get(name)) is not None]
    if not present:
        absent.add(name)
        return None
    return statistics.fmean(present)


def _last(launches: list[_Launch], name: str, absent: set[str]) -> int | None:
    """A launch's configuration (registers, block size): the last launch's, as the Kernels table keeps."""
    value = launches[-1].get(name)
    if value is None:
        absent.add(name)
    return None if value is None else round(value)


def _count(value: float | None) -> int | None:
    return None if value is None else round(value)


def _precision_flops(launches: list[_Launch], letter: str, absent: set[str]) -> int | None:
    """2 FMA + add + mul of one precision (`h`, `f`, `d`); None where any of the three is absent."""
    parts = [
        _metric(launches, f"smsp__sass_thread_inst_executed_op_{letter}{op}_pred_on.sum", absent)
        for op in ("fma", "add", "mul")
    ]
    if any(part is None for part in parts):
        return None
    fma, add, mul = (part or 0.0 for part in parts)
    return round(2 * fma + add + mul)


def _tensor(launches: list[_Launch], absent: set[str]) -> tuple[int | None, str | None]:
    """The tensor path's math ops over its source types (None where the chip has none of its counters),
    and the type with most of them."""
    ops: dict[str, float] = {}
    for suffix, kind in TENSOR_TYPES.items():
        value = _metric(launches, f"sm__ops_path_tensor_src_{suffix}.sum", absent)
        if value is not None:
            ops[kind] = value
    if not ops:
        return None, None
    main = max(ops, key=lambda kind: ops[kind])
    return round(sum(ops.values())), main if ops[main] > 0 else None


def _kernel(name: str, launches: list[_Launch], rules: list[CounterRule], source: str) -> KernelCounters:
    absent: set[str] = set()
    by_precision = {p: _precision_flops(launches, letter, absent) for p, letter in PRECISIONS.items()}
    tensor_ops, tensor_type = _tensor(launches, absent)
    scalar = list(by_precision.values())
    flops = None if any(v is None for v in scalar) else sum(v or 0 for v in scalar) + (tensor_ops or 0)
    time_ns = _metric(launches, "gpu__time_duration.sum", absent)
    shared = [_last(launches, f"launch__shared_mem_per_block_{kind}", absent) for kind in ("static", "dynamic")]
    hz = _metric(launches, "sm__cycles_elapsed.avg.per_second", absent)
    verdict = next((r.text for r in rules if r.name == SOL_RULE), None)
    return KernelCounters(
        name=name,
        source=source,
        launches=len(launches),
        time_us=time_ns / 1e3 if time_ns is not None else None,
        flops=flops,
        flops_fp16=by_precision["fp16"],
        flops_fp32=by_precision["fp32"],
        flops_fp64=by_precision["fp64"],
        tensor_ops=tensor_ops,
        tensor_type=tensor_type,
        dram_read_bytes=_count(_metric(launches, "dram__bytes_read.sum", absent)),
        dram_write_bytes=_count(_metric(launches, "dram__bytes_write.sum", absent)),
        l2_bytes=_count(_metric(launches, "lts__t_bytes.sum", absent)),
        sm_pct=_metric(launches, f"sm__throughput.{PCT_ELAPSED}", absent),
        dram_pct=_metric(launches, f"dram__throughput.{PCT_ELAPSED}", absent),
        compute_memory_pct=_metric(launches, f"gpu__compute_memory_throughput.{PCT_ELAPSED}", absent),
        occupancy_pct=_metric(launches, "sm__warps_active.avg.pct_of_peak_sustained_active", absent),
        registers_per_thread=_last(launches, "launch__registers_per_thread", absent),
        shared_bytes_per_block=None if None in shared else sum(s or 0 for s in shared),
        block_size=_last(launches, "launch__block_size", absent),
        grid_size=_last(launches, "launch__grid_size", absent),
        sm_mhz=hz / 1e6 if hz is not None else None,
        verdict=verdict,
        rules=tuple(r for r in rules if r.name != SOL_RULE),
        absent=tuple(sorted(absent)),
    )


def read_counters(raw_csv: str, details_csv: str = "", source: str = "ncu") -> tuple[KernelCounters, ...]:
    """One `KernelCounters` per kernel name of ncu's raw page (launches averaged), with the details page's rules.

    A kernel's rules are its first launch's (every launch of one kernel gets the same verdicts, give or
    take a figure).
    """
    by_name: dict[str, list[_Launch]] = {}
    for launch in _launches(raw_csv):
        by_name.setdefault(launch.name, []).append(launch)
    rules = _rules(details_csv) if details_csv else {}
    return tuple(
        _kernel(name, launches, rules.get(launches[0].launch_id, []), source) for name, launches in by_name.items()
    )


def _measured(kernel: KernelTiming, counters: KernelCounters, summary: ProfileSummary) -> KernelTiming:
    """`kernel` with its counters; where they give FLOPs, rated on them and its DRAM bytes, the estimate kept."""
    joined = replace(kernel, counters=counters)
    if counters.flops is None:
        return joined
    work = DispatchWork(
        name=kernel.name,
        flops=counters.flops,
        bytes_read=counters.dram_read_bytes,
        bytes_written=counters.dram_write_bytes,
        ops=(),
        dtype=_measured_dtype(counters),
        contraction=bool(counters.tensor_ops),
        source=COUNTERS_SOURCE,
    )
    rated = rate_kernel(joined, work, summary.peaks, "")
    return replace(
        rated,
        work=kernel.work if kernel.flops is not None else "measured by ncu",
        estimate_flops=kernel.flops,
        estimate_bytes=kernel.bytes,
        estimate_source=kernel.work_source if kernel.flops is not None else None,
    )


def _measured_dtype(counters: KernelCounters) -> str | None:
    """The element type whose ceiling a measured kernel is held to: its tensor path's, else its busiest precision."""
    if counters.tensor_ops and counters.tensor_type:
        return TENSOR_DTYPES.get(counters.tensor_type)
    counts = {"f16": counters.flops_fp16 or 0, "f32": counters.flops_fp32 or 0, "f64": counters.flops_fp64 or 0}
    busiest = max(counts, key=lambda dtype: counts[dtype])
    return busiest if counts[busiest] else None


def with_counters(summary: ProfileSummary | None, counters: CountersPass | None) -> ProfileSummary | None:
    """The Kernels table with each kernel's counters joined by its name (letters and digits, as work is joined)."""
    if summary is None or counters is None or not counters.kernels:
        return summary
    by_key = {kernel_key(c.name): c for c in counters.kernels}
    kernels = tuple(
        _measured(k, c, summary) if (c := by_key.get(kernel_key(k.name))) is not None else k for k in summary.kernels
    )
    return replace(summary, kernels=kernels)


def summary_from_counters(kernels: Iterable[KernelCounters], device_id: str) -> ProfileSummary | None:
    """A Kernels table made of the counters pass's own times, for a run that has had no profile pass.

    Each kernel's time is ncu's, of one call with every kernel replayed alone: the pass's, not the run's.
    """
    rows = [k for k in kernels if k.time_us is not None]
    total = sum((k.time_us or 0.0) * k.launches for k in rows) or 1.0
    table = tuple(
        KernelTiming(
            name=k.name,
            count=k.launches,
            total_us=(k.time_us or 0.0) * k.launches,
            avg_us=k.time_us or 0.0,
            min_us=k.time_us or 0.0,
            p50_us=k.time_us or 0.0,
            max_us=k.time_us or 0.0,
            share=(k.time_us or 0.0) * k.launches / total,
            per_call=float(k.launches),
            workgroup_count=None,
            workgroup_size=None,
            source="ncu",
            timing=COUNTERS_TIMING,
        )
        for k in sorted(rows, key=lambda k: -(k.time_us or 0.0) * k.launches)
    )
    if not table:
        return None
    return ProfileSummary(
        source="ncu",
        device_id=device_id,
        calls=1,
        call_wall_ms=None,
        call_kernel_ms=sum(k.total_us for k in table) / 1e3,
        gap_ms=None,
        kernels=table,
    )
