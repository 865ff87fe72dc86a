"""`gputop attach SESSION`: the TUI following a run another gputop process drives; its keys reach that run.

Also home to `must_be_live`, the check `gputop web --attach` shares: an ended run is for
`gputop open`, not for attaching.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gputop.tui.bridge import UsageError
from gputop.tui.cli.command import SESSION_HELP, Subcommand

__all__ = ["SPEC", "add_arguments", "command_attach", "must_be_live"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session", metavar="SESSION", help=SESSION_HELP)


def command_attach(args: argparse.Namespace) -> int:
    # imported here: loading the Textual app costs ~0.3 s, and only the TUI needs it; the store's
    # reader (~4 ms) is not for `gputop --help` either
    from gputop.tui.bridge import read_manifest, resolve_session
    from gputop.tui.launch import run_attached

    folder = resolve_session(args.session)
    must_be_live(folder, read_manifest(folder))
    return run_attached(folder)


def must_be_live(folder: Path, manifest: dict[str, Any]) -> None:
    """A usage error for a session whose run has ended."""
    # imported here: the store's reader (~4 ms) is not for `gputop --help`
    from gputop.tui.bridge import ENDED_STATES, effective_state

    state = effective_state(manifest)
    if state in ENDED_STATES:
        raise UsageError(f"{folder.name}: the run has ended ({state}); 'gputop open {folder.name}' shows it")


SPEC = Subcommand(
    "attach",
    "follow a run another gputop process drives, live in the TUI (its keys reach that run)",
    add_arguments,
    command_attach,
)
