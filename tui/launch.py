"""The TUI's process entry points: start the app over a source, run it, and say the last line.

`gputop [TARGET]` and `gputop -- CMD` start their own engine (`run_engine_app`), `gputop open` replays a
record (`run_replay`), `gputop attach` follows another process's run (`run_attached`). Each builds its
source, hands it to `GputopApp` and turns how the app ended into the process's exit code; the app itself
only composes, wires its screens, starts and ends. Kept out of `app.py` so that what a process does before
and after the screen (the engine's first words, the farewell line, a watched program's exit code) is read
in one place.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gputop.tui.app import GputopApp
from gputop.tui.bridge import AttachSource, EngineProcess, LiveBaseline, ReplaySource, RunSnapshot
from gputop.tui.text import farewell
from gputop.tui.text.program import ended_text

__all__ = ["run_attached", "run_engine_app", "run_replay", "watched_program_ending"]


def run_engine_app(
    engine_args: list[str], folder: Path, *, announce: bool = False, baseline: LiveBaseline | None = None
) -> int:
    """Start the engine as its own process (`gputop serve`) and the TUI as its owning viewer; returns the exit code.

    The engine's first words (a port in use, a bad option it alone sees) are
    one line here, before the screen is taken; with `announce`, so are its
    metrics URL and any exposure warning.
    """
    source = EngineProcess(engine_args, folder)
    if announce:
        for line in source.startup_lines():
            print(line, file=sys.stderr, flush=True)
    app = GputopApp(source, handle_signals=True, baseline=baseline)
    try:
        code = app.run()
    finally:
        source.stop(timeout=15)
    # The screen is gone: say where the run went (gputop report/open take this folder), or what of it was lost.
    last = farewell(source.record_check())
    print(last.line, file=sys.stderr, flush=True)
    program = watched_program_ending(folder)
    if program is not None and not code and not last.exit_code:
        # gputop -- CMD: the program's exit code is gputop's, and the last line says how it ended
        print(f"gputop: program ended: {program[1]}", file=sys.stderr, flush=True)
        return program[0]
    return code or last.exit_code or 0


def watched_program_ending(folder: Path) -> tuple[int, str] | None:
    """A watched program's exit code and how it ended, from its session's report; None for a run gputop made."""
    try:
        program = json.loads((folder / "report.json").read_text()).get("program")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(program, dict) or not isinstance(program.get("exit_code"), int):
        return None
    return int(program["exit_code"]), ended_text(program)


def run_replay(snapshots: list[RunSnapshot]) -> int:
    """Show recorded snapshots read-only (gputop open); returns the exit code."""
    app = GputopApp(ReplaySource(snapshots), handle_signals=True)
    code = app.run()
    return code or 0


def run_attached(folder: Path) -> int:
    """Follow the run another process drives in `folder` (gputop attach); returns the exit code."""
    app = GputopApp(AttachSource(folder), handle_signals=True)
    code = app.run()
    return code or 0
