"""`gputop capture-info FILE`: a RenderDoc capture's dispatches, and their GPU times where it replays here.

Replays run in a child process that must die with the command, so SIGTERM here unwinds as
Ctrl-C does while the capture is read.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from types import FrameType

from gputop.tui.bridge import EXIT_OK, EXIT_SIGTERM, Interrupted, UsageError, capture_info, to_json
from gputop.tui.cli.command import Subcommand, write_json

__all__ = ["SPEC", "add_arguments", "command_capture_info"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path)
    parser.add_argument("--json", metavar="PATH", help="write the record as JSON to PATH ('-' for stdout)")
    parser.add_argument("--no-replay", action="store_true", help="read what the capture holds; do not replay it")
    parser.add_argument("--passes", type=int, default=5, help="replays to take the median GPU time over (default 5)")
    parser.add_argument(
        "--replay-timeout",
        type=float,
        default=120.0,
        metavar="S",
        help="kill a replay that has not finished after S seconds (default 120)",
    )


def command_capture_info(args: argparse.Namespace) -> int:
    # imported here: the text (~5 ms) only formats output, and `gputop --help` need not load it
    from gputop.tui.text import capture_text

    if args.passes < 1 or args.replay_timeout <= 0:
        raise UsageError("--passes must be at least 1 and --replay-timeout positive")

    def on_sigterm(_signum: int, _frame: FrameType | None) -> None:
        # Unwind as Ctrl-C does, so the reader and its replay are killed on the way out.
        raise Interrupted("capture-info: terminated", exit_code=EXIT_SIGTERM)

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        info = capture_info(
            args.file, replay=not args.no_replay, passes=args.passes, replay_timeout=args.replay_timeout
        )
    finally:
        signal.signal(signal.SIGTERM, previous)
    data = to_json(info)
    if args.json:
        write_json(data, args.json)
    if args.json == "-":
        if info.reader_note:  # stdout is the JSON: the one line about what is missing goes beside it
            print(f"gputop: {info.reader_note}", file=sys.stderr)
    else:
        print(capture_text(data))
    return EXIT_OK


SPEC = Subcommand(
    "capture-info",
    "a RenderDoc capture's dispatches, and their GPU times where it replays here",
    add_arguments,
    command_capture_info,
)
