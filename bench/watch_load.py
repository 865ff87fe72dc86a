"""A watched program under load: how many calls and contexts a second the watcher keeps up with, and the record.

Runs the test programs (tests/programs/) from an environment without gputop,
watched by `gputop run -- CMD` (or `gputop serve --owner-pid`, the TUI's engine,
for the chatty program whose output is piped), and holds gputop's counts against
the program's own (its last JSON line): calls and contexts counted, calls dropped,
the rate the program reached watched, and the session folder's bytes, per minute
of the program's run. Cases:
- fast: `fast_calls.py` (a 4-float add through a FunctionInvoker, ~5 us a call plain);
- contexts: `fast_calls.py --contexts` (a context per call, as a handler per request);
- chatty: `chatty.py` (a line printed per call), piped as under the TUI;
- per_request: `per_request.py` (the MLP, a context per request).
The rates are the program's own, watched (what the watcher sustained without dropping).

Usage: python bench/watch_load.py [--fast 1000000] [--contexts 20000] [--chatty 20000] [--json OUT]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from program_env import PROGRAMS, make_program_env  # noqa: E402

__all__: list[str] = []


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def watched(python: Path, program: list[str], folder: Path, piped: bool) -> dict[str, Any]:
    """One watched run: the program's own figures, gputop's report and the record's size."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    command = [str(python), *program]
    owner = None
    if piped:
        owner = subprocess.Popen(["sleep", "3600"])
        gputop = [sys.executable, "-m", "gputop.tui", "serve", "--quiet", "--metrics-port", "0"]
        gputop += ["--owner-pid", str(owner.pid), "--session-dir", str(folder), "--"]
    else:
        gputop = [sys.executable, "-m", "gputop.tui", "run", "--quiet", "--session-dir", str(folder), "--"]
    started = time.perf_counter()
    try:
        engine = subprocess.Popen(
            [*gputop, *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        exited = _program_exit(engine.pid, program[0])  # the program's process gone (its watcher's last flush in)
        stdout, stderr = engine.communicate()
        ended = time.time()
        proc = subprocess.CompletedProcess(engine.args, engine.returncode, stdout, stderr)
    finally:
        if owner is not None:
            owner.kill()
            owner.wait()
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"watched run failed ({proc.returncode}): {proc.stderr[-800:]}")
    text = (folder / "program.log").read_text() if piped else proc.stdout
    own = json.loads([line for line in text.splitlines() if line.startswith("{")][-1])
    report = json.loads((folder / "report.json").read_text())
    size = folder_bytes(folder)
    return {
        "own": own,
        "counted": report["functions"][0]["count"] if report.get("functions") else 0,
        "contexts": report["program"]["contexts"],
        "dropped": report["program"]["calls_dropped"],
        "hints": report["hints"],
        "record_bytes": size,
        "record_files": {p.name: p.stat().st_size for p in folder.iterdir() if p.is_file()},
        "program_s": own["seconds"],
        "gputop_wall_s": wall,
        "program_exit_after_last_line_s": exited - own["ended_at"],  # its interpreter's end, the watcher's flush in
        "gputop_after_program_s": ended - exited,  # the engine's end after the program's process
        "samples_bytes_per_minute": (folder / "samples.jsonl").stat().st_size / max(own["seconds"], 1e-9) * 60,
    }


def _program_exit(gputop_pid: int, script: str) -> float:
    """Wall time (time.time) when the program's process ended, found among gputop's children by its script."""
    import psutil

    engine = psutil.Process(gputop_pid)
    child = None
    while child is None and engine.is_running():
        with contextlib.suppress(psutil.Error):
            child = next((c for c in engine.children(recursive=True) if script in " ".join(c.cmdline())), None)
        time.sleep(0.005)
    while child is not None:
        with contextlib.suppress(psutil.Error):
            if child.is_running() and child.status() != psutil.STATUS_ZOMBIE:
                time.sleep(0.005)
                continue
        break
    return time.time()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", type=int, default=1_000_000, help="calls of the fast case")
    parser.add_argument("--contexts", type=int, default=20_000, help="calls (a context each) of the contexts case")
    parser.add_argument("--chatty", type=int, default=20_000, help="calls (a line each) of the chatty case")
    parser.add_argument("--requests", type=int, default=2_000, help="requests of the per_request case")
    parser.add_argument("--json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="watch-load-"))
    python = make_program_env(work / "venv")
    subprocess.run([sys.executable, str(PROGRAMS / "make_assets.py"), str(work)], check=True, capture_output=True)
    vmfb, irpa, tiny = str(work / "model.vmfb"), str(work / "model.irpa"), str(work / "tiny.vmfb")
    cases = {
        "fast": ([str(PROGRAMS / "fast_calls.py"), tiny, str(args.fast)], False),
        "contexts": ([str(PROGRAMS / "fast_calls.py"), tiny, str(args.contexts), "--contexts"], False),
        "chatty": ([str(PROGRAMS / "chatty.py"), vmfb, irpa, str(args.chatty)], True),
        "per_request": ([str(PROGRAMS / "per_request.py"), vmfb, irpa, str(args.requests)], False),
    }
    results = {}
    for name, (program, piped) in cases.items():
        got = watched(python, program, work / f"session-{name}", piped)
        own = got["own"]
        rate = own["calls"] / own["seconds"]
        print(
            f"{name}: {own['calls']} calls ({rate:,.0f}/s, the program's own, watched), counted {got['counted']}, "
            f"contexts {got['contexts']}, dropped {got['dropped']}; record {got['record_bytes'] / 1e3:,.0f} kB "
            f"for {own['seconds']:.1f} s (samples.jsonl {got['samples_bytes_per_minute'] / 1e3:,.0f} kB/min; "
            f"the rest: {got['record_files']}); the program exited "
            f"{got['program_exit_after_last_line_s']:.2f} s after its last line, gputop "
            f"{got['gputop_after_program_s']:.2f} s after the program",
            flush=True,
        )
        results[name] = got
    summary = {"date": time.strftime("%Y-%m-%d"), "host": os.uname().nodename, "cpus": os.cpu_count(), **results}
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
