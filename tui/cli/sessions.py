"""`gputop sessions`: the past and live runs in the session store, one row each (or JSON).

The way to find a SESSION id for `gputop report`, `gputop open` and `gputop attach`. Rows fit the
terminal (a long target keeps its file name), `--target` and `--last` narrow the list, and
`--json` gives the same rows whole.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from gputop.tui.bridge import EXIT_OK, UsageError, to_json
from gputop.tui.cli.command import Subcommand

__all__ = ["DEFAULT_WIDTH", "SPEC", "add_arguments", "command_sessions", "narrowed", "terminal_width"]

DEFAULT_WIDTH = 80  # the columns rows fit where no terminal says (a pipe to a file, a CI log)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument(
        "--target", metavar="T", help="only the sessions whose target contains T (any case), e.g. --target resnet"
    )
    parser.add_argument("--last", type=int, metavar="N", help="only the newest N sessions (after --target)")
    parser.add_argument(
        "--wide", "-w", action="store_true", help="whole rows, however wide (targets uncut; the terminal wraps them)"
    )


def command_sessions(args: argparse.Namespace) -> int:
    # imported here: the store's reader and the text cost ~8 ms that `gputop --help` need not pay
    from gputop.tui.bridge import scan_sessions
    from gputop.tui.text import sessions_table

    if args.last is not None and args.last < 1:
        raise UsageError(f"--last {args.last}: give 1 or more sessions")
    scan = scan_sessions()
    for skipped in scan.skipped:  # one bad folder is named, and hides nothing else
        print(f"gputop: skipped {skipped.path}: {skipped.reason}", file=sys.stderr)
    entries = to_json(scan.entries)
    rows = narrowed(entries, args.target, args.last)
    if args.json:
        print(json.dumps(rows, indent=2))
    elif rows:
        print(sessions_table(rows, None if args.wide else terminal_width()))
    elif entries:
        print(f"no sessions whose target contains {args.target!r} ({len(entries)} in all: gputop sessions lists them)")
    else:
        print("no sessions yet: 'gputop run TARGET' or 'gputop' records one")
    return EXIT_OK


def narrowed(entries: list[dict[str, Any]], target: str | None, last: int | None) -> list[dict[str, Any]]:
    """The rows `--target` (a substring of the target, any case) and then `--last` (the newest N) leave, oldest
    first as ever."""
    if target is not None:
        entries = [e for e in entries if target.casefold() in str(e.get("target") or "").casefold()]
    if last is not None:
        entries = entries[-last:]
    return entries


def terminal_width() -> int:
    """The columns to fit: $COLUMNS, else the terminal's, stdout's or (piped, `gputop sessions | less`) the
    one stderr or stdin still reach; DEFAULT_WIDTH where there is none."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    for stream in (sys.stdout, sys.stderr, sys.stdin):
        try:
            return os.get_terminal_size(stream.fileno()).columns or DEFAULT_WIDTH
        except (AttributeError, ValueError, OSError):
            continue
    return DEFAULT_WIDTH


SPEC = Subcommand(
    "sessions",
    "list past sessions: time, target, device, state, duration",
    add_arguments,
    command_sessions,
    description="List past and live sessions, oldest first, one row each within the terminal's width (a long "
    "target keeps its file name; --wide for whole rows, --json for the rows as JSON). A run whose outputs did "
    "not match its reference is listed as 'check failed'.",
)
