"""`gputop [TARGET] [options]`: the live TUI, the face gputop shows when no subcommand is named.

It has a parser of its own (not a subcommand's) because its TARGET is optional and comes first;
`gputop web` parses its engine's options with the same parser.
"""

from __future__ import annotations

import argparse

from gputop.core.serving.access import load_token
from gputop.tui.cli.options import add_run_options, config_from

__all__ = ["build_tui_parser", "command_tui"]


def build_tui_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gputop",
        description="Start the live TUI on TARGET (default demo:mlp). Other commands: gputop run, gputop devices.",
    )
    add_run_options(parser, "tui")
    return parser


def command_tui(argv: list[str]) -> int:
    args = build_tui_parser().parse_args(argv)
    config = config_from(args, None)
    # imported here: loading the Textual app costs ~0.3 s, and only the TUI needs it
    from gputop.tui.app import run_app

    metrics = None
    if args.metrics_port is not None:
        metrics = (args.metrics_port, args.metrics_addr, load_token(args.token))
    return run_app(config, metrics)
