"""The CI gate: `--fail-above` and `--metric` read, and a comparison judged against them.

`gputop compare --fail-above 5%` and `gputop run --baseline` fail (exit 7, `EXIT_REGRESSION`)
where the metric of B is significantly slower than A's by more than the
threshold; the line says why, or that the gate passed.
"""

from __future__ import annotations

from dataclasses import dataclass

from gputop.core.compare.verdict import Comparison
from gputop.core.errors import UsageError

__all__ = ["Gate", "gate", "parse_metric", "parse_percent"]


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
