"""`gputop report SESSION`: a finished or interrupted session's report, read back from the store.

The same text (and JSON) `gputop run` prints at its end, for a run recorded earlier.
"""

from __future__ import annotations

import argparse

from gputop.tui.bridge import EXIT_OK
from gputop.tui.cli.command import SESSION_HELP, Subcommand, write_json

__all__ = ["SPEC", "add_arguments", "command_report"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session", metavar="SESSION", help=SESSION_HELP)
    parser.add_argument("--json", metavar="PATH", help="write the report as JSON to PATH ('-' for stdout)")
    parser.add_argument(
        "--trace",
        metavar="PATH",
        help="a watched program's timeline as a Chrome trace (Perfetto, chrome://tracing): its calls with their "
        "parts, reads back, sampled Python and a profile's kernels ('-' for stdout)",
    )


def command_report(args: argparse.Namespace) -> int:
    # imported here: the store's reader and the text cost ~8 ms that `gputop --help` need not pay
    from gputop.tui.bridge import read_report, resolve_session
    from gputop.tui.text import program_report_text, run_report

    folder = resolve_session(args.session)
    if args.trace is not None:
        from gputop.tui.bridge import program_trace

        write_json(program_trace(folder), args.trace)
    report = read_report(folder)
    write_json(report, args.json)
    if args.json != "-" and args.trace != "-":
        # A watched program's report reads as gputop run -- CMD printed it at its end (the same sections).
        print(program_report_text(report) if report.get("program") else run_report(report))
    return EXIT_OK


SPEC = Subcommand("report", "print a finished or interrupted session's report", add_arguments, command_report)
