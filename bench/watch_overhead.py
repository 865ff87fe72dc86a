"""What watching costs a user's program: its own calls' p50 and p95, with and without `gputop run -- CMD`.

The program is tests/programs/load_and_call.py by default (or `--program`: why_slow.py,
per_request.py, chatty.py, fast_calls.py, with `--args`), a real user's program that
times each of its calls with perf_counter around the call and prints its own
p50 and p95 (the figures held here are the program's, not gputop's; `--figure seconds`
holds its whole loop's time instead, for a program whose cost is not in its calls). Each
round runs it twice, unwatched and watched, in alternating order, in the same
environment (its own Python without gputop, as `tests/program_env.py` makes),
so drift on the machine falls on both sides. The ratio is watched / plain per
round; the summary is the median of the rounds' ratios.

Usage: python bench/watch_overhead.py --device local-task --calls 2000 --rounds 5 [--json OUT]
       [--vmfb M.vmfb --irpa P.irpa]  (default: built here with tests/programs/make_assets.py)
       [--program per_request.py --args "{vmfb} {irpa} 1000" --figure seconds] [--piped]
`--piped`: watched as the TUI's engine watches (`gputop serve --owner-pid`): the program's output through
gputop's pipes into the Log and program.log, not straight to the terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from program_env import INJECT, PROGRAMS, make_program_env  # noqa: E402

from gputop.core.program.agent_link import AgentListener  # noqa: E402

__all__: list[str] = []


def own_figures(stdout: str) -> dict[str, Any]:
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise SystemExit(f"the program printed no figures: {stdout[-400:]}")
    return json.loads(lines[-1])


def run_once(
    python: Path,
    args: list[str],
    watched: bool,
    state: Path,
    program_path: str | None = None,
    gputop_args: tuple[str, ...] = (),
    agent_only: bool = False,
    inject: Path = INJECT,
    program_name: str = "load_and_call.py",
    piped: bool = False,
) -> dict[str, Any]:
    program = [str(python), str(PROGRAMS / program_name), *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    if program_path is not None:
        # The program's own path (a GPU machine's runtime folder), the same on both sides; watched, gputop's
        # watcher folder stays first on it, as gputop put it there.
        env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
        keep = "${PYTHONPATH%%:*}:" if watched else ""
        program = ["sh", "-c", f"PYTHONPATH={keep}{program_path} exec {shlex.join([*program[:1], '-s', *program[1:]])}"]
    env["GPUTOP_STATE_DIR"] = str(state)
    gputop = [sys.executable, "-m", "gputop.tui", "run", "--quiet", *gputop_args, "--"]
    owner = None
    if piped:  # the TUI's engine: its owner's pid, the program's output piped into the Log and program.log
        owner = subprocess.Popen(["sleep", "3600"])
        gputop = [sys.executable, "-m", "gputop.tui", "serve", "--quiet", "--metrics-port", "0"]
        gputop += ["--owner-pid", str(owner.pid), *gputop_args, "--"]
    command = [*gputop, *program] if watched else program
    sink = None
    if watched and agent_only:
        # The watcher alone: its stream read and dropped here, no engine (no NVML, no snapshots, no record).
        # gputop's own end of the watchers' socket, each stream read and its events dropped.
        sink = AgentListener(lambda agent: agent.start())
        sink.start()
        command = program
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(inject), env.get("PYTHONPATH", "")) if p)
        env["GPUTOP_WATCH_SOCKET"] = str(sink.path)
    started = time.perf_counter()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    finally:
        if sink is not None:
            sink.close()
        if owner is not None:
            owner.kill()
            owner.wait()
    if piped and watched:  # its output went to the session's program.log: the figures are its last line there
        logs = sorted(state.glob("sessions/*/program.log"), key=lambda p: p.stat().st_mtime)
        proc = subprocess.CompletedProcess(proc.args, proc.returncode, logs[-1].read_text() if logs else "", "")
    if proc.returncode != 0:
        raise SystemExit(f"{'watched' if watched else 'plain'} run failed ({proc.returncode}): {proc.stderr[-800:]}")
    figures = own_figures(proc.stdout)
    figures["process_s"] = time.perf_counter() - started
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="local-task")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--style", choices=("attr", "from"), default="attr")
    parser.add_argument("--vmfb")
    parser.add_argument("--irpa")
    parser.add_argument("--python", help="the program's python (default: a venv without gputop, made here)")
    parser.add_argument("--program-path", help="the program's PYTHONPATH (its own runtime folder, on a GPU machine)")
    parser.add_argument("--gputop-arg", action="append", default=[], help="an option for gputop run (repeatable)")
    parser.add_argument(
        "--agent-only",
        action="store_true",
        help="watched = the watcher alone, its stream read and dropped by gputop's listener here (no engine)",
    )
    parser.add_argument(
        "--inject", type=Path, default=INJECT, help="with --agent-only: the watcher's folder (another version of it)"
    )
    parser.add_argument("--program", default="load_and_call.py", help="a program of tests/programs/")
    parser.add_argument(
        "--args", help="its arguments ({vmfb}, {irpa} and {assets}, the folder make_assets.py wrote, are filled in)"
    )
    parser.add_argument(
        "--figure", action="append", help="the program's figures held (default p50_ms and p95_ms; e.g. seconds)"
    )
    parser.add_argument("--piped", action="store_true", help="watched as the TUI's engine watches (output piped)")
    parser.add_argument("--json")
    args = parser.parse_args()
    figures = args.figure or ["p50_ms", "p95_ms"]
    work = Path(tempfile.mkdtemp(prefix="watch-overhead-"))
    python = Path(args.python) if args.python else make_program_env(work / "venv")
    if args.vmfb and args.irpa:
        vmfb, irpa = args.vmfb, args.irpa
    else:
        subprocess.run([sys.executable, str(PROGRAMS / "make_assets.py"), str(work)], check=True, capture_output=True)
        vmfb, irpa = str(work / "model.vmfb"), str(work / "model.irpa")
    program_args = [vmfb, irpa, str(args.calls), "--style", args.style, "--device", args.device]
    if args.args is not None:
        filled = args.args.format(vmfb=vmfb, irpa=irpa, assets=str(Path(vmfb).parent))
        program_args = shlex.split(filled)
    rounds = []
    for i in range(args.rounds):
        order = (False, True) if i % 2 == 0 else (True, False)
        got = {
            watched: run_once(
                python,
                program_args,
                watched,
                work / "state",
                args.program_path,
                gputop_args=tuple(args.gputop_arg),
                agent_only=args.agent_only,
                inject=args.inject,
                program_name=args.program,
                piped=args.piped,
            )
            for watched in order
        }
        plain, watched = got[False], got[True]
        row: dict[str, Any] = {"round": i, "order": "plain first" if order[0] is False else "watched first"}
        said = []
        for figure in figures:
            name = figure.removesuffix("_ms")
            row[f"plain_{figure}"], row[f"watched_{figure}"] = plain[figure], watched[figure]
            row[f"{name}_ratio"] = watched[figure] / plain[figure]
            said.append(f"{name} {plain[figure]:.4f} -> {watched[figure]:.4f} ({row[f'{name}_ratio']:.3f}x)")
        rounds.append(row)
        print(f"round {i} ({row['order']}): " + ", ".join(said), flush=True)
    summary: dict[str, Any] = {
        "device": args.device,
        "program": args.program,
        "args": program_args if args.args is not None else None,
        "piped": args.piped,
        "calls": args.calls,
        "rounds": args.rounds,
        "style": args.style,
        "gputop_args": args.gputop_arg,
        "agent_only": args.agent_only,
        "date": time.strftime("%Y-%m-%d"),
        "host": os.uname().nodename,
        "rows": rounds,
    }
    medians = []
    for figure in figures:
        name = figure.removesuffix("_ms")
        ratios = [r[f"{name}_ratio"] for r in rounds]
        summary[f"{name}_ratio_median"] = statistics.median(ratios)
        summary[f"{name}_ratio_range"] = [min(ratios), max(ratios)]
        medians.append(f"{name} {summary[f'{name}_ratio_median']:.3f}x ({min(ratios):.3f}-{max(ratios):.3f})")
    print(f"median over {args.rounds} rounds: {', '.join(medians)} (watched / plain, the program's own figures)")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
