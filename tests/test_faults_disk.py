"""A disk that fills mid-run, and a run that dies without its ending: never silent, never `running` for ever.

Each fault is real: a small tmpfs mounted for the test and filled with zeros
(`conftest.tmpfs`, skipped with its reason where it cannot be mounted), a
SIGKILL. The engine is the real one, headless (`gputop run`, `gputop serve`)
and behind the real app (`EngineProcess` driven through Textual's Pilot).
What is checked: the one line and exit code, the manifest's ending, the
header's state, the `s` key, the line left after `q`, and that the 256 KiB
kept for the ending (`.reserve`) is not left behind.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

import psutil
from textual.message import Message
from textual.notifications import Notify
from tui_pilot import calls, until_drawn, wait_for

from conftest import assert_one_line_error, end_child, fill_disk, poll, run_gputop, spawn_gputop, tmpfs
from gputop.tui.app import GputopApp
from gputop.tui.bridge import EngineProcess
from gputop.tui.panes.header import HeaderBar
from gputop.tui.panes.log import LogPane
from gputop.tui.text import farewell

# As `gputop demo:mlp --device local-task` starts its engine: profile passes only when `p` asks.
TUI_ENGINE = ["demo:mlp", "--device", "local-task", "--metrics-port", "0", "--profile-every", "0"]
HINT = "free space or set GPUTOP_STATE_DIR to a writable folder"


def log_text(app: GputopApp) -> str:
    return "\n".join(app.query_one(LogPane).messages)


def header_text(app: GputopApp) -> str:
    return str(app.query_one(HeaderBar).render())


def manifest_of(folder: Path) -> dict[str, Any]:
    return dict(json.loads((folder / "manifest.json").read_text()))


def hidden_files(folder: Path) -> list[str]:
    """`.reserve` and half-written `.NAME.PID.tmp` files: none may outlive the run."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def the_session(state: Path) -> Path | None:
    folders = list((state / "sessions").iterdir()) if (state / "sessions").is_dir() else []
    return folders[0] if folders else None


# --- headless: a profile pass whose files do not fit ----------------------------------------------------


def test_a_profile_pass_on_a_full_disk_ends_the_run_with_one_line(tmp_path: Path) -> None:
    # 768 KiB: the manifest and 20 calls' samples fit; the pass's input files (1 MiB for input 0) do not.
    with tmpfs(tmp_path / "small-state", "size=768k") as state:
        env = {"GPUTOP_STATE_DIR": str(state)}
        proc = run_gputop("run", "demo:mlp", "--device", "local-task", "-n", "20", "--profile", env=env, timeout=180)
        folder = the_session(state)
        assert folder is not None
        manifest = manifest_of(folder)
        report = json.loads((folder / "report.json").read_text())
        leftovers = hidden_files(folder)
        inputs = sorted(p.name for p in (folder / "inputs").iterdir())
        listed = run_gputop("sessions", env=env)
    line = assert_one_line_error(
        proc, 5, f"cannot write {folder / 'inputs' / 'input0.npy'}: No space left on device", HINT
    )
    assert "internal error" not in line and "Traceback" not in proc.stdout + proc.stderr
    # The ending was written (with the room kept for it): the state, the code and the very line.
    assert manifest["state"] == "error" and manifest["exit_code"] == 5, manifest
    assert line == f"gputop: error: {manifest['error']}"
    assert report["state"] == "error" and report["calls"]["count"] == 20
    assert leftovers == [] and inputs == []  # no reserve, no half-written input file
    [row] = [r for r in listed.stdout.splitlines() if folder.name in r]
    assert "error" in row and "running" not in row and "crashed" not in row, row


def test_a_served_run_whose_disk_fills_between_profile_passes_ends_with_one_line(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "state", "size=16m") as state:
        serve = spawn_gputop(
            "serve", "demo:mlp", "--device", "local-task", "--metrics-port", "0", "--profile-every", "2",
            env={"GPUTOP_STATE_DIR": str(state)},
        )  # fmt: skip
        try:
            folder = poll(lambda: the_session(state), timeout=120)
            poll(lambda: list(folder.glob("profile-*.trace.json")), timeout=180)  # a pass taken, its inputs written
            fill_disk(state / "filler")
            _, stderr = serve.communicate(timeout=180)  # the next pass cannot write its files: the run ends
        finally:
            stderr_left = end_child(serve) if serve.poll() is None else ""
        manifest = manifest_of(folder)
        leftovers = hidden_files(folder)
    proc = subprocess.CompletedProcess(serve.args, serve.returncode, "", stderr + stderr_left)
    line = assert_one_line_error(proc, 5, f"cannot write {folder}", "No space left on device", HINT)
    assert "internal error" not in line and "traceback" not in line
    assert manifest["state"] == "error" and manifest["exit_code"] == 5 and line.endswith(manifest["error"])
    assert leftovers == []


