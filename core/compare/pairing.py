"""Pairing the kernels of two runs: by name, by the source ops they were formed from, by dispatch ordinal.

Two compiles of one model may name their kernels differently (another graph
name, another numbering); a kernel is matched first by its name, then by what
it was formed from, then (a guess IREE's names allow) by its dispatch
ordinal; the rest are one side's only. A pair's per-dispatch p50 is tested
as the calls are (`significance.test_change`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gputop.core.compare.reading import report_samples
from gputop.core.compare.samples import as_array
from gputop.core.compare.significance import Change, test_change, untested
from gputop.core.profiling.work.layer_names import layer_name
from gputop.core.profiling.work.source_ops import display_name
from gputop.core.records.profile import SourceOp

__all__ = ["DISPATCH_ORDINAL", "KernelChange", "SourceOpsKey", "kernel_changes", "source_ops_key"]

DISPATCH_ORDINAL = re.compile(r"_dispatch_(\d+)")
SOURCE_LABEL_WIDTH = 48  # as the report's kernel table's `from`


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
        """`layers: conv1 + relu1`: its source ops as every face names them (`layer_name`, their common scope
        first, within 48 characters); None without."""
        if not self.source_ops:
            return None
        return layer_name([SourceOp(op, "", None) for op in self.source_ops], width=SOURCE_LABEL_WIDTH)


def _kernel_rows(report: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The report's kernels by name, in the order a call dispatches them where the samples know it."""
    rows = {str(k.get("name")): k for k in report.get("kernels") or [] if isinstance(k, Mapping)}
    order = list((report_samples(report, "dispatches", "us") or {}).keys())
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
    sa = as_array((report_samples(a, "dispatches", "us") or {}).get(name_a))
    sb = as_array((report_samples(b, "dispatches", "us") or {}).get(name_b))
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


def kernel_changes(a: Mapping[str, Any], b: Mapping[str, Any], noise: float) -> list[KernelChange]:
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
