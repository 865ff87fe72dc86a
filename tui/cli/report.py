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


def command_report(args: argparse.Namespace) -> int:
    # imported here: the store's reader and the text cost ~8 ms that `gputop --help` need not pay
    from gputop.tui.bridge import read_report, resolve_session
    from gputop.tui.text import run_report

    report = read_report(resolve_session(args.session))
    write_json(report, args.json)
    if args.json != "-":
        print(run_report(report))
    return EXIT_OK


SPEC = Subcommand("report", "print a finished or interrupted session's report", add_arguments, command_report)
