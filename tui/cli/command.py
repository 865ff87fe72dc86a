"""What every `gputop COMMAND` is and shares: its `Subcommand` spec, the SESSION argument's help, `--json PATH`.

Each command module (`run`, `report`, `sessions`, ...) ends with one
`Subcommand`; `gputop.tui.cli` builds its parser and its table of functions
from them. `write_json` is where every `--json PATH` goes (`check_json_destination` says beforehand
whether it can).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputop.tui.bridge import UsageError

__all__ = ["SESSION_HELP", "Subcommand", "check_json_destination", "write_json"]

SESSION_HELP = "its directory or its id (see gputop sessions)"


@dataclass(frozen=True)
class Subcommand:
    """A `gputop COMMAND`: its name, its parser's text and arguments, and the function that runs it."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    command: Callable[[argparse.Namespace], int]
    description: str | None = None


def check_json_destination(where: str | None) -> None:
    """`--json PATH` can be written: checked before a run, so that a report with nowhere to go costs no run
    (and leaves no session behind). The file itself is written at the end (`write_json`)."""
    if not where or where == "-":
        return
    path = Path(where)
    folder = path.parent
    if path.is_dir():
        raise UsageError(f"cannot write {where}: Is a directory")
    if not folder.is_dir():
        raise UsageError(f"cannot write {where}: No such file or directory")
    if not os.access(path if path.exists() else folder, os.W_OK):
        raise UsageError(f"cannot write {where}: Permission denied")


def write_json(report: dict[str, Any], where: str | None) -> None:
    """Where every `--json PATH` goes: nowhere without one, stdout for '-', else the file."""
    if not where:
        return
    text = json.dumps(report, indent=2)
    if where == "-":
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
        return
    try:
        Path(where).write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {where}: {exc.strerror}") from None
