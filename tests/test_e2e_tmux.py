"""End to end: the installed `gputop` in a real terminal (tmux), driven like a person."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

TMUX = shutil.which("tmux") or ""  # "" when missing: every test below is skipped then
GPUTOP = Path(sys.executable).parent / "gputop"

pytestmark = pytest.mark.skipif(not TMUX, reason="tmux is not installed (apt-get install tmux)")


class Terminal:
    def __init__(self, command: str, width: int = 120, height: int = 40) -> None:
        self.socket = f"gputop-test-{uuid.uuid4().hex[:8]}"
        subprocess.run(
            [TMUX, "-L", self.socket, "new-session", "-d", "-x", str(width), "-y", str(height), command],
            check=True,
            env={**os.environ, "TERM": "xterm-256color"},
        )

    def screen(self) -> str:
        proc = subprocess.run([TMUX, "-L", self.socket, "capture-pane", "-p"], capture_output=True, text=True)
        return proc.stdout

    def keys(self, *keys: str) -> None:
        subprocess.run([TMUX, "-L", self.socket, "send-keys", *keys], check=True)

    def wait_for(self, test: Callable[[str], bool], timeout: float = 90) -> str:
        """The screen once `test` holds on two captures 0.1 s apart: tmux can be read halfway through a
        frame Textual is writing (a CI run read a first frame with the Run pane drawn and no footer yet)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if test(self.screen()):
                time.sleep(0.1)
                text = self.screen()
                if test(text):
                    return text
            time.sleep(0.25)
        raise AssertionError(f"screen never matched; last screen:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run([TMUX, "-L", self.socket, "kill-server"], capture_output=True)


def call_count(screen: str) -> int:
    match = re.search(r"calls (\d+)", screen)
    return int(match.group(1)) if match else 0


def test_gputop_in_tmux(tmp_path: Path) -> None:
    assert GPUTOP.exists(), "gputop is installed by `pip install -e .`"
    exit_file = tmp_path / "exit_code"
    command = f"cd {tmp_path} && {GPUTOP} --device local-task; echo $? > {exit_file}; sleep 60"
    term = Terminal(command)
    try:
        term.wait_for(lambda s: call_count(s) > 0)
        term.keys("p")
        term.wait_for(lambda s: "matmul_256x1024x1024" in s)  # the pass's kernels (the Log keeps a few lines)
        term.keys("space")
        term.wait_for(lambda s: "paused" in s)
        term.keys("?")
        help_screen = term.wait_for(lambda s: "gputop keys" in s)
        assert "pause / resume" in help_screen
        term.keys("q")
        deadline = time.monotonic() + 30
        while not exit_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert exit_file.read_text().strip() == "0"
        assert "Traceback" not in term.screen()
    finally:
        term.close()


def pane_flag(term: Terminal, name: str) -> str:
    proc = subprocess.run(
        [TMUX, "-L", term.socket, "display-message", "-p", f"#{{{name}}}"], capture_output=True, text=True
    )
    return proc.stdout.strip()


def test_sigterm_restores_the_terminal_and_keeps_the_session(tmp_path: Path) -> None:
    import json

    import psutil

    folder = tmp_path / "session"
    exit_file = tmp_path / "exit_code"
    command = f"cd {tmp_path} && {GPUTOP} --device local-task --session-dir {folder}; echo $? > {exit_file}; sleep 60"
    term = Terminal(command)
    try:
        term.wait_for(lambda s: call_count(s) > 0)
        assert pane_flag(term, "alternate_on") == "1"
        # The gputop viewer itself: not the shell that started it (its line names the exit file), nor the
        # engine it started (`gputop serve ... --owner-pid`), which gets the signal from the viewer.
        [gputop] = [
            p
            for p in psutil.process_iter(["cmdline"])
            if str(folder) in " ".join(p.info["cmdline"] or [])
            and str(exit_file) not in " ".join(p.info["cmdline"])
            and "--owner-pid" not in p.info["cmdline"]
        ]
        gputop.terminate()
        deadline = time.monotonic() + 30
        while not exit_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert exit_file.read_text().strip() == "143"
        # The terminal is back: no alternate screen, no mouse reporting, no TUI left on it.
        assert pane_flag(term, "alternate_on") == "0" and pane_flag(term, "mouse_any_flag") == "0"
        assert "Traceback" not in term.screen() and "calls" not in term.screen()
        manifest = json.loads((folder / "manifest.json").read_text())
        assert manifest["state"] == "interrupted" and manifest["exit_code"] == 143
        assert json.loads((folder / "report.json").read_text())["exit_code"] == 143
    finally:
        term.close()


def test_attach_follows_a_served_run_and_p_profiles_it(tmp_path: Path) -> None:
    """`gputop serve` runs headless; `gputop attach` in a terminal shows it live, and its `p` profiles that run."""
    import json

    folder = tmp_path / "served"
    serve = subprocess.Popen(
        [str(GPUTOP), "serve", "demo:mlp", "--device", "local-task", "--metrics-port", "0", "--profile-every", "0",
         "--quiet", "--session-dir", str(folder)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    exit_file = tmp_path / "exit_code"
    term: Terminal | None = None
    try:
        deadline = time.monotonic() + 120
        while not (folder / "control.sock").exists():
            assert serve.poll() is None and time.monotonic() < deadline, "gputop serve did not start"
            time.sleep(0.2)
        term = Terminal(f"cd {tmp_path} && {GPUTOP} attach {folder}; echo $? > {exit_file}; sleep 60")
        screen = term.wait_for(lambda s: call_count(s) > 0 and f"attached pid {serve.pid}" in s)
        assert "gputop serve demo:mlp" in screen
        seen = call_count(screen)
        term.wait_for(lambda s: call_count(s) > seen)  # it follows the run as it grows
        assert "profile:" not in screen
        term.keys("p")
        # the pass arrives, kernels and all (a kernel is named by its work: matmul_MxNxK; the Log keeps
        # a few lines, so its "profile:" line may have scrolled by)
        screen = term.wait_for(lambda s: "matmul_256x1024x1024" in s)
        profiles = [json.loads(line).get("profile") for line in (folder / "samples.jsonl").read_text().splitlines()]
        assert any(profiles), "the pass was taken by the served run, not by the viewer"
        term.keys("q")
        deadline = time.monotonic() + 30
        while not exit_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert exit_file.read_text().strip() == "0"
        assert serve.poll() is None, "quitting the viewer leaves the run running"
    finally:
        if term is not None:
            term.close()
        if serve.poll() is None:
            serve.terminate()
        serve.wait(timeout=60)
    assert serve.returncode == 143


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)], ids=["80x24", "120x40", "200x60"])
def test_every_size_shows_every_pane_and_reload_shows_no_old_row(tmp_path: Path, size: tuple[int, int]) -> None:
    """At each size: every pane's title and `? Help` on screen; p shows the kernels with where they came from,
    count and avg (and min and max at 200 columns); r brings no row of the old run back and continues the
    same session folder."""
    state = tmp_path / "state"
    exit_file = tmp_path / "exit_code"
    command = f"cd {tmp_path} && GPUTOP_STATE_DIR={state} {GPUTOP} --device local-task; echo $? > {exit_file}; sleep 60"
    term = Terminal(command, *size)
    try:
        titles = ("Run", "Memory pools", "Kernels", "Exports", "Captures", "Log", "? Help")
        # every title on one whole frame, not merely the first frame that shows a call (wait_for's last
        # screen says which title never came)
        screen = term.wait_for(lambda s: call_count(s) > 0 and all(title in s for title in titles))
        assert all(len(line) <= size[0] for line in screen.splitlines())
        term.keys("p")  # at 80x24 it also brings Kernels forward
        # Below 200 columns the kernel's `from` (its source lines) takes the room of min and max, which 200 shows.
        headers = ("from", "count", "avg ") if size[0] < 200 else ("from", "count", "avg ", "min ", "max ")
        term.wait_for(lambda s: "matmul_256x1024x1024" in s and all(header in s for header in headers))
        term.keys("r")
        screen = term.wait_for(lambda s: "no profile yet" in s)
        assert "matmul_256x1024x1024" not in screen
        term.keys("1")  # Run forward (at 80x24): the new run calls on
        screen = term.wait_for(lambda s: call_count(s) > 0)
        assert "matmul_256x1024x1024" not in screen
        term.keys("q")
        deadline = time.monotonic() + 30
        while not exit_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert exit_file.read_text().strip() == "0"
        [folder] = list((state / "sessions").iterdir())  # the reload went on in the same folder
        assert f"session recorded in {folder}" in term.screen().replace("\n", "")
    finally:
        term.close()


