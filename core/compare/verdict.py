"""The comparison of two reports and its verdict: the one line that sums it up.

`compare_reports` sets A against B: the conditions (`conditions.py`), the
call times tested (`significance.py`), the kernels paired and tested
(`pairing.py`), the plain rows (`reading.py`), and the verdict written from
them. Everything here reads report dictionaries, so a comparison never needs
either run again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gputop.core.compare.conditions import Condition, report_conditions
from gputop.core.compare.modes import mixed_groups_text, report_modes
from gputop.core.compare.pairing import KernelChange, kernel_changes
from gputop.core.compare.reading import Row, breakdown_rows, memory_rows, phase_rows, report_samples, report_value
from gputop.core.compare.samples import as_array
from gputop.core.compare.significance import DEFAULT_NOISE, Change, test_change, untested
from gputop.core.errors import UsageError
from gputop.core.records.calls import CallMode

__all__ = ["CALL_STATS", "Comparison", "compare_reports"]

CALL_STATS = ("p50", "p95", "mean")


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


def _call_changes(a: Mapping[str, Any], b: Mapping[str, Any], noise: float) -> list[Change]:
    sa = as_array(report_samples(a, "calls", "ms"))
    sb = as_array(report_samples(b, "calls", "ms"))
    out = []
    for stat in CALL_STATS:
        if len(sa) >= 2 and len(sb) >= 2:
            out.append(test_change(stat, sa, sb, noise))
        else:
            key = f"{stat}_ms"
            out.append(
                untested(stat, report_value(a, "calls", key), report_value(b, "calls", key),
                         int(report_value(a, "calls", "count") or 0), int(report_value(b, "calls", "count") or 0))
            )  # fmt: skip
    return out


def _pct(value: float) -> str:
    return f"{abs(value) * 100:.1f}%"


def _moved(kernels: Sequence[KernelChange]) -> list[str]:
    """`name +107%` of the kernels that moved beyond their floor, the largest first (three at most)."""
    moved = [k for k in kernels if k.change is not None and k.change.significant and k.change.change is not None]
    moved.sort(key=lambda k: -abs(k.change.change or 0.0) if k.change else 0.0)
    return [f"{k.name} {k.change.change * 100:+.0f}%" for k in moved[:3] if k.change and k.change.change is not None]


def _interval_text(change: Change) -> str:
    return f"95% CI {(change.low or 0) * 100:+.1f}% to {(change.high or 0) * 100:+.1f}%, p={change.p:.2g}"


def _head(p50: Change, *, mixed: bool) -> str:
    """What the calls' p50 says: a change, none, the mix of groups, or that these runs cannot tell."""
    if p50.change is None:
        return "no call times to compare"
    if mixed:  # the same groups in other proportions: the p50 moved with the mix (compare/modes.py)
        return (
            f"the same groups of calls in other proportions: p50 {p50.change * 100:+.1f}% from the mix, "
            "not a change of the calls"
        )
    if not p50.tested:
        return f"B's p50 is {p50.change * 100:+.1f}% against A's (no kept samples: untested)"
    if p50.significant and p50.low is not None and p50.high is not None:
        word = "faster" if p50.change < 0 else "slower"
        return f"B is {_pct(p50.change)} {word} (p50, {_interval_text(p50)})"
    if p50.within_wander:  # beyond chance, within the runs' own wander: neither a change nor none
        return f"cannot tell: {p50.wander_text()}, more than p50's {p50.change * 100:+.1f}% ({_interval_text(p50)})"
    unseen = ""
    if p50.floor is not None and p50.floor > p50.noise:  # the runs' wander raised the floor: say how far
        unseen = f"; {p50.wander_text()}: a change under {p50.floor * 100:.0f}% would not show"
    return f"no significant change (p50 {p50.change * 100:+.1f}%, {_interval_text(p50)}{unseen})"


def _verdict(
    calls: Sequence[Change], kernels: Sequence[KernelChange], warnings: Sequence[str], *, mixed: bool = False
) -> str:
    """The one line: the calls' head, then the kernels that moved beyond their floor (said as such wherever the
    calls did not show a change themselves: the verdict never reads "no change" over rows that moved)."""
    p50 = next(c for c in calls if c.stat == "p50")
    head = _head(p50, mixed=mixed)
    moved = _moved(kernels)
    parts = []
    if moved:
        said_by_calls = p50.significant and not mixed
        parts.append(", ".join(moved) if said_by_calls else "the kernels moved beyond their floor: " + ", ".join(moved))
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
        if not report_value(report, "calls", "count"):
            raise UsageError(f"{label}: the report has no calls to compare (the run ended before its steady calls)")
    conditions, warnings = report_conditions(a, b)
    calls = _call_changes(a, b, noise)
    kernels = kernel_changes(a, b, noise)
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
        breakdown=tuple(breakdown_rows(a, b)),
        phases=tuple(phase_rows(a, b)),
        memory=tuple(memory_rows(a, b)),
        noise=noise,
        verdict=_verdict(calls, kernels, warnings, mixed=mixed is not None),
        warnings=tuple(warnings),
        modes_a=modes_a,
        modes_b=modes_b,
        mixed_groups=mixed is not None,
    )
