"""Nothing lost: the session directory of finished, interrupted and killed runs.

Every test runs the real command line in a child process and then reads the
session directory it left, as a person would after a crash: the manifest,
every line of samples.jsonl, report.json, `gputop sessions`, `gputop report`
and the read-only TUI of `gputop open`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from conftest import poll, run_gputop


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "gputop.tui", "run", *args, "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def manifest(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "manifest.json").read_text())


def samples(folder: Path) -> list[dict[str, Any]]:
    """Every line of samples.jsonl; each one must be whole JSON."""
    raw = (folder / "samples.jsonl").read_bytes()
    lines = raw.split(b"\n")
    assert lines[-1] == b"", "the last line was cut off"
    return [json.loads(line) for line in lines[:-1]]


def last_sample(folder: Path) -> dict[str, Any] | None:
    path = folder / "samples.jsonl"
    if not path.exists():
        return None
    lines = [line for line in path.read_bytes().split(b"\n") if line]
    try:
        return json.loads(lines[-1]) if lines else None
    except ValueError:
        return None


def leftover_children(folder: Path) -> list[str]:
    """Processes still running whose command line names the session (compilers, profilers)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if str(folder) in cmdline:
            found.append(cmdline)
    return found


def test_finished_run_leaves_a_complete_session(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    args = ("run", "demo:mlp", "--device", "cpu", "-n", "5", "--json", "-")
    proc = run_gputop(*args, "--no-cache", "--session-dir", str(tmp_path / "first"))
    assert proc.returncode == 0, proc.stderr
    # A cache hit: the module's compile log comes with it into the new session.
    proc = run_gputop(*args, "--session-dir", str(folder))
    assert proc.returncode == 0, proc.stderr
    data = manifest(folder)
    assert data["state"] == "finished" and data["exit_code"] == 0
    assert data["versions"]["gputop"] and data["versions"]["iree_runtime"]
    assert "--session-dir" in data["command_line"] and data["config"]["iterations"] == 5
    assert data["device"]["id"] == "local-task"
    assert len(data["compile"]["cache_key"]) == 32 and data["compile"]["cache_hit"]
    assert Path(data["compile"]["log"]).parent == folder and Path(data["compile"]["log"]).exists()
    rows = samples(folder)
    assert [row["seq"] for row in rows] == list(range(1, len(rows) + 1))
    assert rows[-1]["state"] == "finished" and data["samples"] == len(rows) and data["samples_lost"] == 0
    report = json.loads((folder / "report.json").read_text())
    assert report["record"] == {
        "samples": len(rows),
        "samples_published": len(rows),
        "samples_thinned": 0,
        "samples_lost": 0,
        "write_error": None,
    }
    assert report["calls"] == json.loads(proc.stdout)["calls"]


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_during_calls_keeps_everything(tmp_path: Path, signum: int, code: int) -> None:
    folder = tmp_path / "s"
    child = start("demo:mlp", "--device", "cpu", "-n", "100000", "--session-dir", str(folder))
    poll(lambda: (last_sample(folder) or {}).get("calls", {}).get("count", 0) >= 5)
    child.send_signal(signum)
    _, stderr = child.communicate(timeout=60)
    assert child.returncode == code, stderr
    assert "Traceback" not in stderr and "interrupted" in stderr
    data = manifest(folder)
    assert data["state"] == "interrupted" and data["exit_code"] == code
    report = json.loads((folder / "report.json").read_text())
    assert report["state"] == "interrupted" and report["exit_code"] == code and report["calls"]["count"] >= 5
    assert report["record"]["samples_lost"] == 0 and samples(folder)


def test_signal_during_compile_reaps_the_compiler(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    # --no-cache and a fresh seed-free compile: the compiler is running when the signal lands.
    child = start("demo:conv", "--device", "cpu", "-n", "1", "--no-cache", "--session-dir", str(folder))
    poll(lambda: (folder / "manifest.json").exists() and manifest(folder)["state"] == "compiling")
    poll(lambda: any("iree-compile" in c for c in leftover_children(folder)), timeout=30)
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=60)
    assert child.returncode == 130, stderr
    assert leftover_children(folder) == []
    data = manifest(folder)
    assert data["state"] == "interrupted" and data["compile"] is None
    assert json.loads((folder / "report.json").read_text())["state"] == "interrupted"


def test_signal_during_profile_reaps_the_profiler(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    child = start("demo:mlp", "--device", "cpu", "-n", "300", "--profile", "--session-dir", str(folder))
    poll(lambda: bool((last_sample(folder) or {}).get("profiling")), timeout=180)
    child.send_signal(signal.SIGTERM)
    _, stderr = child.communicate(timeout=60)
    assert child.returncode == 143, stderr
    assert leftover_children(folder) == []
    assert manifest(folder)["state"] == "interrupted"


def test_kill_9_leaves_readable_lines_and_a_rebuilt_report(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    child = start("demo:mlp", "--device", "cpu", "-n", "100000", "--session-dir", str(folder))
    poll(lambda: (last_sample(folder) or {}).get("calls", {}).get("count", 0) >= 5)
    child.kill()
    child.communicate(timeout=60)
    rows = samples(folder)  # every complete line parses
    assert rows and rows[-1]["calls"]["count"] >= 5
    assert manifest(folder)["state"] == "running" and not (folder / "report.json").exists()

    listing = run_gputop("sessions", "--json")
    assert listing.returncode == 0, listing.stderr
    [entry] = [e for e in json.loads(listing.stdout) if e["path"] == str(folder)]
    assert entry["state"] == "crashed" and entry["target"] == "demo:mlp" and entry["device"] == "local-task"
    assert entry["samples"] == len(rows) and entry["duration_s"] > 0

    report = run_gputop("report", str(folder), "--json", "-")
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    assert data["state"] == "crashed" and data["calls"]["count"] == rows[-1]["calls"]["count"]
    assert "rebuilt from the last of" in data["rebuilt"]
    text = run_gputop("report", str(folder))
    assert "state     crashed" in text.stdout and "note      no report.json" in text.stdout


def test_sessions_and_report_by_id(tmp_path: Path) -> None:
    proc = run_gputop("run", "demo:mlp", "--device", "cpu", "-n", "2", "--json", "-", "--quiet")
    assert proc.returncode == 0, proc.stderr
    folder = Path(json.loads(proc.stdout)["session_dir"])
    listing = run_gputop("sessions", "--wide")  # whole rows: the store holds every test's sessions, ids long
    assert listing.returncode == 0
    [line] = [line for line in listing.stdout.splitlines() if folder.name in line]
    assert "demo:mlp" in line and "local-task" in line and "finished" in line
    report = run_gputop("report", folder.name)
    assert report.returncode == 0 and f"session   {folder}" in report.stdout
    assert "state     finished" in report.stdout


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    from gputop.core.store.reader import read_tail

    folder = tmp_path / "s"
    proc = run_gputop("run", "demo:mlp", "--device", "cpu", "-n", "2", "--session-dir", str(folder))
    assert proc.returncode == 0
    whole = samples(folder)
    with open(folder / "samples.jsonl", "ab") as handle:
        handle.write(b'{"state": "runn')  # what a kill -9 mid-write leaves at worst
    tail = read_tail(folder, 1000)
    assert len(tail) == len(whole) and tail[-1].seq == whole[-1]["seq"]


async def test_open_shows_a_session_read_only(tmp_path: Path) -> None:
    from tui_pilot import footer_keys, key_name, until_drawn, wait_for

    from gputop.core.store.reader import read_tail
    from gputop.tui.app import GputopApp
    from gputop.tui.bridge import ReplaySource
    from gputop.tui.panes.log import LogPane

    folder = tmp_path / "s"
    proc = run_gputop("run", "demo:mlp", "--device", "cpu", "-n", "3", "--session-dir", str(folder))
    assert proc.returncode == 0
    app = GputopApp(ReplaySource(read_tail(folder, 300)))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.state == "finished")
        await until_drawn(pilot, app)
        # It says it is recorded, and offers no key that would act on a live run.
        assert "recorded, read-only" in str(app.query_one("#header").render())
        keys = {key_name(key) for key in await footer_keys(app, pilot)}
        assert "question_mark" in keys and not keys & {"space", "p", "c", "r", "d", "e"}
        await pilot.press("space")
        await pilot.pause(0.2)
        assert app.snapshot.state == "finished" and "paused" not in app.query_one(LogPane).messages


def test_open_of_an_empty_session_is_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({"started_at": time.time(), "state": "starting", "pid": 1}))
    proc = run_gputop("open", str(folder))
    assert proc.returncode == 2 and "no samples to show" in proc.stderr


def test_sessions_with_none_yet(tmp_path: Path) -> None:
    proc = run_gputop("sessions", env={"GPUTOP_STATE_DIR": str(tmp_path / "empty")})
    assert proc.returncode == 0 and "no sessions yet" in proc.stdout
    assert os.listdir(tmp_path / "empty") == ["sessions"] or os.listdir(tmp_path / "empty") == []


def test_sessions_fit_the_terminal_by_cutting_the_start_of_long_targets(tmp_path: Path) -> None:
    """A long model path made every row as wide as itself; at COLUMNS=80 rows fit, ids whole, paths keep their
    file names."""
    import shutil

    import onnx

    deep = tmp_path / ("a-folder-with-a-long-name-" * 4) / "and-deeper-still" / "models"
    deep.mkdir(parents=True)
    model = deep / "relu.onnx"
    shutil.copy(Path(onnx.__file__).parent / "backend/test/data/pytorch-converted/test_ReLU/model.onnx", model)
    env = {"GPUTOP_STATE_DIR": str(tmp_path / "state")}
    for target in (str(model), "demo:mlp"):
        proc = run_gputop("run", target, "--device", "cpu", "-n", "1", "--quiet", env=env)
        assert proc.returncode == 0, proc.stderr
    ids = sorted(p.name for p in (tmp_path / "state" / "sessions").iterdir())
    assert len(ids) == 2
    narrow = run_gputop("sessions", env={**env, "COLUMNS": "80"})
    assert narrow.returncode == 0, narrow.stderr
    lines = narrow.stdout.splitlines()
    assert len(lines) == 3 and max(len(line) for line in lines) <= 80, narrow.stdout
    [row] = [line for line in lines if "relu.onnx" in line]
    assert "…/" in row and str(model) not in row and "/models/relu.onnx" in row  # its folder and file name
    assert all(any(session_id in line for line in lines) for session_id in ids)  # ids whole, for report/open
    whole = run_gputop("sessions", "--wide", env={**env, "COLUMNS": "80"})  # --wide: rows whole
    assert str(model) in whole.stdout
