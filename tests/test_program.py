"""`gputop run -- CMD`: real programs written for these tests, watched unmodified in an environment without gputop.

The programs (`tests/programs/`) import only iree.runtime, numpy and the
standard library, and time themselves: their own printed figures (calls,
p50, context seconds, parameter bytes, held bytes) are the second source that
the report is held against. They run from a virtual environment that has
iree.runtime and numpy but not gputop (`tests/program_env.py`).
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

import pytest
from program_env import PROGRAMS

OUTPUT_BYTES = 32 * 512 * 4  # mlp.main's result: 32x512 f32


def watch(
    program_python: Path, program: str, *args: str, gputop_args: tuple[str, ...] = (), timeout: float = 180
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None, Path]:
    """`gputop run --json FILE -- PYTHON tests/programs/PROGRAM ARGS`; the process, the report (None if none)."""
    out = Path(os.environ["GPUTOP_STATE_DIR"]).parent / f"report-{program}-{os.getpid()}-{len(args)}.json"
    out.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gputop.tui",
            "run",
            "--json",
            str(out),
            *gputop_args,
            "--",
            str(program_python),
            str(PROGRAMS / program),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    report = json.loads(out.read_text()) if out.exists() else None
    return proc, report, out


def own_figures(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The program's own last JSON line on its stdout (which gputop passed through unchanged)."""
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, f"the program printed no figures; stdout {proc.stdout!r}, stderr {proc.stderr!r}"
    return json.loads(lines[-1])


@pytest.mark.parametrize("style", ["attr", "from"])
def test_a_program_is_watched_in_either_import_style(
    program_python: Path, program_assets: tuple[Path, Path], style: str
) -> None:
    vmfb, irpa = program_assets
    proc, report, _ = watch(program_python, "load_and_call.py", str(vmfb), str(irpa), "200", "--style", style)
    assert proc.returncode == 0, proc.stderr
    own = own_figures(proc)
    assert report is not None, proc.stderr
    # stdout is the program's alone: one JSON line, gputop's report went to stderr
    assert proc.stdout.strip().count("\n") == 0 and "program" in proc.stderr and "functions" in proc.stderr
    functions = report["functions"]
    assert [f"{f['module']}.{f['name']}" for f in functions] == ["mlp.main"]
    assert functions[0]["count"] == own["calls"] == 200
    # p50 against the program's own perf_counter around each call: the wrapper adds microseconds
    assert functions[0]["p50_ms"] == pytest.approx(own["p50_ms"], rel=0.10)
    assert report["parameters"]["bytes"] == own["params_bytes"] == 2 * 512 * 512 * 4  # the archive's two tensors
    assert report["parameters"]["mode"] == "mmap" and report["parameters"]["through"] == "file handle"
    # the program timed its context creation around more than the creation itself: gputop's is within it
    assert 0 < report["phases"]["context_s"] <= own["context_s"] * 1.05 + 0.001
    assert report["program"]["exit_code"] == 0 and report["program"]["ended"] == "exited"
    assert report["program"]["pid"] == own["pid"]
    assert report["memory"]["growth"] is None  # it drops its results
    assert not [h for h in report["hints"] if "host memory" in h]


def test_a_program_that_holds_every_result_is_flagged(program_python: Path, program_assets: tuple[Path, Path]) -> None:
    vmfb, irpa = program_assets
    proc, report, _ = watch(program_python, "hold_results.py", str(vmfb), str(irpa), "600", "--sleep-ms", "5")
    assert proc.returncode == 0, proc.stderr
    own = own_figures(proc)
    assert report is not None
    growth = report["memory"]["growth"]
    assert growth is not None, report["hints"]
    assert growth["source"] == "held results"
    assert growth["bytes_per_call"] == OUTPUT_BYTES == own["held_bytes"] // own["held"]
    assert growth["since_call"] < 100
    assert any(h.startswith("memory grows 64.0 KiB per call") for h in report["hints"]), report["hints"]


def test_parameters_through_host_memory_are_diagnosed(program_python: Path, program_assets: tuple[Path, Path]) -> None:
    vmfb, irpa = program_assets
    proc, report, _ = watch(program_python, "host_memory_params.py", str(vmfb), str(irpa), "50")
    assert proc.returncode == 0, proc.stderr
    own = own_figures(proc)
    assert report is not None
    assert report["parameters"]["through"] == "host memory"
    assert report["parameters"]["bytes"] == own["params_bytes"]
    hint = [h for h in report["hints"] if "went through host memory" in h]
    assert hint and "ParameterIndex().load(path)" in hint[0], report["hints"]


def test_a_program_that_raises_keeps_its_exit_code_and_last_line(
    program_python: Path, program_assets: tuple[Path, Path]
) -> None:
    vmfb, irpa = program_assets
    proc, report, _ = watch(program_python, "raise_error.py", str(vmfb), str(irpa), "20")
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr  # the program's own traceback passed through
    assert report is not None
    program = report["program"]
    assert program["ended"] == "raised" and program["exit_code"] == 1
    assert program["ended_line"].startswith("ValueError")


