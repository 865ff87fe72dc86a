"""A comparison in words: the lines `gputop compare` prints, and the JSON it writes.

Kept apart from `verdict.py` so that the numbers and the way they are said can
change independently; every number a person reads goes through core/units.py.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from gputop.core.call_modes import modes_text
from gputop.core.compare.pairing import KernelChange
from gputop.core.compare.reading import Row
from gputop.core.compare.significance import Change
from gputop.core.compare.verdict import Comparison
from gputop.core.records.base import to_json
from gputop.core.units import human_bytes, ms, seconds

__all__ = ["comparison_json", "comparison_text", "verdict_line"]


def verdict_line(comparison: Comparison) -> str:
    return f"verdict: {comparison.verdict}"


def _interval(change: Change) -> str:
    if not change.tested or change.low is None or change.high is None:
        return "untested (no kept samples)"
    floor = f" floor {change.floor * 100:.0f}%" if change.floor is not None else ""
    return f"[{change.low * 100:+.1f}%, {change.high * 100:+.1f}%] p={change.p:.2g}{floor}"


def _value(row: Row, value: float | None) -> str:
    if row.unit == "bytes":
        return human_bytes(value)
    if row.unit == "s":
        return seconds(value)
    return ms(value)


def _rows(title: str, rows: tuple[Row, ...]) -> list[str]:
    if not rows:
        return []
    lines = [title]
    width = max(len(r.what) for r in rows)
    for row in rows:
        change = row.change
        delta = f"{change * 100:+.1f}%" if change is not None else "-"
        lines.append(f"  {row.what:<{width}}  {_value(row, row.a):>10}  {_value(row, row.b):>10}  {delta:>8}")
    return lines


def _kernel_line(kernel: KernelChange, width: int) -> str:
    name = kernel.name
    if kernel.match in ("position", "source ops"):
        name = f"{kernel.name_a} -> {kernel.name_b}"
    per_call = f"{ms(kernel.ms_per_call_a)} -> {ms(kernel.ms_per_call_b)}/call"
    came_from = f"  from {kernel.source_label}" if kernel.source_label else ""
    if kernel.change is None:
        return f"  {name:<{width}}  {kernel.match:<8}  {per_call}{came_from}"
    change = kernel.change
    mark = change.mark
    if kernel.match == "source ops":  # IREE named them apart; the ops they were formed from are the same
        came_from = f"  (matched by source ops: {kernel.source_label})"
    elif kernel.match == "position":
        came_from = "  (renamed)" + came_from
    return f"  {name:<{width}}  {mark:>8}  {per_call}  {_interval(change)}{came_from}"


def comparison_text(comparison: Comparison) -> str:
    """The whole comparison: warnings, conditions that differ, calls, kernels, breakdown, phases, memory, verdict."""
    c = comparison
    lines = [f"A  {c.a_label}", f"B  {c.b_label}"]
    lines += [f"warning: {w}" for w in c.warnings]
    differs = [row for row in c.conditions if row.differs]
    lines.append("conditions" + ("" if differs else ": the same (target, flags, versions, device, inputs)"))
    if differs:
        width = max(len(r.what) for r in differs)
        for row in differs:
            lines.append(f"  {row.what:<{width}}  A {row.a}")
            lines.append(f"  {'':<{width}}  B {row.b}")
    n_a = c.calls[0].n_a if c.calls else 0
    n_b = c.calls[0].n_b if c.calls else 0
    lines.append(
        f"calls (samples: A {n_a}, B {n_b}; `~`: no real change, noise floor {c.noise * 100:g}%; "
        "`(+x%)`: beyond chance, within the runs' own wander)"
    )
    for change in c.calls:
        lines.append(
            f"  {change.stat:<5} {ms(change.a):>10} -> {ms(change.b):>10}  {change.mark:>8}  {_interval(change)}"
        )
    if len(c.modes_a) > 1 or len(c.modes_b) > 1:  # calls in separate groups (call_modes.py)
        lines.append(f"  groups A {modes_text(to_json(c.modes_a)) or 'one group'}")
        lines.append(f"         B {modes_text(to_json(c.modes_b)) or 'one group'}")
    if c.kernels:
        lines.append("kernels (p50 per dispatch; time per call)")
        width = min(60, max(len(k.name) for k in c.kernels))
        lines += [_kernel_line(k, width) for k in c.kernels]
    lines += _rows("call breakdown (ms per call)", c.breakdown)
    lines += _rows("phases", c.phases)
    lines += _rows("memory peaks", c.memory)
    lines.append(verdict_line(c))
    return "\n".join(lines)


def comparison_json(comparison: Comparison) -> dict[str, Any]:
    """The comparison as JSON: every field of `Comparison`, each change with its `mark`."""
    data = dataclasses.asdict(comparison)
    for change, row in zip(comparison.calls, data["calls"], strict=True):
        row["mark"] = change.mark
    for kernel, row in zip(comparison.kernels, data["kernels"], strict=True):
        row["name"] = kernel.name
        if kernel.change is not None and row["change"] is not None:
            row["change"]["mark"] = kernel.change.mark
    return data
