"""`gputop devices`: every device gputop can use, and why others are missing, as a table or JSON.

Kept lean on purpose: it is the first thing people run, so it loads neither Textual nor a run.
"""

from __future__ import annotations

import argparse
import json

from gputop.tui.bridge import EXIT_OK, list_devices, to_json
from gputop.tui.cli.command import Subcommand

__all__ = ["SPEC", "add_arguments", "command_devices"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")


def command_devices(args: argparse.Namespace) -> int:
    # imported here: the text (~5 ms) only formats output, and `gputop --help` need not load it
    from gputop.tui.text import devices_table

    rows = [to_json(r) for r in list_devices()]
    for row in rows:
        for key in ("timestamp",):
            row.pop(key, None)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(devices_table(rows))
    return EXIT_OK


SPEC = Subcommand(
    "devices", "list every device gputop can use, and why others are missing", add_arguments, command_devices
)
