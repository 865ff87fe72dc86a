"""`gputop [TARGET] [options]`: the live TUI, the face gputop shows when no subcommand is named.

It has a parser of its own (not a subcommand's) because its TARGET is optional and comes first;
`gputop web` parses its engine's options with the same parser.
"""

from __future__ import annotations

import argparse

from gputop.tui.bridge import UsageError, find_command, load_token, new_session_dir, program_label
from gputop.tui.cli.optional_values import optional_values_alone
from gputop.tui.cli.options import add_run_options, config_from
from gputop.tui.cli.program import refuse_run_options

__all__ = ["build_tui_parser", "command_tui", "without_baseline"]


def build_tui_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gputop",
        description="Start the live TUI on TARGET (default demo:mlp), or on your own program: gputop [options] -- "
        "python app.py (it runs unmodified; gputop watches its iree.runtime calls). Other commands: gputop run, "
        "gputop devices.",
    )
    add_run_options(parser, "tui")
    parser.add_argument(
        "--baseline",
        metavar="SESSION",
        help="compare with a recorded run (a session or a gputop run --json report): the Run pane, the Kernels "
        "table's vs base column and the Timeline show it (b picks one of this target's past sessions)",
    )
    return parser


def without_baseline(argv: list[str]) -> list[str]:
    """The engine's arguments: the TUI's own, less --baseline (the viewer holds the baseline, not the engine)."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--baseline":
            skip = True
        elif not arg.startswith("--baseline="):
            out.append(arg)
    return out


def command_tui(argv: list[str], program: list[str] | None = None) -> int:
    """The TUI as a viewer of its own engine: `gputop serve` with the same options, in a child process.

    Bad options fail here, once, before anything starts; the engine's own
    first words (a port in use) come back as one line before the screen.
    With `program` (`gputop -- CMD`) the engine watches that command instead of making calls.
    """
    parser = build_tui_parser()
    argv = optional_values_alone(parser, argv)  # the engine gets them as read here
    args = parser.parse_args(argv)
    if program is not None:
        refuse_run_options(args, "tui")
        if not program:
            raise UsageError("no command after --: say what to run, e.g. gputop -- python app.py")
        find_command(program)  # a typo is one line and a shell's 127, before the screen or a session
        label = program_label(program)
    else:
        label = config_from(args, None).target_info.label
    load_token(args.token)  # a token file that cannot be read is this command's error, not the engine's
    folder = args.session_dir or new_session_dir(label=label)
    baseline = None
    if args.baseline is not None:
        from gputop.tui.bridge import load_baseline  # the store and the comparison: read before the screen

        baseline = load_baseline(args.baseline)
    engine = without_baseline(argv)
    if args.metrics_port is None:
        engine += ["--metrics-port", "0"]  # serve needs one: any free port on 127.0.0.1, nobody is told
    if args.profile_every is None:
        engine += ["--profile-every", "0"]  # as ever in the TUI: profile passes when the user presses p
    # imported here: loading the Textual app costs ~0.3 s, and only the TUI needs it
    from gputop.tui.launch import run_engine_app

    if program is not None:
        engine += ["--", *program]  # last: the engine's own words come before it (see EngineProcess)
    return run_engine_app(engine, folder, announce=args.metrics_port is not None, baseline=baseline)