# --- a run killed without its ending gives its room back --------------------------------------------------


def test_gputop_sessions_gives_back_the_room_of_a_run_that_died_here(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = {"GPUTOP_STATE_DIR": str(state)}
    child = spawn_gputop("run", "demo:mlp", "--device", "local-task", "-n", "1000000", env=env)
    try:
        folder = poll(lambda: the_session(state), timeout=120)
        poll(lambda: manifest_of(folder)["state"] == "running", timeout=120)
        assert (folder / ".reserve").stat().st_size == 256 * 1024
        child.kill()  # kill -9: no ending, the room kept for it stays
        child.wait(timeout=30)
    finally:
        end_child(child)
    # The same run as seen from a host that shares the state folder: its process cannot be known gone.
    elsewhere = state / "sessions" / f"{folder.name}-elsewhere"
    shutil.copytree(folder, elsewhere, ignore=shutil.ignore_patterns("control.sock"))  # the dead run's socket
    manifest = manifest_of(elsewhere)
    manifest.update(id=elsewhere.name, path=str(elsewhere), host=f"not-{socket.gethostname()}")
    (elsewhere / "manifest.json").write_text(json.dumps(manifest))

    listed = run_gputop("sessions", env=env)
    assert listed.returncode == 0, listed.stderr
    rows = [r for r in listed.stdout.splitlines() if folder.name in r]
    assert len(rows) == 2 and all("crashed" in r for r in rows), listed.stdout
    assert not (folder / ".reserve").exists()
    assert (elsewhere / ".reserve").exists()


# --- the TUI: the header, `s` and `q` on a disk that filled ------------------------------------------------


async def test_the_tui_on_a_disk_that_fills_shows_the_error_and_says_what_was_lost(tmp_path: Path) -> None:
    notes: list[str] = []

    def hook(message: Message) -> None:
        if isinstance(message, Notify):
            notes.append(str(message.notification.message))

    with tmpfs(tmp_path / "state", "size=16m") as state:
        folder = state / "run"
        source = EngineProcess(TUI_ENGINE, folder)
        app = GputopApp(source)
        async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
            await wait_for(pilot, lambda: calls(app) > 3, timeout=180)
            fill_disk(state / "filler")
            # The next sample kept (one per 5 s in a TUI's engine) cannot be written: said in the Log, not in
            # engine.log, which is on the same full disk.
            await wait_for(pilot, lambda: "the record stopped" in log_text(app), timeout=60)
            assert "running" in header_text(app)

            await pilot.press("p")  # the pass's input files cannot be written: the run ends, in one line
            await wait_for(pilot, lambda: "the run has ended: error, exit code 5" in log_text(app), timeout=120)
            await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.state == "error")
            await until_drawn(pilot, app)
            assert " error " in header_text(app) and "running" not in header_text(app)
            assert f"cannot write {folder / 'inputs' / 'input0.npy'}: No space left on device" in log_text(app)
            assert "Traceback" not in log_text(app)

            # Failing, the pass gave its partial file back and the ending used the reserve: full again.
            fill_disk(state / "filler-2")
            await pilot.press("s")
            await wait_for(pilot, lambda: "screenshot not saved" in log_text(app))
            assert notes == ["screenshot not saved: No space left on device"], notes
            assert not list(folder.glob("*.svg")) and app.is_running

            await pilot.press("q")
            await pilot.pause(0.5)
        assert app.return_code == 0
        last = farewell(source.record_check())
        leftovers = hidden_files(folder)
    assert source.pid is not None and not psutil.pid_exists(source.pid)
    assert last.exit_code == 5
    assert last.line.startswith(f"gputop: error: the session in {folder} is incomplete: ")
    assert "samples.jsonl: No space left on device" in last.line and "samples lost" in last.line, last.line
    assert "recorded in" not in last.line and last.line.endswith(f"({HINT})")
    assert leftovers == []


async def test_a_killed_engine_shows_crashed_and_gives_its_room_back(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    source = EngineProcess(TUI_ENGINE, folder)
    app = GputopApp(source)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 3, timeout=180)
        assert (folder / ".reserve").exists()
        assert source.pid is not None
        os.kill(source.pid, signal.SIGKILL)  # the OOM killer: no last snapshot, no ending
        await wait_for(pilot, lambda: "the run has ended: crashed" in log_text(app), timeout=60)
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.state == "crashed")
        await until_drawn(pilot, app)
        assert " crashed " in header_text(app) and "running" not in header_text(app)
        await pilot.press("q")
        await pilot.pause(0.5)
    last = farewell(source.record_check())
    assert not (folder / ".reserve").exists()
    assert last.exit_code == 5 and "recorded in" not in last.line
    said = f"gputop: error: the session in {folder} is incomplete: no ending (manifest.json still says running)"
    assert last.line == said
