"""The comparison of two reports: conditions, calls, kernels, breakdown, phases, memory and a verdict.

Everything here reads report dictionaries (`gputop run --json`, a session's
`report.json`) with their kept samples (`samples.py`), so a comparison never
needs either run again. A change counts as real only when three things
agree: the Mann-Whitney U test says the samples differ (p < ALPHA), the
bootstrap interval of the relative change excludes zero, and the change is
larger than the floor: the noise floor (3%), or the sum of how far each
run's own stretches of calls wandered (the range of its ten block medians
over their median), whichever is larger. Each run's level can be off by
about as much as it wanders within itself, so the difference of two runs by
about the sum (the A/A experiment in BENCHMARKS.md); thousands of calls make
any such offset "significant" to a test that sees only the calls of two runs.
A steadier run wanders less, and its floor stays nearer 3%. Anything
else is shown as `~`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gputop.core.compare.modes import mixed_groups_text, report_modes
from gputop.core.compare.pm import pm_clock_mhz, pm_sampled, pm_sampling_text
from gputop.core.compare.samples import as_array
from gputop.core.compare.significance import BLOCKS, block_statistics, bootstrap_change, mann_whitney_u
from gputop.core.errors import UsageError
from gputop.core.profiling.work.source_ops import display_name
from gputop.core.records.calls import CallMode
from gputop.core.records.profile import SourceOp
from gputop.core.wording import neighbours_text

__all__ = [
    "ALPHA",
    "BLOCKS_NEEDED",
    "CALL_STATS",
    "DEFAULT_NOISE",
    "Change",
    "Comparison",
    "Condition",
    "Gate",
    "KernelChange",
    "Row",
    "SourceOpsKey",
    "compare_reports",
    "gate",
    "parse_metric",
    "parse_percent",
    "source_ops_key",
    "test_change",
    "untested",
    "wander_of",
]

ALPHA = 0.05
DEFAULT_NOISE = 0.03  # changes smaller than this are `~` (see the module's docstring and BENCHMARKS.md)
CALL_STATS = ("p50", "p95", "mean")
CLOCK_APART = 0.10  # mean SM clocks this far apart make the comparison one of clocks, flagged at the top
CALL_CLOCK_APART = 0.05  # ... and, over the calls, median SM clocks this far apart (`calls.clocks`)


@dataclass(frozen=True)
class Change:
    """One statistic of A and of B, the relative change, its interval and whether it is real."""

    stat: str
    a: float | None
    b: float | None
    change: float | None  # b / a - 1
    low: float | None = None  # bootstrap interval of `change`
    high: float | None = None
    p: float | None = None  # Mann-Whitney U, two-sided
    significant: bool = False
    tested: bool = False  # False: no samples on one side, so only the numbers are shown
    n_a: int = 0
    n_b: int = 0
    floor: float | None = None  # the smallest change counted as real here: the noise floor or the runs' summed wander

    @property
    def mark(self) -> str:
        """`-31.0%` for a real change, `~` for none, `?` where it could not be tested."""
        if self.change is None:
            return "-"
        if not self.tested:
            return "?"
        return f"{self.change * 100:+.1f}%" if self.significant else "~"


@dataclass(frozen=True)
class KernelChange:
    """A kernel of A and its match in B, or a kernel only one side has."""

    name_a: str | None
    name_b: str | None
    match: str  # name | source ops | position | only A | only B
    per_call_a: float | None  # dispatches per call
    per_call_b: float | None
    ms_per_call_a: float | None  # its time per call (avg dispatch time x dispatches per call)
    ms_per_call_b: float | None
    change: Change | None  # of its per-dispatch p50, tested over per-dispatch samples
    # What it was formed from, each source op as `display_name` says it (B's, else A's); () where the report
    # names none (a report of an older gputop, a .vmfb without sources).
    source_ops: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.name_b or self.name_a or "?"

    @property
    def source_label(self) -> str | None:
        """`/layers/conv1/Conv +1`: its first source op and how many more were fused into it; None without."""
        if not self.source_ops:
            return None
        more = len(self.source_ops) - 1
        return self.source_ops[0] + (f" +{more}" if more else "")


@dataclass(frozen=True)
class Condition:
    """One condition of the runs (target, flags, versions, device, clocks, inputs), and whether it differs."""

    what: str
    a: str
    b: str
    differs: bool
    warning: bool = False  # a difference that makes the times incomparable (clocks, a cold GPU)


@dataclass(frozen=True)
class Row:
    """A plain number of each side (a breakdown segment, a phase, a memory peak)."""

    what: str
    a: float | None
    b: float | None
    unit: str  # ms, s, bytes

    @property
    def change(self) -> float | None:
        if self.a is None or self.b is None or not self.a:
            return None
        return self.b / self.a - 1.0


@dataclass(frozen=True)
class Comparison:
    """A against B, all of it; `verdict` is the one line that sums it up."""

    a_label: str
    b_label: str
    conditions: tuple[Condition, ...]
    calls: tuple[Change, ...]
    kernels: tuple[KernelChange, ...]
    breakdown: tuple[Row, ...]
    phases: tuple[Row, ...]
    memory: tuple[Row, ...]
    noise: float
    verdict: str
    warnings: tuple[str, ...] = field(default=())
    # Each side's groups of calls (`call_modes.py`; one for a steady run): where both hold the same groups in
    # other proportions, a change of the p50 or mean is the mix's (`compare/modes.py`), and the verdict says so.
    modes_a: tuple[CallMode, ...] = field(default=())
    modes_b: tuple[CallMode, ...] = field(default=())
    mixed_groups: bool = False

    def call(self, stat: str) -> Change | None:
        return next((c for c in self.calls if c.stat == stat), None)

    def kernel(self, name: str) -> KernelChange | None:
        """The kernel named `name` exactly, or the one kernel whose name contains it."""
        exact = [k for k in self.kernels if name in (k.name_a, k.name_b)]
        if exact:
            return exact[0]
        partial = [k for k in self.kernels if any(name in (n or "") for n in (k.name_a, k.name_b))]
        return partial[0] if len(partial) == 1 else None


# -- conditions ------------------------------------------------------------------------------


def _get(report: Mapping[str, Any], *path: str) -> Any:
    value: Any = report
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _text(value: Any) -> str:
    if value is None or value == "" or value == []:
        return "-"
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value)
    return str(value)


def _inputs_text(report: Mapping[str, Any]) -> str:
    inputs = report.get("inputs") or []
    parts = []
    for item in inputs:
        if isinstance(item, Mapping):
            shape = "x".join(str(d) for d in item.get("shape") or []) or "scalar"
            mean = item.get("mean")
            parts.append(f"{shape}x{item.get('dtype')}" + (f" mean {mean:.4g}" if isinstance(mean, float) else ""))
    return ", ".join(parts) or "-"


def _clocks(report: Mapping[str, Any]) -> Mapping[str, Any] | None:
    clocks = _get(report, "profile", "clocks")
    return clocks if isinstance(clocks, Mapping) else None


def _call_clocks(report: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """`calls.clocks` where a clock was read (not only a reason), else None."""
    clocks = _get(report, "calls", "clocks")
    return clocks if isinstance(clocks, Mapping) and clocks.get("sm_mhz_median") else None


def _call_clocks_text(clocks: Mapping[str, Any] | None) -> str:
    """`median 345 MHz (345-1980)`: the SM clock the calls ran at, the row compare shows."""
    if clocks is None:
        return "-"
    low, median, high = clocks.get("sm_mhz_min"), clocks["sm_mhz_median"], clocks.get("sm_mhz_max")
    return f"median {median} MHz" + (f" ({low}-{high})" if low != high else "")


def _call_clock_conditions(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[Condition | None, list[str]]:
    """The SM clock each side's calls ran at, and a warning where their medians are more than 5% apart (calls
    at a lower clock run slower whatever the code) or a side's own clocks moved."""
    ca, cb = _call_clocks(a), _call_clocks(b)
    if ca is None and cb is None:
        return None, []
    warnings = []
    sm_a, sm_b = (ca["sm_mhz_median"] if ca else None), (cb["sm_mhz_median"] if cb else None)
    apart = bool(sm_a and sm_b and abs(sm_b - sm_a) > CALL_CLOCK_APART * max(sm_a, sm_b))
    if apart:
        warnings.append(
            f"the GPU ran the calls at other clocks: median SM {sm_a} MHz in A, {sm_b} MHz in B "
            "(calls at a lower clock are slower whatever the code)"
        )
    for side, clocks in (("A", ca), ("B", cb)):
        if clocks and clocks.get("warning"):
            warnings.append(f"{side}'s calls: {clocks['warning']}")
    ta, tb = _call_clocks_text(ca), _call_clocks_text(cb)
    return Condition("SM clock (calls)", ta, tb, apart or (ca is None) != (cb is None), apart), warnings


