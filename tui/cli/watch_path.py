"""`gputop watch-path`: the folder a program's own environment puts on PYTHONPATH to call `gputop.watch()`.

gputop's watcher is standard library only: a program whose environment lacks
gputop (a venv with iree.runtime and numpy) can still `import gputop;
gputop.watch()` with this folder on its PYTHONPATH; that `watch()` starts the
`gputop` command installed elsewhere as its engine (docs/python-api.md).
"""

from __future__ import annotations

import argparse

from gputop.tui.bridge import EXIT_OK, WATCH_PATH_DIR
from gputop.tui.cli.command import Subcommand

__all__ = ["SPEC", "add_arguments", "command_watch_path"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No arguments: the folder is where this gputop is installed."""


def command_watch_path(args: argparse.Namespace) -> int:
    print(WATCH_PATH_DIR)
    return EXIT_OK


SPEC = Subcommand(
    "watch-path",
    "print the folder to put on a program's PYTHONPATH so gputop.watch() works where gputop is not installed",
    add_arguments,
    command_watch_path,
)
