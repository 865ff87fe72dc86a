"""`gputop serve -- CMD`: a user's program watched with no viewer; attach, /metrics and `gputop.watch()` on it.

The program is a real one written for the tests (tests/programs/), run from an
environment without gputop; the engine beside it publishes what every other
run publishes, so the TUI's AttachSource (through Textual's Pilot) and the
Prometheus page read it as they read any served run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from program_env import PROGRAMS
from tui_pilot import wait_for

from conftest import end_child, poll, spawn_gputop
from gputop.core.serving.control_socket import ControlUnavailable, ask


def hello(folder: Path) -> dict[str, object] | None:
    try:
        return ask(folder, "hello")
    except ControlUnavailable:
        return None


async def test_a_served_program_is_attached_to_and_scraped(
    tmp_path: Path, program_python: Path, program_assets: tuple[Path, Path]
) -> None:
    from gputop.tui.app import GputopApp
    from gputop.tui.bridge import AttachSource
    from gputop.tui.panes.header import HeaderBar
    from gputop.tui.panes.log import LogPane
    from gputop.tui.panes.run import RunPane

    vmfb, irpa = program_assets
    folder = tmp_path / "served"
    program = [str(program_python), str(PROGRAMS / "hold_results.py"), str(vmfb), str(irpa), "100000"]
    child = spawn_gputop("serve", "--metrics-port", "0", "--session-dir", str(folder), "--", *program)
    try:
        said = child.stderr.readline() if child.stderr else ""  # type: ignore[union-attr]
        assert "serving metrics at http://127.0.0.1:" in said, said
        url = said.split("serving metrics at ")[1].split()[0]
        poll(lambda: (hello(folder) or {}).get("state") == "running", timeout=120, every=0.2)
        app = GputopApp(AttachSource(folder))
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(
                pilot,
                lambda: app.snapshot is not None and app.snapshot.program is not None and app.snapshot.calls.count > 0,
                timeout=60,
            )
            await wait_for(pilot, lambda: "mlp.main" in str(app.query_one(RunPane).query_one("#run-calls").render()))
            header = str(app.query_one(HeaderBar).render())
            assert "watching" in header and "hold_results.py" in header
            await pilot.press("p")
            await wait_for(
                pilot,
                lambda: (
                    "profile: IREE's Python bindings open no profile sink on local-task"
                    in "\n".join(app.query_one(LogPane).messages)
                ),
                timeout=30,
            )
            await pilot.press("space")  # the program's calls are its own: refused in one line, the run goes on
            await wait_for(
                pilot,
                lambda: "gputop cannot pause them" in "\n".join(app.query_one(LogPane).messages),
                timeout=30,
            )
            assert app.snapshot.state == "running"  # type: ignore[union-attr]
            await wait_for(pilot, lambda: app.snapshot.program.growth is not None, timeout=60)  # type: ignore[union-attr]
            await pilot.press("q")
            await pilot.pause(0.3)
        page = urllib.request.urlopen(url, timeout=10).read().decode()
        calls = [line for line in page.splitlines() if line.startswith("gputop_calls_total")]
        assert calls and float(calls[0].split()[-1]) > 0, page[:2000]
        assert child.poll() is None, "leaving the viewer leaves the program running"
    finally:
        stderr = end_child(child, signal.SIGTERM)
    assert child.returncode == 128 + signal.SIGTERM, stderr
    report = json.loads((folder / "report.json").read_text())
    assert report["program"]["ended"] == "signal" and report["program"]["ended_line"] == "SIGTERM"
    assert report["memory"]["growth"]["bytes_per_call"] == 32 * 512 * 4
    assert "Traceback" not in stderr


def test_gputop_watch_inside_a_program_makes_the_same_session(program_assets: tuple[Path, Path]) -> None:
    """`import gputop; gputop.watch()` in a program gputop did not start (it runs in gputop's own environment)."""
    vmfb, irpa = program_assets
    proc = subprocess.run(
        [sys.executable, str(PROGRAMS / "watch_inside.py"), str(vmfb), str(irpa), "150"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    own = json.loads(proc.stdout.strip().splitlines()[-1])
    folder = Path(own["session"])
    assert f"gputop: watching this program: gputop attach {folder}" in proc.stderr
    report = poll(lambda: json.loads((folder / "report.json").read_text()), timeout=60, every=0.2)
    assert report["functions"][0]["count"] == own["calls"] == 150
    assert report["program"]["pid"] == own["pid"] and report["program"]["ended"] == "exited"


def test_gputop_watch_from_a_venv_without_gputop(
    program_python: Path, program_assets: tuple[Path, Path], tmp_path: Path
) -> None:
    """`PYTHONPATH=$(gputop watch-path)` in a program's venv without gputop: `gputop.watch()` starts the gputop
    command found on PATH; without one it says in one line what is missing, and the program runs on."""
    vmfb, irpa = program_assets
    path = subprocess.run(
        [sys.executable, "-m", "gputop.tui", "watch-path"], capture_output=True, text=True, check=True
    ).stdout.strip()
    command = [str(program_python), str(PROGRAMS / "watch_inside.py"), str(vmfb), str(irpa), "120"]
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "GPUTOP_WATCH"))}
    base.update(PYTHONPATH=path, GPUTOP_STATE_DIR=str(tmp_path / "state"))
    alone = subprocess.run(command, capture_output=True, text=True, timeout=120, env={**base, "PATH": "/usr/bin:/bin"})
    assert alone.returncode == 0, alone.stderr
    assert alone.stderr.strip().splitlines() == [
        "gputop: not watching this program: the gputop command is not on PATH; install gputop where you run it "
        "(pipx install gputop) or set GPUTOP=/path/to/gputop (this environment needs only $(gputop watch-path) on "
        "PYTHONPATH)"
    ]
    assert json.loads(alone.stdout.strip().splitlines()[-1])["session"] == "None"
    gputop_bin = str(Path(sys.executable).parent)
    watched = subprocess.run(
        command, capture_output=True, text=True, timeout=120, env={**base, "PATH": f"{gputop_bin}:/usr/bin:/bin"}
    )
    assert watched.returncode == 0, watched.stderr
    own = json.loads(watched.stdout.strip().splitlines()[-1])
    folder = Path(own["session"])
    assert folder.parent == tmp_path / "state" / "sessions"
    report = poll(lambda: json.loads((folder / "report.json").read_text()), timeout=60, every=0.2)
    assert report["functions"][0]["count"] == own["calls"] == 120


