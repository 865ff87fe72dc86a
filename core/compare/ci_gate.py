"""The CI gate: `--fail-above` and `--metric` read, and a comparison judged against them.

`gputop compare --fail-above 5%` and `gputop run --baseline` fail (exit 7, `EXIT_REGRESSION`)
where the metric of B is significantly slower than A's by more than the
threshold; the line says why, or that the gate passed. Where the runs cannot
tell (exit 8, `EXIT_UNDECIDED`), the gate fails closed and says so: the metric
is slower beyond chance and by more than the threshold but within how far the
runs' own calls wandered (`Change.within_wander`), or the kernels are slower
beyond their floor by more than the threshold while the calls wandered too far
to show it (issue 57 item 15: local-task against local-sync, both kernels
+107%, p50 +61.5% at p=0.0017, passed as "no significant change" because A's
calls wandered by 109%), or the runs' calls wander by more than the threshold, so that a regression the
size of the threshold would not show. A pass is never read off runs too noisy to judge.
"""

from __future__ import annotations

from dataclasses import dataclass

from gputop.core.compare.significance import Change
from gputop.core.compare.verdict import Comparison
from gputop.core.errors import UsageError

__all__ = ["Gate", "gate", "parse_metric", "parse_percent"]


@dataclass(frozen=True)
class Gate:
    """The CI gate's outcome: whether it failed, and the line that says why (or that it passed)."""

    failed: bool
    line: str
    undecided: bool = False  # the runs cannot tell (exit 8): failed too, closed, not a measured regression


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
    undecided = _cannot_tell(comparison, metric, change, threshold)
    if undecided is not None:
        return Gate(True, f"cannot tell: {undecided}; {what} {change.change * 100:+.1f}% ({interval}; "
                    f"threshold {threshold * 100:g}%)", undecided=True)  # fmt: skip
    verdict = "significant" if change.significant else "not significant"
    return Gate(
        False,
        f"gate passed: {what} {change.change * 100:+.1f}% ({verdict}, {interval}; threshold {threshold * 100:g}%)",
    )


def _cannot_tell(comparison: Comparison, metric: str, change: Change, threshold: float) -> str | None:
    """Why the runs cannot judge `change` against `threshold`, or None where they can (a pass is a pass)."""
    if change.significant or change.change is None:
        return None
    what = "calls" if not metric.startswith("kernel:") else "dispatches"
    if change.within_wander and change.change > threshold:
        return f"{change.wander_text(what)}, more than this {change.change * 100:+.1f}% slower beyond chance"
    if metric.startswith("kernel:") or (change.floor or 0.0) <= threshold:
        return None  # steady enough that a regression past the threshold would have shown
    slower = [
        f"{k.name} {k.change.change * 100:+.0f}%"
        for k in comparison.kernels
        if k.change is not None and k.change.significant and (k.change.change or 0.0) > threshold
    ]
    if slower:
        return (
            f"the kernels are slower beyond their floor ({', '.join(slower[:3])}) and {change.wander_text()}, "
            "too far for the calls to show it"
        )
    # No sign of a slowdown, but one the size of the threshold could not have shown either: a gate that passed
    # here would vouch for what the runs cannot tell (fail closed, issue 57 item 15).
    floor = (change.floor or 0) * 100
    return f"{change.wander_text(what)}, more than the threshold: a regression under {floor:.0f}% would not show"
