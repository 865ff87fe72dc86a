"""`gputop compare A B`: two recorded runs side by side, whether they differ for real, and a CI gate.

A and B are sessions (a folder, an id or a unique prefix, as `gputop report`
takes them) or reports written by `gputop run --json`. The comparison itself
is core/compare's; this module finds the two reports with their kept samples,
prints the comparison (or writes it as JSON) and, with `--fail-above`, exits 7
when the chosen metric is significantly slower by more than the threshold, and 8
when the runs cannot tell (the gate fails closed: `ci_gate.py` says when).
`gputop run --baseline` uses the same loading and gate (`baseline_gate`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gputop.tui.bridge import EXIT_OK, EXIT_REGRESSION, EXIT_UNDECIDED, UsageError
from gputop.tui.cli.command import SESSION_HELP, Subcommand, write_json

__all__ = ["SPEC", "add_arguments", "add_gate_arguments", "baseline_gate", "command_compare", "load_side"]

SIDE_HELP = f"a session ({SESSION_HELP}) or a report written by gputop run --json"


def add_gate_arguments(parser: argparse.ArgumentParser) -> None:
    """--fail-above and --metric: the CI gate, shared by `gputop compare` and `gputop run --baseline`."""
    parser.add_argument(
        "--fail-above",
        metavar="PCT",
        help="exit 7 when the metric is significantly slower than the baseline by more than PCT (e.g. 5%%); exit 8 "
        "when the runs cannot tell (slower beyond chance, or their kernels slower beyond their floor, by more than "
        "PCT, but within how far a run's own calls wandered; or calls that wander by more than PCT): the gate "
        "fails closed",
    )
    parser.add_argument(
        "--metric",
        default="p50",
        metavar="p50|p95|kernel:NAME",
        help="what --fail-above gates: the call time's p50 (default) or p95, or one kernel's time per dispatch",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", metavar="A", help=f"the baseline: {SIDE_HELP}")
    parser.add_argument("b", metavar="B", help=f"the run compared with it: {SIDE_HELP}")
    parser.add_argument("--json", metavar="PATH", help="write the comparison as JSON to PATH ('-' for stdout)")
    parser.add_argument(
        "--noise",
        metavar="PCT",
        help="the least change shown as real (default 3%%); the runs' own wander raises it (docs/comparing.md)",
    )
    add_gate_arguments(parser)


def load_side(text: str) -> tuple[str, dict[str, Any]]:
    """(a label, the report with its samples) for a session id, prefix or folder, or a report file."""
    from gputop.tui.bridge import read_side

    return read_side(text)


def _gate_settings(args: argparse.Namespace) -> tuple[str, float] | None:
    from gputop.tui.bridge import parse_metric, parse_percent

    metric = parse_metric(args.metric)
    if args.fail_above is None:
        return None
    return metric, parse_percent(args.fail_above)


def _same_target(a: dict[str, Any], b: dict[str, Any]) -> None:
    if a.get("target") != b.get("target"):
        raise UsageError(
            f"--fail-above compares one target with itself: A ran {a.get('target')}, B ran {b.get('target')}"
        )


def command_compare(args: argparse.Namespace) -> int:
    from gputop.tui.bridge import DEFAULT_NOISE, compare_reports, comparison_json, comparison_text, gate, parse_percent

    settings = _gate_settings(args)
    label_a, a = load_side(args.a)
    label_b, b = load_side(args.b)
    if settings is not None:
        _same_target(a, b)
    noise = parse_percent(args.noise) if args.noise is not None else DEFAULT_NOISE
    comparison = compare_reports(a, b, a_label=label_a, b_label=label_b, noise=noise)
    outcome = gate(comparison, *settings) if settings is not None else None
    if args.json:
        data = comparison_json(comparison)
        if outcome is not None:
            data["gate"] = {
                "failed": outcome.failed,
                "line": outcome.line,
                "metric": settings[0] if settings else None,
                "undecided": outcome.undecided,
            }
        write_json(data, args.json)
    text_stream = sys.stderr if args.json == "-" else sys.stdout
    if args.json != "-":
        print(comparison_text(comparison), file=text_stream, flush=True)
    if outcome is not None:
        print(f"gputop: {outcome.line}", file=sys.stderr, flush=True)
        return gate_exit(outcome)
    return EXIT_OK


def gate_exit(outcome: Any) -> int:
    """The gate's exit code: 8 where the runs cannot tell, 7 for a regression, 0 for a pass."""
    if outcome.undecided:
        return EXIT_UNDECIDED
    return EXIT_REGRESSION if outcome.failed else EXIT_OK


def baseline_gate(args: argparse.Namespace) -> tuple[str, dict[str, Any], tuple[str, float] | None] | None:
    """`gputop run --baseline A [--fail-above PCT]`: the baseline, read before the run, and the gate's settings."""
    if getattr(args, "baseline", None) is None:
        if getattr(args, "fail_above", None) is not None:
            raise UsageError("--fail-above needs --baseline SESSION (or use gputop compare A B --fail-above)")
        return None
    settings = _gate_settings(args)
    label, report = load_side(args.baseline)
    if settings is not None and report.get("target") != args.target:
        raise UsageError(f"--fail-above compares one target with itself: the baseline ran {report.get('target')}")
    return label, report, settings


def judge_run(
    baseline: tuple[str, dict[str, Any], tuple[str, float] | None], report: dict[str, Any], *, stream: Any
) -> int:
    """After `gputop run --baseline`: the comparison's verdict (and the gate's line); 7 when the gate fails."""
    from gputop.tui.bridge import compare_reports, gate, verdict_line

    label, base, settings = baseline
    comparison = compare_reports(base, report, a_label=label, b_label="this run")
    print(f"baseline  {label}", file=stream)
    for change in comparison.calls:
        print(f"  {change.stat:<5} {change.mark}", file=stream)
    print(verdict_line(comparison), file=stream, flush=True)
    if settings is None:
        return EXIT_OK
    outcome = gate(comparison, *settings)
    print(f"gputop: {outcome.line}", file=sys.stderr, flush=True)
    return gate_exit(outcome)


SPEC = Subcommand(
    "compare",
    "compare two runs (sessions or reports): conditions, calls, kernels, and a CI gate",
    add_arguments,
    command_compare,
    description="Compare run B against baseline A: what differs in their conditions, the call time's p50, p95 "
    "and mean with a bootstrap 95% interval and a Mann-Whitney U test (~ where the change is not real), kernels "
    "matched by name, the call breakdown, phases and memory peaks, and a verdict. With --fail-above PCT, exit 7 "
    "when the metric is significantly slower by more than PCT, and exit 8 (cannot tell) when the runs are too noisy "
    "to judge it: slower beyond chance by more than PCT but within a run's own wander, or kernels slower beyond "
    "their floor while the calls wandered too far to show it, or calls that wander by more than PCT.",
)
