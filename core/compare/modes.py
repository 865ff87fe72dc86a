"""Two runs that hold the same groups of calls in other proportions: a change of the mix, not of the calls.

On Vulkan the GPU's clock falls between submissions and a run's calls split
into a fast group and a slow one (`call_modes.py`); a short run catches more
fast calls than a long one. Their p50 and mean then differ by 20% while each
group's calls take what they took before. `gputop compare` reads each side's
groups from its kept call samples (or, without them, its report's
`calls.modes`) and, where both hold the same groups (as many, medians within
`SAME_MEDIANS`) in shares that differ by more than `SHARES_APART`, says so
instead of calling the change of the p50 or mean a change of the calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gputop.core.call_modes import SAME_MEDIANS, find_modes, modes_from_json, same_groups
from gputop.core.compare.samples import as_array
from gputop.core.records.calls import CallMode
from gputop.core.units import ms

__all__ = ["SHARES_APART", "mixed_groups_text", "report_modes", "shares_differ"]

SHARES_APART = 0.05  # a group's share of the calls differs by more than this (5 points): another mix


def report_modes(report: Mapping[str, Any]) -> tuple[CallMode, ...]:
    """The run's groups: from its kept call samples where it has them, else its report's `calls.modes`."""
    samples = report.get("samples")
    kept = samples.get("calls") if isinstance(samples, Mapping) else None
    values = as_array(kept.get("ms")) if isinstance(kept, Mapping) else as_array(None)
    if len(values):
        return find_modes(values)
    calls = report.get("calls")
    return modes_from_json(calls.get("modes") if isinstance(calls, Mapping) else None)


def shares_differ(a: Sequence[CallMode], b: Sequence[CallMode]) -> bool:
    """The same groups (`call_modes.same_groups`), some group's share apart by more than SHARES_APART."""
    return same_groups(a, b) and any(abs(x.share - y.share) > SHARES_APART for x, y in zip(a, b, strict=True))


def _shares(modes: Sequence[CallMode]) -> str:
    return "/".join(f"{m.share * 100:.0f}%" for m in modes)


def mixed_groups_text(a: Sequence[CallMode], b: Sequence[CallMode]) -> str | None:
    """The warning where A and B hold the same groups in other proportions; None where they do not."""
    if not shares_differ(a, b):
        return None
    groups = ", ".join(f"{ms(x.median_ms)} -> {ms(y.median_ms)}" for x, y in zip(a, b, strict=True))
    clocks = ""
    if all(m.clock_sm_mhz is not None for m in (*a, *b)):
        clocks = " at SM clocks " + " vs ".join(f"{m.clock_sm_mhz:.0f}" for m in a) + " MHz"
    return (
        f"A and B hold the same {len(a)} groups of calls ({groups}, each within {SAME_MEDIANS * 100:.0f}%){clocks} "
        f"in other proportions (A {_shares(a)}, B {_shares(b)}): a change of the p50 or mean comes from how many "
        "calls each group caught, not from the calls themselves"
    )
