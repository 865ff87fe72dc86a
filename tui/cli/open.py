"""`gputop open SESSION`: a past session shown read-only in the TUI, replaying its last samples.

A run still going is refused here with a pointer to `gputop attach`, which follows it live.
"""

from __future__ import annotations

import argparse

from gputop.tui.bridge import UsageError
from gputop.tui.cli.command import SESSION_HELP, Subcommand

__all__ = ["OPEN_SNAPSHOTS", "SPEC", "add_arguments", "command_open"]

OPEN_SNAPSHOTS = 300  # the session's last 30 s or so, enough for every pane


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session", metavar="SESSION", help=SESSION_HELP)


def command_open(args: argparse.Namespace) -> int:
    # imported here: loading the Textual app costs ~0.3 s, and only the TUI needs it; the store's
    # reader (~4 ms) is not for `gputop --help` either
    from gputop.tui.bridge import ENDED_STATES, effective_state, read_manifest, read_tail, resolve_session
    from gputop.tui.launch import run_replay

    folder = resolve_session(args.session)
    snapshots = read_tail(folder, OPEN_SNAPSHOTS)
    if not snapshots:
        raise UsageError(f"{folder}: the session has no samples to show")
    manifest = read_manifest(folder)
    if effective_state(manifest) not in ENDED_STATES:
        raise UsageError(
            f"{folder.name} is still running (pid {manifest.get('pid')}): 'gputop attach {folder.name}' follows it live"
        )
    return run_replay(snapshots)


SPEC = Subcommand("open", "show a past session read-only in the TUI", add_arguments, command_open)
