"""`gputop sessions`: the past and live runs in the session store, one row each (or JSON).

The way to find a SESSION id for `gputop report`, `gputop open` and `gputop attach`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

from gputop.tui.bridge import EXIT_OK, to_json
from gputop.tui.cli.command import Subcommand

__all__ = ["SPEC", "add_arguments", "command_sessions"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")


def command_sessions(args: argparse.Namespace) -> int:
    # imported here: the store's reader and the text cost ~8 ms that `gputop --help` need not pay
    from gputop.tui.bridge import scan_sessions
    from gputop.tui.text import sessions_table

    scan = scan_sessions()
    for skipped in scan.skipped:  # one bad folder is named, and hides nothing else
        print(f"gputop: skipped {skipped.path}: {skipped.reason}", file=sys.stderr)
    entries = scan.entries
    if args.json:
        print(json.dumps(to_json(entries), indent=2))
    elif entries:
        print(sessions_table(to_json(entries), terminal_width()))
    else:
        print("no sessions yet: 'gputop run TARGET' or 'gputop' records one")
    return EXIT_OK


def terminal_width() -> int | None:
    """The columns to fit: $COLUMNS, else the terminal's; None (whole rows) when writing to a pipe or file."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


SPEC = Subcommand(
    "sessions", "list past sessions: time, target, device, state, duration", add_arguments, command_sessions
)