def test_a_tui_sessions_record_is_thinned(tmp_path: Path) -> None:
    """The TUI's engine (`gputop serve`) records one sample per 5 s plus every change, not ten a second:
    a TUI left open overnight must not fill the disk (it grew 3.6 MB a minute before)."""
    import json

    folder = tmp_path / "session"
    exit_file = tmp_path / "exit_code"
    command = f"cd {tmp_path} && {GPUTOP} demo:mlp --device local-task --session-dir {folder}; echo $? > {exit_file}"
    term = Terminal(command + "; sleep 60")
    try:
        term.wait_for(lambda s: call_count(s) > 0)
        started = time.monotonic()
        time.sleep(15)
        term.keys("q")
        deadline = time.monotonic() + 30
        while not exit_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert exit_file.read_text().strip() == "0"
        running_s = time.monotonic() - started
    finally:
        term.close()
    lines = [line for line in (folder / "samples.jsonl").read_bytes().splitlines() if line.strip()]
    calls = [json.loads(line)["calls"]["count"] for line in lines]
    assert calls[-1] > 50, calls[-1]  # the run went on calling all along
    # Published ten times a second: 150 or more in 15 s unthinned. Thinned: compile, load, the first calls,
    # one every 5 s, the ending.
    assert len(lines) < 3 * running_s, (len(lines), running_s)
    report = json.loads((folder / "report.json").read_text())
    assert report["record"]["samples"] == len(lines) and report["record"]["samples_published"] > 5 * len(lines)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_your_own_program_in_tmux(
    tmp_path: Path, program_python: Path, program_assets: tuple[Path, Path], size: tuple[int, int]
) -> None:
    """`gputop -- python app.py` as a person types it: live function rows, a diagnosis, `q` ends the program."""
    vmfb, irpa = program_assets
    programs = Path(__file__).parent / "programs"
    exit_file = tmp_path / "exit_code"
    program = f"{program_python} {programs / 'hold_results.py'} {vmfb} {irpa} 100000"
    command = f"cd {tmp_path} && {GPUTOP} -- {program}; echo $? > {exit_file}; sleep 60"
    term = Terminal(command, width=size[0], height=size[1])
    try:
        screen = term.wait_for(lambda s: "mlp.main" in s and "watching" in s)
        assert "Traceback" not in screen
        term.wait_for(lambda s: "memory grows 64.0 KiB per call" in s or "grows 64.0 KiB" in s)
        term.keys("q")
        deadline = time.monotonic() + 30
        while not exit_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        # q ended the program with SIGINT: its KeyboardInterrupt ends it by that signal, and gputop says so
        assert exit_file.read_text().strip() == str(128 + 2)
        assert "Traceback" not in term.screen()
        sessions = sorted((Path(os.environ["GPUTOP_STATE_DIR"]) / "sessions").glob("*hold_results*"))
        log = "\n".join((folder / "samples.jsonl").read_text() for folder in sessions[-1:])
        assert "program ended by gputop (q): SIGINT" in log
    finally:
        term.close()
