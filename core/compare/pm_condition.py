"""The GPU's own counters of two runs, as compare's conditions say them: the reports' `pm_sampling` blocks.

A run on CUDA samples its GPU's performance counters while its calls go on
(CUPTI PM sampling, issue 48) and its report keeps each metric's median over
the calls. Beside the times, those say what the calls did to the GPU: a
change of SM or DRAM throughput with the same time is a change of the work,
and a lower SM clock explains slower calls whatever the code. This module
turns a block into the one line compare shows for a side, shortens the
reason of a side that did not sample, and reads the SM clock the counters
saw. It reads report dictionaries only (an older report has no block).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gputop.core.records.pm import ROLE_LABELS
from gputop.core.units import fixed, mhz, percent

__all__ = ["pm_clock_mhz", "pm_sampled", "pm_sampling_text", "short_reason"]

REASON_CHARS = 90  # a side's reason in the row: its first clause, at most this long


def pm_sampled(block: Any) -> bool:
    """Whether the block holds figures over the calls (not only a reason, not missing)."""
    return isinstance(block, Mapping) and isinstance(block.get("calls"), Mapping) and bool(block["calls"])


def _value_text(value: Any, unit: str) -> str:
    if not isinstance(value, (int, float)):
        return "-"
    if unit == "%":
        return percent(value)
    if unit == "MHz":
        return mhz(value)
    return f"{fixed(value)} {unit}".rstrip()


def pm_sampling_text(block: Any, which: str = "p50", sep: str = " ") -> str | None:
    """`SM 4.8% tensor 0.0% DRAM 0.9% clock 1995 MHz`: each metric's median (`which`: or p95) over the calls, in
    the block's order, `sep` between them; `not sampled: why` for a side that did not sample; None where the
    report has no block (an older gputop). `gputop run`'s printout says its pm lines with it too."""
    if not isinstance(block, Mapping):
        return None
    if not pm_sampled(block):
        return f"not sampled: {short_reason(block.get('reason'))}"
    roles, units, calls = block.get("roles") or {}, block.get("units") or {}, block["calls"]
    parts = []
    for metric in block.get("metrics") or list(calls):
        figures = calls.get(metric)
        if not isinstance(figures, Mapping):
            continue
        role = roles.get(metric)
        label = ROLE_LABELS.get(role, role) if role else metric.split(".", 1)[0]
        parts.append(f"{label} {_value_text(figures.get(which), units.get(metric, '%'))}")
    return sep.join(parts)


def short_reason(reason: Any) -> str:
    """A reason's first clause: a line of several clauses (what failed: what to do) loses what follows its first
    colon, and one still too long is cut at a word; the report keeps the whole line."""
    text = str(reason) if reason else "no reason given"
    if len(text) <= REASON_CHARS:
        return text
    head, colon, _ = text.partition(": ")
    if colon and len(head) >= 20:
        text = head
    if len(text) <= REASON_CHARS:
        return text
    cut = text[: REASON_CHARS - 1].rsplit(" ", 1)[0].rstrip(",;")
    return cut + "…"


def pm_clock_mhz(block: Any) -> float | None:
    """The median SM clock over the calls as the counters saw it (the metric of role `clock`, in MHz), or None."""
    if not pm_sampled(block):
        return None
    roles, units = block.get("roles") or {}, block.get("units") or {}
    for metric, figures in block["calls"].items():
        if roles.get(metric) == "clock" and units.get(metric) == "MHz" and isinstance(figures, Mapping):
            value = figures.get("p50")
            return float(value) if isinstance(value, (int, float)) and value > 0 else None
    return None