def _pm_sampling_conditions(
    a: Mapping[str, Any], b: Mapping[str, Any], clocks_warned: bool
) -> tuple[Condition | None, list[str]]:
    """The GPU's own counters over each side's calls (`pm_sampling`, `compare/pm.py`), where a side sampled them,
    and a warning where the SM clocks they saw are more than 5% apart (unless NVML's clocks said so already)."""
    pa, pb = a.get("pm_sampling"), b.get("pm_sampling")
    if not (pm_sampled(pa) or pm_sampled(pb)):
        return None, []  # neither side sampled (CPU runs, older reports): nothing to set side by side
    sm_a, sm_b = pm_clock_mhz(pa), pm_clock_mhz(pb)
    apart = bool(sm_a and sm_b and abs(sm_b - sm_a) > CALL_CLOCK_APART * max(sm_a, sm_b))
    warnings = []
    if apart and not clocks_warned:
        warnings.append(
            f"the GPU's counters saw other SM clocks over the calls: median {sm_a:.0f} MHz in A, {sm_b:.0f} MHz "
            "in B (calls at a lower clock are slower whatever the code)"
        )
    ta, tb = _text(pm_sampling_text(pa)), _text(pm_sampling_text(pb))
    return Condition("PM sampling (calls p50)", ta, tb, ta != tb, apart), warnings


