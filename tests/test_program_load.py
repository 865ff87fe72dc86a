"""A watched program under real load, and each of its calls taken apart (issues 55 and 56).

Real programs written for these tests (`tests/programs/`), run unmodified from an
environment without gputop. The second source for every count and time is the
program's own: it counts its requests, contexts and calls and times each call with
perf_counter around it, and prints those figures as its last stdout line. The argument
bytes are the numpy array's own `nbytes` (1024 x 4096 f32 = 16 MiB, written in the
program), and the hints are held against what the program was written to do wrong, and
against a program that does nothing wrong, which must get none.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from program_env import PROGRAMS
from test_program import own_figures, watch

ARGUMENT_BYTES = 1024 * 4096 * 4  # why_slow.py's x: the rowsum module's argument


def _assets(program_assets: tuple[Path, Path]) -> Path:
    return program_assets[0].parent  # make_assets.py builds model, rowsum and tiny side by side


def test_a_context_per_request_is_counted_whole_and_said_once(
    program_python: Path, program_assets: tuple[Path, Path]
) -> None:
    """1,000 requests, a context each: 1,000 calls and 1,000 contexts counted, one hint, a small record."""
    vmfb, irpa = program_assets
    proc, report, _ = watch(program_python, "per_request.py", str(vmfb), str(irpa), "1000")
    assert proc.returncode == 0, proc.stderr
    own = own_figures(proc)
    assert report is not None, proc.stderr
    assert own["calls"] == own["contexts"] == 1000
    assert report["functions"][0]["count"] == 1000
    assert report["program"]["contexts"] == 1000
    assert report["program"]["calls_dropped"] == 0 and report["program"]["calls_made"] == 1000
    contexts = [hint for hint in report["hints"] if hint.startswith("contexts:")]
    assert contexts == [report["hints"][0]], report["hints"]
    assert contexts[0].startswith("contexts: 1,000 contexts for 1,000 calls: make the context once and reuse it")
    # what a context costs, measured: the median of the program's own context timings, within the wrapper's µs
    assert report["program"]["context_p50_ms"] == pytest.approx(own["context_p50_ms"], rel=0.5, abs=0.05)
    # the Log says three contexts one by one, then counts them; the hint once
    folder = Path(report["session_dir"])
    samples = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    said = {event["message"] for sample in samples for event in sample["events"]}
    assert sum(message.startswith("program: context created") for message in said) == 3
    assert sum(message.startswith("contexts: ") for message in said) == 1
    assert (folder / "samples.jsonl").stat().st_size < 1024 * 1024


def test_a_fast_loop_of_contexts_loses_no_call(program_python: Path, program_assets: tuple[Path, Path]) -> None:
    """Thousands of contexts a second (a 4-float add, a context each): every one counted, or the loss said."""
    tiny = _assets(program_assets) / "tiny.vmfb"
    proc, report, _ = watch(program_python, "fast_calls.py", str(tiny), "5000", "--contexts")
    assert proc.returncode == 0, proc.stderr
    own = own_figures(proc)
    assert report is not None, proc.stderr
    dropped = report["program"]["calls_dropped"]
    assert report["functions"][0]["count"] + dropped == own["calls"] == 5000
    assert report["program"]["contexts"] == own["contexts"] == 5000
    assert dropped == 0  # on the 2-core machine the stream keeps up (bench/watch_load.py measures how far)


def test_several_programs_at_once_are_each_counted(
    program_python: Path, program_assets: tuple[Path, Path], tmp_path: Path
) -> None:
    """Two processes of one command, each a context per request: each its own session, each count whole."""
    vmfb, irpa = program_assets
    one = f"{program_python} {PROGRAMS / 'per_request.py'} {vmfb} {irpa} 400"
    out = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    proc = subprocess.run(
        [sys.executable, "-m", "gputop.tui", "run", "--json", str(out), "--", "sh", "-c", f"{one} & {one}; wait"],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    owns = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [own["calls"] for own in owns] == [400, 400]
    primary = json.loads(out.read_text())
    assert primary["functions"][0]["count"] == 400 and primary["program"]["contexts"] == 400
    assert primary["program"]["other_processes"] == 1
    state = Path(os.environ["GPUTOP_STATE_DIR"])
    others = [
        json.loads((folder / "report.json").read_text())
        for folder in (state / "sessions").iterdir()
        if (folder / "report.json").exists() and folder != Path(primary["session_dir"])
    ]
    mine = [r for r in others if (r.get("program") or {}).get("pid") in {own["pid"] for own in owns}]
    assert [r["functions"][0]["count"] for r in mine] == [400]
    assert [r["program"]["contexts"] for r in mine] == [400]


def test_output_of_every_call_passes_whole_and_the_record_stays_small(
    program_python: Path, program_assets: tuple[Path, Path], tmp_path: Path
) -> None:
    """The TUI's engine (`gputop serve --owner-pid`) pipes the program's output: program.log holds it byte for
    byte, the Log its newest lines, and samples.jsonl does not grow with the lines."""
    vmfb, irpa = program_assets
    folder = tmp_path / "session"
    owner = subprocess.Popen(["sleep", "300"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "gputop.tui",
                "serve",
                "--quiet",
                "--metrics-port",
                "0",
                "--owner-pid",
                str(owner.pid),
                "--session-dir",
                str(folder),
                "--",
                str(program_python),
                str(PROGRAMS / "chatty.py"),
                str(vmfb),
                str(irpa),
                "3000",
            ],
            capture_output=True,
            text=True,
            timeout=240,
            env=env,
        )
    finally:
        owner.kill()
        owner.wait()
    assert proc.returncode == 0, proc.stderr
    written = (folder / "program.log").read_text()
    lines = written.splitlines()
    assert lines[:-1] == [f"call {i}: done" for i in range(3000)]  # every line, in order, as the program wrote it
    own = json.loads(lines[-1])
    report = json.loads((folder / "report.json").read_text())
    assert report["functions"][0]["count"] == own["calls"] == 3000
    samples = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    assert samples[-1]["events"][-1]["message"].startswith(("stdout: {", "program "))
    assert len(samples) < 20 + own["seconds"]  # one a second at most (5 s in serve) plus the changes
    assert (folder / "samples.jsonl").stat().st_size < 512 * 1024


def test_gputop_killed_leaves_the_program_whole(
    program_python: Path, program_assets: tuple[Path, Path], tmp_path: Path
) -> None:
    """SIGKILL to gputop mid-run: the program finishes with its own output and exit code, says the watch ended."""
    vmfb, irpa = program_assets
    code_file, out_file = tmp_path / "code", tmp_path / "out"
    program = f"{program_python} {PROGRAMS / 'per_request.py'} {vmfb} {irpa} 3000 > {out_file}; echo $? > {code_file}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    gputop = subprocess.Popen(
        [sys.executable, "-m", "gputop.tui", "run", "--session-dir", str(tmp_path / "s"), "--", "sh", "-c", program],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (tmp_path / "s" / "samples.jsonl").exists():
        time.sleep(0.1)
    time.sleep(1.0)  # calls under way
    children = psutil.Process(gputop.pid).children(recursive=True)
    gputop.kill()
    gputop.communicate(timeout=30)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not code_file.exists():
        time.sleep(0.1)
    try:
        assert code_file.read_text().strip() == "0"
        own = json.loads(out_file.read_text().strip().splitlines()[-1])
        assert own["calls"] == own["requests"] == 3000
    finally:
        for child in children:
            if child.is_running():
                child.kill()


@pytest.fixture(scope="module")
def why_slow(program_python: Path, program_assets: tuple[Path, Path]) -> dict[str, tuple[dict[str, Any], Any]]:
    """why_slow.py with each mistake and with none, watched: (its own figures, gputop's report) each."""
    rowsum = _assets(program_assets) / "rowsum.vmfb"
    runs = {}
    for mistake in ("upload", "to_host", "none"):
        proc, report, _ = watch(program_python, "why_slow.py", str(rowsum), "60", "--mistake", mistake)
        assert proc.returncode == 0, proc.stderr
        assert report is not None, proc.stderr
        runs[mistake] = (own_figures(proc), report)
    return runs


def test_the_parts_add_up_to_the_programs_own_call(why_slow: dict[str, tuple[dict[str, Any], Any]]) -> None:
    for mistake, (own, report) in why_slow.items():
        [row] = report["functions"]
        parts = row["parts"]
        assert row["count"] == own["calls"] == 60
        shares = parts["arguments"]["share"] + parts["invoke"]["share"] + parts["results"]["share"]
        assert shares == pytest.approx(1.0, abs=1e-9), mistake
        # the call as the program's own timer saw it: mean against mean (every call's parts sum to the call)
        assert row["mean_ms"] == pytest.approx(own["mean_ms"], rel=0.05), mistake
        assert row["between_p50_ms"] is not None and row["between_p50_ms"] >= 0


def test_the_same_array_uploaded_every_call_is_named_with_its_saving(
    why_slow: dict[str, tuple[dict[str, Any], Any]],
) -> None:
    own, report = why_slow["upload"]
    parts = report["functions"][0]["parts"]
    assert parts["arguments"]["bytes"] == own["argument_bytes"] == ARGUMENT_BYTES
    assert parts["same_arguments"] == pytest.approx(59 / 60)  # every call but the first
    [hint] = [h for h in report["hints"] if h.startswith("arguments:")]
    assert "asdevicearray" in hint and "(16.0 MiB)" in hint
    assert f"uploaded each time: {parts['arguments']['p50_ms']:.3f} ms a call" in hint
    assert f"saves about {parts['arguments']['p50_ms']:.3f} ms a call" in hint
    # after the fix (the argument a device array made once), the arguments part is what the saving said went
    _, fixed = why_slow["none"]
    after = fixed["functions"][0]["parts"]["arguments"]
    assert after["bytes"] == 0 and after["p50_ms"] < parts["arguments"]["p50_ms"] / 10


def test_reads_back_are_counted_with_their_bytes(why_slow: dict[str, tuple[dict[str, Any], Any]]) -> None:
    own, report = why_slow["to_host"]
    to_host = report["functions"][0]["parts"]["to_host"]
    # one a call: the program's last np.asarray reads a result it read already (mapped: nothing moves again)
    assert to_host["count"] == own["calls"] == own["reads"] - 1 == 60
    assert to_host["bytes"] == own["result_bytes"] == 1024 * 4
    _, clean = why_slow["none"]
    assert clean["functions"][0]["parts"]["to_host"]["count"] == 1


def test_a_program_that_makes_no_mistake_gets_no_hint(why_slow: dict[str, tuple[dict[str, Any], Any]]) -> None:
    _, report = why_slow["none"]
    assert report["hints"] == []


def test_a_low_level_call_names_the_parts_it_cannot_see(
    program_python: Path, program_assets: tuple[Path, Path]
) -> None:
    vmfb, irpa = program_assets
    proc, report, _ = watch(program_python, "load_and_call.py", str(vmfb), str(irpa), "50")
    assert proc.returncode == 0, proc.stderr
    parts = report["functions"][0]["parts"]
    assert parts["invoke"]["share"] == 1.0 and parts["invoke"]["count"] == 50
    for hidden in ("arguments", "results"):
        assert parts[hidden]["seen"] is False and parts[hidden]["p50_ms"] is None
        assert "VmContext.invoke" in parts[hidden]["reason"]


def test_a_watched_program_has_a_trace(program_python: Path, program_assets: tuple[Path, Path], tmp_path: Path) -> None:
    """`gputop report SESSION --trace`: each call a span with its parts inside it, reads back, sampled stacks."""
    rowsum = _assets(program_assets) / "rowsum.vmfb"
    proc, report, _ = watch(
        program_python, "why_slow.py", str(rowsum), "400", "--mistake", "to_host", "--sleep-ms", "5"
    )
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "trace.json"
    traced = subprocess.run(
        [sys.executable, "-m", "gputop.tui", "report", report["session_dir"], "--trace", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert traced.returncode == 0, traced.stderr
    events = json.loads(out.read_text())["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    calls = [e for e in spans if e["name"] == "rowsum.main"]
    assert len(calls) == 400
    for call in calls[:50]:
        inside = [e for e in spans if e["tid"] == call["tid"] and e["name"] in ("arguments", "invoke", "results")]
        mine = [e for e in inside if call["ts"] <= e["ts"] <= call["ts"] + call["dur"] + 1e-3]
        assert sum(e["dur"] for e in mine) == pytest.approx(call["dur"], abs=1e-2)
    assert len([e for e in spans if e["name"] == "to_host"]) == 400  # the last read of a mapped result moves nothing
    stacks = report["program"]["stacks"]
    if stacks["reason"] is None:  # py-spy read the program: its rounds are a track of the trace
        assert stacks["samples"] > 0 and stacks["top"][0]["file"].endswith("why_slow.py")
        assert any("why_slow.py" in e["name"] for e in spans)
    else:
        pytest.fail(f"py-spy did not sample the program: {stacks['reason']}")


def test_a_trace_of_a_run_gputop_made_is_refused_in_one_line(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "gputop.tui", "run", "demo:mlp", "-n", "3", "--session-dir", str(tmp_path / "s")],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "gputop.tui", "report", str(tmp_path / "s"), "--trace", str(tmp_path / "t.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("gputop: error: s: --trace is a watched program's timeline")
    assert not (tmp_path / "t.json").exists()


def test_the_programs_traceback_is_its_own(program_python: Path, program_assets: tuple[Path, Path]) -> None:
    """A crash inside an IREE call: the traceback watched is the one the program prints without gputop (the
    watcher's wrappers sit between its call and the runtime, and are left out)."""
    rowsum = _assets(program_assets) / "rowsum.vmfb"
    args = [str(PROGRAMS / "why_slow.py"), str(rowsum), "3", "--shape", "8x8"]  # the module wants 1024x4096
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    plain = subprocess.run([str(program_python), *args], capture_output=True, text=True, timeout=60, env=env)
    proc, report, _ = watch(program_python, "why_slow.py", *args[1:])
    assert plain.returncode == proc.returncode == 1

    def traceback_of(stderr: str) -> list[str]:
        lines = stderr.splitlines()
        start = lines.index("Traceback (most recent call last):")
        return [line for line in lines[start:] if not line.startswith("program ")][:12]

    assert "gputop_agent" not in proc.stderr
    assert traceback_of(proc.stderr)[:9] == traceback_of(plain.stderr)[:9]
    assert report is not None and report["program"]["ended"] == "raised"


def test_held_results_are_growth_from_the_first_call(program_python: Path, program_assets: tuple[Path, Path]) -> None:
    """A short program that keeps all 300 results: growth stated exactly (the watcher counts what is held),
    without waiting for the sampled detector's span of calls."""
    vmfb, irpa = program_assets
    proc, report, _ = watch(program_python, "hold_results.py", str(vmfb), str(irpa), "300")
    assert proc.returncode == 0, proc.stderr
    own = own_figures(proc)
    assert report is not None and own["held"] == 300
    growth = report["memory"]["growth"]
    assert growth == {"bytes_per_call": own["held_bytes"] // 300, "since_call": 1, "source": "held results"}
    grows = [h for h in report["hints"] if h.startswith("memory grows")]
    assert grows == [
        "memory grows 64.0 KiB per call since call 1: the program keeps the arrays its calls return; "
        "drop references to old results (copy out what you keep with to_host()) or reuse output "
        "buffers"
    ]


def test_a_watched_sessions_report_reads_as_its_run_printed_it(
    why_slow: dict[str, tuple[dict[str, Any], Any]],
) -> None:
    """`gputop report ID` of a watched session: how the program ended, its functions with their parts, its
    stacks and hints, the same text `gputop run -- CMD` printed at its end (issue 57 item 13)."""
    _, report = why_slow["upload"]
    proc = subprocess.run(
        [sys.executable, "-m", "gputop.tui", "report", report["session_dir"]],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert text.startswith("program   ") and "exited 0" in text.splitlines()[0]
    assert "rowsum.main: arguments " in text and " · invoke " in text
    assert "  ! arguments: rowsum.main is given the same numpy arguments on every call" in text
    from gputop.tui.text import program_report_text

    assert text.strip() == program_report_text(report).strip()