def test_a_program_killed_by_a_signal_is_recorded_as_such(
    program_python: Path, program_assets: tuple[Path, Path]
) -> None:
    vmfb, irpa = program_assets
    proc, report, _ = watch(program_python, "sigkill.py", str(vmfb), str(irpa), "20")
    assert proc.returncode == 128 + signal.SIGKILL
    assert report is not None
    assert report["program"]["ended"] == "signal" and report["program"]["ended_line"] == "SIGKILL"
    assert report["functions"][0]["count"] > 0  # what came before the kill is kept


def test_a_program_without_iree_ends_with_one_line_and_its_code(program_python: Path) -> None:
    proc, _, _ = watch(program_python, "no_iree.py")
    assert proc.returncode == 3
    lines = [line for line in proc.stderr.splitlines() if line.startswith("gputop:")]
    assert lines == [f"gputop: {program_python} {PROGRAMS / 'no_iree.py'} made no IREE calls"], proc.stderr


def test_two_worker_processes_get_a_session_each(program_python: Path, program_assets: tuple[Path, Path]) -> None:
    vmfb, irpa = program_assets
    proc, report, _ = watch(program_python, "two_workers.py", str(vmfb), str(irpa), "30")
    assert proc.returncode == 0, proc.stderr
    own = own_figures(proc)
    assert report is not None
    assert report["program"]["other_processes"] == 1
    pids = {w["pid"] for w in own["workers"]}
    assert report["program"]["pid"] in pids
    assert report["functions"][0]["count"] == 30
    listing = subprocess.run(
        [sys.executable, "-m", "gputop.tui", "sessions", "--json"], capture_output=True, text=True, check=True
    )
    sessions = json.loads(listing.stdout)
    other = [s for s in sessions if s.get("target", "").endswith(f"two_workers.py {vmfb} {irpa} 30")]
    assert len(other) >= 2, [s.get("target") for s in sessions]


@pytest.mark.parametrize("fault", ["invoke", "send", "memory"])
def test_a_failing_watcher_never_harms_the_program(
    program_python: Path, program_assets: tuple[Path, Path], fault: str
) -> None:
    vmfb, irpa = program_assets
    env_fault = {"GPUTOP_WATCH_FAULT": fault}
    os.environ.update(env_fault)
    try:
        proc, report, _ = watch(program_python, "load_and_call.py", str(vmfb), str(irpa), "50")
    finally:
        os.environ.pop("GPUTOP_WATCH_FAULT")
    assert proc.returncode == 0, proc.stderr
    own = own_figures(proc)
    assert own["calls"] == 50 and own["checksum"] == pytest.approx(-22.717041015625)
    assert report is not None and report["program"]["exit_code"] == 0


def test_run_options_that_need_a_target_are_refused_with_a_program() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gputop.tui", "run", "--device", "local-task", "--", "python3", "-c", "pass"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "gputop: error: --device does not apply with -- CMD: the program loads and calls its own modules "
        "(gputop watches them; run gputop TARGET to have gputop make the calls)"
    ]


@pytest.mark.parametrize("face", [["run"], ["serve", "--quiet"], []])
def test_a_command_that_does_not_exist_is_127_and_leaves_no_session(face: list[str], tmp_path: Path) -> None:
    """A typo'd command answers as a shell does (127: not found; 126: not executable), and nothing is left."""
    env = {**os.environ, "GPUTOP_STATE_DIR": str(tmp_path / "state")}
    gputop = [sys.executable, "-m", "gputop.tui", *face]
    proc = subprocess.run([*gputop, "--", "pyhton", "app.py"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 127
    assert proc.stderr.strip() == "gputop: error: pyhton: command not found"
    not_executable = tmp_path / "app.py"
    not_executable.write_text("print('hi')\n")
    proc = subprocess.run([*gputop, "--", str(not_executable)], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 126
    assert proc.stderr.strip() == f"gputop: error: {not_executable}: Permission denied"
    sessions = tmp_path / "state" / "sessions"
    assert not sessions.exists() or not any(sessions.iterdir())


def test_ctrl_c_reaches_the_program_and_its_code_is_gputops(
    tmp_path: Path, program_python: Path, program_assets: tuple[Path, Path]
) -> None:
    """A terminal's Ctrl-C goes to the whole foreground group: the program gets it as it would without gputop."""
    vmfb, irpa = program_assets
    out = Path(os.environ["GPUTOP_STATE_DIR"]).parent / "report-ctrl-c.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    program = [str(program_python), str(PROGRAMS / "hold_results.py"), str(vmfb), str(irpa), "100000"]
    gputop = [sys.executable, "-m", "gputop.tui", "run", "--json", str(out), "--session-dir", str(tmp_path / "s")]
    child = subprocess.Popen(
        [*gputop, "--", *program],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # a process group of its own, as a shell's foreground job has
    )
    try:
        samples = tmp_path / "s" / "samples.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (samples.exists() and "mlp.main" in samples.read_text("utf-8")):
            time.sleep(0.2)
        os.killpg(child.pid, signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    assert child.returncode == 128 + signal.SIGINT, stderr
    assert "KeyboardInterrupt" in stderr  # the program's own traceback, passed through
    report = json.loads(out.read_text())
    assert report["program"]["ended"] in ("signal", "raised") and report["program"]["exit_code"] == 130