def _neighbours_text(neighbours: Any) -> str | None:
    """`host 0.02 of 2 cores; nobody else on cuda:0`: who else used the host and the GPU, the row compare shows."""
    if not isinstance(neighbours, Mapping):
        return None
    parts = []
    host = neighbours.get("host")
    if isinstance(host, Mapping):
        parts.append(f"host {host.get('other_cores', 0):.2f} of {host.get('cores')} cores")
    if neighbours.get("gpu"):
        parts.append(neighbours_text(neighbours) or f"nobody else on {neighbours.get('device_id')}")
    return "; ".join(parts) or None


def _device_text(report: Mapping[str, Any]) -> str:
    device = report.get("device") or {}
    if not isinstance(device, Mapping):
        return "-"
    name = device.get("name") or ""
    return f"{device.get('id', '?')} ({name})" if name and name != device.get("id") else str(device.get("id", "-"))


def _conditions(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[list[Condition], list[str]]:
    rows: list[Condition] = []
    warnings: list[str] = []

    def add(what: str, va: Any, vb: Any, *, warning: bool = False) -> None:
        ta, tb = _text(va), _text(vb)
        rows.append(Condition(what, ta, tb, ta != tb, warning and ta != tb))

    add("target", a.get("target"), b.get("target"))
    add("target sha256", (a.get("target_sha256") or "")[:16] or None, (b.get("target_sha256") or "")[:16] or None)
    add("function", a.get("function"), b.get("function"))
    add("compile cache key", _get(a, "compile", "cache_key"), _get(b, "compile", "cache_key"))
    flags_a = list(_get(a, "compile", "flags") or [])
    flags_b = list(_get(b, "compile", "flags") or [])
    only_a = [f for f in flags_a if f not in flags_b]
    only_b = [f for f in flags_b if f not in flags_a]
    rows.append(
        Condition("compile flags", _text(only_a) if only_a else "(same)", _text(only_b) if only_b else "(same)",
                  bool(only_a or only_b))
    )  # fmt: skip
    add("IREE compiler", _get(a, "iree_version", "compiler"), _get(b, "iree_version", "compiler"))
    add("IREE runtime", _get(a, "iree_version", "runtime"), _get(b, "iree_version", "runtime"))
    add("gputop", a.get("gputop_version"), b.get("gputop_version"))
    add("device", _device_text(a), _device_text(b), warning=True)
    add("driver", _get(a, "device", "driver_info"), _get(b, "device", "driver_info"))
    ca, cb = _clocks(a), _clocks(b)
    if ca or cb:
        sm_a = ca.get("mean_sm_mhz") if ca else None
        sm_b = cb.get("mean_sm_mhz") if cb else None
        apart = bool(sm_a and sm_b and abs(sm_b - sm_a) > CLOCK_APART * max(sm_a, sm_b))
        add(
            "SM clock (profile)",
            f"{sm_a:.0f} MHz" if sm_a else None,
            f"{sm_b:.0f} MHz" if sm_b else None,
        )
        if apart:
            warnings.append(f"the GPU ran at other clocks: mean SM {sm_a:.0f} MHz in A, {sm_b:.0f} MHz in B")
        for side, clocks in (("A", ca), ("B", cb)):
            if clocks and clocks.get("warning"):
                warnings.append(f"{side}'s clocks: {clocks['warning']}")
    call_clocks, clock_warnings = _call_clock_conditions(a, b)
    if call_clocks is not None:
        rows.append(call_clocks)
        warnings += clock_warnings
    pm_row, pm_warnings = _pm_sampling_conditions(a, b, clocks_warned=bool(call_clocks and call_clocks.warning))
    if pm_row is not None:
        rows.append(pm_row)
        warnings += pm_warnings
    for what, path in (("others (calls)", ("neighbours",)), ("others (profile)", ("profile", "neighbours"))):
        na, nb = _get(a, *path), _get(b, *path)
        if not (isinstance(na, Mapping) or isinstance(nb, Mapping)):
            continue
        flagged = False
        for side, neighbours in (("A", na), ("B", nb)):
            if isinstance(neighbours, Mapping) and neighbours.get("warning"):
                flagged = True
                warnings.append(f"{side}'s {what.removeprefix('others ').strip('()')}: {neighbours['warning']}")
        # A quiet host's load differs in the second decimal from run to run: only a flagged side makes it differ.
        ta, tb = _text(_neighbours_text(na)), _text(_neighbours_text(nb))
        rows.append(Condition(what, ta, tb, flagged and ta != tb, flagged and ta != tb))
    add("inputs", _inputs_text(a), _inputs_text(b))
    add("state", a.get("state"), b.get("state"))
    if _get(a, "device", "id") != _get(b, "device", "id"):
        warnings.append(f"different devices: {_device_text(a)} against {_device_text(b)}")
    if a.get("target") != b.get("target"):
        warnings.append(f"different targets: {a.get('target')} against {b.get('target')}")
    return rows, warnings


# -- calls and kernels -----------------------------------------------------------------------


def _samples(report: Mapping[str, Any], *path: str) -> Any:
    return _get(report, "samples", *path)


def test_change(stat: str, a: np.ndarray, b: np.ndarray, noise: float) -> Change:
    """`stat` of two sample sets: the change, its bootstrap interval, the U test, and whether it is real.

    Samples are a time series: the calls of a run, a kernel's dispatches over
    a profile pass. Where each side has enough of them, the test counts
    BLOCKS consecutive stretches per side, not single samples (the U test
    compares the stretches' statistics, the interval resamples stretches), so
    that load which comes and goes during a run is noise, not evidence.
    """
    wander = 0.0
    if len(a) >= 2 * BLOCKS and len(b) >= 2 * BLOCKS:
        change, low, high = bootstrap_change(a, b, stat, blocks=BLOCKS)
        stretches_a, stretches_b = block_statistics(a, stat), block_statistics(b, stat)
        p = mann_whitney_u(stretches_a, stretches_b).p
        wander = _wander(stretches_a) + _wander(stretches_b)
    else:
        change, low, high = bootstrap_change(a, b, stat)
        p = mann_whitney_u(a, b).p
    a_value = float(np.percentile(a, 50 if stat == "p50" else 95)) if stat != "mean" else float(a.mean())
    b_value = float(np.percentile(b, 50 if stat == "p50" else 95)) if stat != "mean" else float(b.mean())
    floor = max(noise, wander)
    real = p < ALPHA and (low > 0 or high < 0) and abs(change) >= floor
    return Change(stat, a_value, b_value, change, low, high, p, real, True, len(a), len(b), floor)


BLOCKS_NEEDED = 2 * BLOCKS  # samples a side needs for the tests by stretches


def wander_of(values: np.ndarray, stat: str) -> float:
    """How far the stretches of one run's samples wandered (0 with too few samples for stretches)."""
    return _wander(block_statistics(values, stat)) if len(values) >= BLOCKS_NEEDED else 0.0


def _wander(stretches: np.ndarray) -> float:
    """How far a run's own stretches wandered: the range of their statistic over its median."""
    middle = float(np.median(stretches))
    return float(stretches.max() - stretches.min()) / middle if middle > 0 else 0.0


def untested(stat: str, a: float | None, b: float | None, n_a: int = 0, n_b: int = 0) -> Change:
    change = b / a - 1.0 if a and b is not None else None
    return Change(stat, a, b, change, n_a=n_a, n_b=n_b)


def _call_changes(a: Mapping[str, Any], b: Mapping[str, Any], noise: float) -> list[Change]:
    sa = as_array(_samples(a, "calls", "ms"))
    sb = as_array(_samples(b, "calls", "ms"))
    out = []
    for stat in CALL_STATS:
        if len(sa) >= 2 and len(sb) >= 2:
            out.append(test_change(stat, sa, sb, noise))
        else:
            key = f"{stat}_ms"
            out.append(
                untested(stat, _get(a, "calls", key), _get(b, "calls", key),
                         int(_get(a, "calls", "count") or 0), int(_get(b, "calls", "count") or 0))
            )  # fmt: skip
    return out


DISPATCH_ORDINAL = re.compile(r"_dispatch_(\d+)")


def _kernel_rows(report: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The report's kernels by name, in the order a call dispatches them where the samples know it."""
    rows = {str(k.get("name")): k for k in report.get("kernels") or [] if isinstance(k, Mapping)}
    order = list((_samples(report, "dispatches", "us") or {}).keys())
    ordered = {name: rows[name] for name in order if name in rows}
    ordered.update({name: row for name, row in rows.items() if name not in ordered})
    return ordered


SourceOpsKey = tuple[tuple[str | None, str, str | None], ...]


def source_ops_key(ops: Sequence[Mapping[str, Any]] | Sequence[SourceOp] | None) -> SourceOpsKey:
    """What a kernel was formed from, as two compiles are matched by it: each source op's name and op, in order.

    A named op's line is left out: an op added above it moves the line, and the op is still the same one.
    An op without a name (a plain `.mlir`'s) is known only by its line (`mlp.mlir:7:9`), which is kept: by
    its op alone any matmul would be any other. Takes the report's JSON form or `SourceOp`s; () where there
    are none (a report of an older gputop, a .vmfb without sources).
    """
    key: list[tuple[str | None, str, str | None]] = []
    for op in ops or ():
        if isinstance(op, Mapping):
            op = SourceOp(op.get("name"), str(op.get("op")), op.get("loc"))
        key.append((op.name, op.op, None if op.name else op.loc))
    return tuple(key)


def _source_ops(row: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    ops = row.get("source_ops") if row else None
    return [op for op in ops or () if isinstance(op, Mapping)]


def _pair_by_source_ops(
    only_a: list[str], only_b: list[str], ka: Mapping[str, Mapping[str, Any]], kb: Mapping[str, Mapping[str, Any]]
) -> list[tuple[str, str]]:
    """Kernels formed from the same source ops, whatever IREE named them (another graph name, another
    numbering): paired where as many kernels of each side have those ops (a fusion that changed leaves them
    apart; an op split in two, a pad's copy and the conv, pairs in the order a call dispatches them)."""
    groups_a: dict[SourceOpsKey, list[str]] = {}
    groups_b: dict[SourceOpsKey, list[str]] = {}
    for names, rows, groups in ((only_a, ka, groups_a), (only_b, kb, groups_b)):
        for name in names:
            if key := source_ops_key(_source_ops(rows.get(name))):
                groups.setdefault(key, []).append(name)
    pairs: list[tuple[str, str]] = []
    for key, names_a in groups_a.items():
        names_b = groups_b.get(key, [])
        if len(names_b) == len(names_a):
            pairs.extend(zip(names_a, names_b, strict=True))
    return pairs


def _pair_renamed(only_a: list[str], only_b: list[str]) -> list[tuple[str, str]]:
    """Kernels IREE renamed: the same dispatch ordinal, where as many went as came (no fusion)."""
    if not only_a or len(only_a) != len(only_b):
        return []
    ord_a = [DISPATCH_ORDINAL.search(n) for n in only_a]
    ord_b = [DISPATCH_ORDINAL.search(n) for n in only_b]
    if all(ord_a) and all(ord_b):
        by_ord = {m.group(1): n for m, n in zip(ord_b, only_b, strict=True) if m}
        pairs = [(n, by_ord[m.group(1)]) for m, n in zip(ord_a, only_a, strict=True) if m and m.group(1) in by_ord]
        return pairs if len(pairs) == len(only_a) else []
    return list(zip(only_a, only_b, strict=True))  # no ordinals: by position among the unmatched


def _ms_per_call(row: Mapping[str, Any] | None) -> float | None:
    if not row:
        return None
    avg, per_call = row.get("avg_us"), row.get("per_call")
    return avg * per_call / 1e3 if isinstance(avg, (int, float)) and isinstance(per_call, (int, float)) else None


def _kernel_change(
    a: Mapping[str, Any], b: Mapping[str, Any], name_a: str, name_b: str, match: str, noise: float
) -> KernelChange:
    ra, rb = _kernel_rows(a).get(name_a), _kernel_rows(b).get(name_b)
    sa = as_array((_samples(a, "dispatches", "us") or {}).get(name_a))
    sb = as_array((_samples(b, "dispatches", "us") or {}).get(name_b))
    if len(sa) >= 2 and len(sb) >= 2:
        change: Change = test_change("p50", sa, sb, noise)
    else:
        change = untested("p50", ra.get("p50_us") if ra else None, rb.get("p50_us") if rb else None)
    return KernelChange(
        name_a, name_b, match, ra.get("per_call") if ra else None, rb.get("per_call") if rb else None,
        _ms_per_call(ra), _ms_per_call(rb), change, _source_names(rb) or _source_names(ra),
    )  # fmt: skip


def _source_names(row: Mapping[str, Any] | None) -> tuple[str, ...]:
    return tuple(display_name(SourceOp(op.get("name"), str(op.get("op")), op.get("loc"))) for op in _source_ops(row))


def _kernel_changes(a: Mapping[str, Any], b: Mapping[str, Any], noise: float) -> list[KernelChange]:
    """Kernels matched by name, then by the source ops they were formed from, then (a guess IREE's names
    allow) by their dispatch ordinal; the rest are one side's only."""
    ka, kb = _kernel_rows(a), _kernel_rows(b)
    out = [_kernel_change(a, b, name, name, "name", noise) for name in ka if name in kb]
    only_a = [n for n in ka if n not in kb]
    only_b = [n for n in kb if n not in ka]

    def matched(pairs: list[tuple[str, str]], match: str) -> None:
        for name_a, name_b in pairs:
            out.append(_kernel_change(a, b, name_a, name_b, match, noise))
            only_a.remove(name_a)
            only_b.remove(name_b)

    matched(_pair_by_source_ops(only_a, only_b, ka, kb), "source ops")
    matched(_pair_renamed(only_a, only_b), "position")
    for name in only_a:
        out.append(
            KernelChange(name, None, "only A", ka[name].get("per_call"), None, _ms_per_call(ka[name]), None, None,
                         _source_names(ka[name]))
        )  # fmt: skip
    for name in only_b:
        out.append(
            KernelChange(None, name, "only B", None, kb[name].get("per_call"), None, _ms_per_call(kb[name]), None,
                         _source_names(kb[name]))
        )  # fmt: skip
    return out


# -- breakdown, phases, memory ---------------------------------------------------------------


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _breakdown(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Row]:
    ta = _get(a, "call_breakdown", "totals") or {}
    tb = _get(b, "call_breakdown", "totals") or {}
    rows = [
        Row("wall", _number(_get(a, "call_breakdown", "wall_ms")), _number(_get(b, "call_breakdown", "wall_ms")), "ms")
    ]
    for key in list(ta) + [k for k in tb if k not in ta]:
        rows.append(Row(key.removesuffix("_ms"), _number(ta.get(key)), _number(tb.get(key)), "ms"))
    return rows if ta or tb else []


def _phases(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Row]:
    pa, pb = a.get("phases") or {}, b.get("phases") or {}
    keys = list(pa) + [k for k in pb if k not in pa]
    rows = [Row(k.removesuffix("_s"), _number(pa.get(k)), _number(pb.get(k)), "s") for k in keys]
    return [r for r in rows if r.a is not None or r.b is not None]


def _memory(report: Mapping[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for dev in _get(report, "memory", "devices") or []:
        if not isinstance(dev, Mapping):
            continue
        device = str(dev.get("device_id"))
        if (peak := _number(dev.get("peak_live_bytes"))) is not None:
            out[f"{device} live peak"] = peak
        for pool in dev.get("pools") or []:
            if isinstance(pool, Mapping) and (value := _number(pool.get("peak_bytes"))) is not None:
                out[f"{device} {pool.get('memory_type')} pool peak"] = value
    if (rss := _number(_get(report, "memory", "host_rss_peak_bytes"))) is not None:
        out["host RSS peak"] = rss
    return out


def _memory_rows(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Row]:
    ma, mb = _memory(a), _memory(b)
    keys = list(ma) + [k for k in mb if k not in ma]
    return [Row(k, ma.get(k), mb.get(k), "bytes") for k in keys]


# -- verdict and gate ------------------------------------------------------------------------


def _pct(value: float) -> str:
    return f"{abs(value) * 100:.1f}%"


def _verdict(
    calls: Sequence[Change], kernels: Sequence[KernelChange], warnings: Sequence[str], *, mixed: bool = False
) -> str:
    p50 = next(c for c in calls if c.stat == "p50")
    if p50.change is None:
        head = "no call times to compare"
    elif mixed:  # the same groups in other proportions: the p50 moved with the mix (compare/modes.py)
        head = (
            f"the same groups of calls in other proportions: p50 {p50.change * 100:+.1f}% from the mix, "
            "not a change of the calls"
        )
    elif not p50.tested:
        head = f"B's p50 is {p50.change * 100:+.1f}% against A's (no kept samples: untested)"
    elif p50.significant and p50.low is not None and p50.high is not None:
        word = "faster" if p50.change < 0 else "slower"
        head = (
            f"B is {_pct(p50.change)} {word} (p50, 95% CI {p50.low * 100:+.1f}% to {p50.high * 100:+.1f}%, "
            f"p={p50.p:.2g})"
        )
    else:
        head = (
            f"no significant change (p50 {p50.change * 100:+.1f}%, 95% CI {(p50.low or 0) * 100:+.1f}% to "
            f"{(p50.high or 0) * 100:+.1f}%, p={p50.p:.2g})"
        )
    moved = [k for k in kernels if k.change is not None and k.change.significant and k.change.change is not None]
    moved.sort(key=lambda k: -abs(k.change.change or 0.0) if k.change else 0.0)
    parts = [f"{k.name} {k.change.change * 100:+.0f}%" for k in moved[:3] if k.change and k.change.change is not None]
    gone = sum(1 for k in kernels if k.match == "only A")
    new = sum(1 for k in kernels if k.match == "only B")
    if gone or new:
        parts.append(f"{gone} kernel{'s' if gone != 1 else ''} only in A, {new} only in B")
    text = head + ("; " + ", ".join(parts) if parts else "")
    if warnings:
        text += " (see the warnings above)"
    return text


def compare_reports(
    a: Mapping[str, Any], b: Mapping[str, Any], *, a_label: str = "A", b_label: str = "B", noise: float = DEFAULT_NOISE
) -> Comparison:
    """A against B. Raises UsageError where a side has no calls to compare."""
    for label, report in ((a_label, a), (b_label, b)):
        if not _get(report, "calls", "count"):
            raise UsageError(f"{label}: the report has no calls to compare (the run ended before its steady calls)")
    conditions, warnings = _conditions(a, b)
    calls = _call_changes(a, b, noise)
    kernels = _kernel_changes(a, b, noise)
    modes_a, modes_b = report_modes(a), report_modes(b)
    mixed = mixed_groups_text(modes_a, modes_b)
    if mixed is not None:
        warnings.append(mixed)
    return Comparison(
        a_label=a_label,
        b_label=b_label,
        conditions=tuple(conditions),
        calls=tuple(calls),
        kernels=tuple(kernels),
        breakdown=tuple(_breakdown(a, b)),
        phases=tuple(_phases(a, b)),
        memory=tuple(_memory_rows(a, b)),
        noise=noise,
        verdict=_verdict(calls, kernels, warnings, mixed=mixed is not None),
        warnings=tuple(warnings),
        modes_a=modes_a,
        modes_b=modes_b,
        mixed_groups=mixed is not None,
    )


@dataclass(frozen=True)
class Gate:
    """The CI gate's outcome: whether it failed, and the line that says why (or that it passed)."""

    failed: bool
    line: str


def parse_percent(text: str) -> float:
    """`5%`, `5` or `0.5%` as a fraction (0.05)."""
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise UsageError(f"--fail-above {text}: expected a percentage such as 5%") from None
    if value < 0:
        raise UsageError(f"--fail-above {text}: must not be negative")
    return value / 100.0


def parse_metric(text: str) -> str:
    """p50, p95 or kernel:NAME."""
    if text in ("p50", "p95") or (text.startswith("kernel:") and len(text) > len("kernel:")):
        return text
    raise UsageError(f"--metric {text}: expected p50, p95 or kernel:NAME")


def gate(comparison: Comparison, metric: str, threshold: float) -> Gate:
    """Fail when `metric` of B is significantly slower than A's by more than `threshold` (a fraction)."""
    if metric.startswith("kernel:"):
        name = metric.removeprefix("kernel:")
        kernel = comparison.kernel(name)
        if kernel is None:
            raise UsageError(f"--metric {metric}: no kernel of that name in both runs")
        if kernel.change is None:
            raise UsageError(f"--metric {metric}: {kernel.name} is {kernel.match}; nothing to compare")
        change, what = kernel.change, f"kernel {kernel.name} (p50 per dispatch)"
    else:
        found = comparison.call(metric)
        assert found is not None
        change, what = found, f"call time {metric}"
    if change.change is None or not change.tested:
        raise UsageError(f"{what}: no kept samples on one side to test (recorded by an older gputop?)")
    interval = f"95% CI {(change.low or 0) * 100:+.1f}% to {(change.high or 0) * 100:+.1f}%, p={change.p:.2g}"
    if change.significant and change.change > threshold:
        return Gate(
            True,
            f"regression: {what} is {change.change * 100:+.1f}% slower than the baseline "
            f"({interval}; threshold {threshold * 100:g}%)",
        )
    verdict = "significant" if change.significant else "not significant"
    return Gate(
        False,
        f"gate passed: {what} {change.change * 100:+.1f}% ({verdict}, {interval}; threshold {threshold * 100:g}%)",
    )
