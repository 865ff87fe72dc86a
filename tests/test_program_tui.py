"""A watched program in the real TUI (Pilot): keys that fit it, and where its time goes (issues 55, 56).

The app runs over its own engine process (`gputop serve -- CMD`, as `gputop -- python app.py` does) watching
a real program from an environment without gputop (tests/programs/why_slow.py, the same numpy array passed on
every call). The second source for the parts is the program's own report line; for the refusals, that the
program goes on calling after `r` and `d`.
"""

from __future__ import annotations

import os
from pathlib import Path

from program_env import PROGRAMS
from tui_pilot import wait_for

from gputop.tui.app import GputopApp
from gputop.tui.bridge import EngineProcess
from gputop.tui.panes.log import LogPane
from gputop.tui.screens.stacks import StacksScreen, stacks_text


def calls(app: GputopApp) -> int:
    program = app.snapshot.program if app.snapshot is not None else None
    return program.functions[0].count if program is not None and program.functions else 0


async def test_keys_that_cannot_act_on_a_watched_program_say_why_and_w_shows_its_parts(
    tmp_path: Path, program_python: Path, program_assets: tuple[Path, Path]
) -> None:
    rowsum = program_assets[0].parent / "rowsum.vmfb"
    program = [str(program_python), str(PROGRAMS / "why_slow.py"), str(rowsum), "100000", "--mistake", "upload"]
    env_before = dict(os.environ)
    os.environ.pop("PYTHONPATH", None)  # the program's own environment: only gputop's watcher folder on its path
    try:
        source = EngineProcess(["--", *program], tmp_path / "session")
    finally:
        os.environ.clear()
        os.environ.update(env_before)
    app = GputopApp(source)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 20, timeout=180)
        log = app.query_one(LogPane)
        before = calls(app)
        await pilot.press("r")
        await wait_for(pilot, lambda: any(m.startswith("warning: reload: a watched program") for m in log.messages))
        await pilot.press("d")
        await wait_for(pilot, lambda: any(m.startswith("warning: device: a watched program") for m in log.messages))
        assert not [m for m in log.messages if "_restart_engine" in m or "_list_devices" in m]
        await wait_for(pilot, lambda: calls(app) > before + 10)  # the program went on; nothing was blanked
        assert app.snapshot is not None and app.snapshot.state == "running"
        # w: each call's parts, the arguments most of it; then the program's own lines, sampled from outside
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.program.stacks is not None, timeout=60)
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(app.screen, StacksScreen))
        text = stacks_text(app.snapshot, 110, 30)
        assert "rowsum.main: " in text and "arguments " in text and " · invoke " in text
        assert "why_slow.py:" in text, text
        await pilot.press("escape")
        await pilot.press("q")
