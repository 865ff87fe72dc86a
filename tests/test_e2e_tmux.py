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

TMUX = shutil.which("tmux")
GPUTOP = Path(sys.executable).parent / "gputop"

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (apt-get install tmux)")


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
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
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
        term.wait_for(lambda s: "profile:" in s)
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