async def test_web_attaches_to_a_served_program(
    tmp_path: Path, program_python: Path, program_assets: tuple[Path, Path]
) -> None:
    """`gputop web --attach` on `gputop serve -- CMD`: a browser's screen shows the program's function rows."""
    import aiohttp
    from web_client import Viewer, words

    from conftest import free_port

    vmfb, irpa = program_assets
    folder = tmp_path / "served"
    program = [str(program_python), str(PROGRAMS / "load_and_call.py"), str(vmfb), str(irpa), "1000000"]
    served = spawn_gputop("serve", "--metrics-port", "0", "--quiet", "--session-dir", str(folder), "--", *program)
    web = None
    try:
        poll(lambda: (hello(folder) or {}).get("state") == "running", timeout=120, every=0.2)
        port = free_port()
        web = spawn_gputop("web", "--port", str(port), "--attach", str(folder))
        url = f"ws://127.0.0.1:{port}/ws?width=120&height=40"
        poll(lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).status == 200, timeout=60)
        async with aiohttp.ClientSession() as session, session.ws_connect(url) as ws:
            viewer = Viewer(ws)
            assert await viewer.panes_shown()
            assert await viewer.read_until(lambda v: "mlp.main" in words(v.screen) and "watching" in words(v.screen))
    finally:
        if web is not None:
            end_child(web)
        stderr = end_child(served, signal.SIGTERM)
    assert "Traceback" not in stderr
