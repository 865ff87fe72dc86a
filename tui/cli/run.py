"""`gputop run TARGET`: one counted run, headless, then its report on stdout (and as JSON with --json).

The command for scripts and CI: the run's options are the shared ones (see `options`), plus the
report's destination, a RenderDoc capture, a profile pass, a counters pass and a baseline to compare
with (exit 7 when `--fail-above` finds a regression); `headless` drives the session.
"""

from __future__ import annotations

import argparse
import sys

from gputop.tui.bridge import PROFILE_LEVELS, RunHost
from gputop.tui.cli.command import Subcommand, check_json_destination, write_json
from gputop.tui.cli.compare import add_gate_arguments, baseline_gate, judge_run
from gputop.tui.cli.headless import discard_if_unused, drive, ending
from gputop.tui.cli.options import add_run_options, config_from
from gputop.tui.cli.program import run_program

__all__ = ["SPEC", "add_arguments", "command_run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_options(parser, "run")
    parser.add_argument("--json", metavar="PATH", help="also write the report as JSON to PATH ('-' for stdout)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    parser.add_argument(
        "--capture",
        type=int,
        nargs="?",
        const=1,
        default=0,
        metavar="N",
        help="RenderDoc capture of N calls after the first (Vulkan); verified and listed under captures",
    )
    parser.add_argument(
        "--profile",
        nargs="?",
        const="default",
        choices=PROFILE_LEVELS,
        metavar="LEVEL",
        help="after the steady calls, profile as many calls for per-dispatch device times and where the call "
        "time went; --profile=full keeps per-dispatch timestamps in the explained calls whatever they cost "
        "(default: where they cost over 5%%, the breakdown explains a second run without them)",
    )
    parser.add_argument(
        "--counters",
        action="store_true",
        help="after the steady calls (and --profile), measure one call's hardware counters per kernel with "
        "Nsight Compute (CUDA; ncu from PATH, the CUDA toolkit, /opt/nvidia/nsight-compute or $GPUTOP_NCU)",
    )
    parser.add_argument(
        "--baseline",
        metavar="SESSION",
        help="compare this run with a recorded one (a session or a gputop run --json report) at its end",
    )
    add_gate_arguments(parser)


def command_run(args: argparse.Namespace) -> int:
    # imported here: the text (~5 ms) only formats output, and `gputop --help` need not load it
    from gputop.tui.text import run_report

    if getattr(args, "program", None) is not None:
        return run_program(args, args.program)
    check_json_destination(args.json)  # before the run: a report that cannot be written costs no run
    baseline = baseline_gate(args)  # read before the run: a missing baseline costs no run
    host = RunHost(config_from(args, args.iterations))
    stop_code = drive(host, progress=not args.quiet)
    session = host.session
    report = session.report or session.current_report()
    discarded = discard_if_unused(session)  # a usage error found once the module was read: no session kept
    if discarded:
        report = {**report, "session_dir": None}
    write_json(report, args.json)
    text_stream = sys.stderr if args.json == "-" else sys.stdout
    if session.error is not None and not report["calls"].get("count") and report["state"] == "error":
        # Failed before its first steady call: the error line says it all; the record (if kept) is where to look.
        if not discarded:
            print(f"session   {report['session_dir']}", file=text_stream, flush=True)
    else:
        print(run_report(report), file=text_stream, flush=True)
    code = ending(session, stop_code)
    if baseline is not None and code == 0:
        return judge_run(baseline, report, stream=text_stream)
    return code


SPEC = Subcommand(
    "run",
    "run a module headless and print a report",
    add_arguments,
    command_run,
    description="Run TARGET headless: compile, load, call it (-n times), optionally profile and check it, then "
    "print the report (--json for the same as JSON). Exit codes: 0 ok, 2 usage, 3 compile, 4 device, 5 runtime, "
    "6 check failed.",
)
