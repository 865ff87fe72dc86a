"""What watching costs a user's program: its own calls' p50 and p95, with and without `gputop run -- CMD`.

The program is tests/programs/load_and_call.py, a real user's program that
times each of its calls with perf_counter around the call and prints its own
p50 and p95 (the figures held here are the program's, not gputop's). Each
round runs it twice, unwatched and watched, in alternating order, in the same
environment (its own Python without gputop, as `tests/program_env.py` makes),
so drift on the machine falls on both sides. The ratio is watched / plain per
round; the summary is the median of the rounds' ratios.

Usage: python bench/watch_overhead.py --device local-task --calls 2000 --rounds 5 [--json OUT]
       [--vmfb M.vmfb --irpa P.irpa]  (default: built here with tests/programs/make_assets.py)
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
) -> dict[str, Any]:
    program = [str(python), str(PROGRAMS / "load_and_call.py"), *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    if program_path is not None:
        # The program's own path (a GPU machine's runtime folder), the same on both sides; watched, gputop's
        # watcher folder stays first on it, as gputop put it there.
        env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
        keep = "${PYTHONPATH%%:*}:" if watched else ""
        program = ["sh", "-c", f"PYTHONPATH={keep}{program_path} exec {shlex.join([*program[:1], '-s', *program[1:]])}"]
    env["GPUTOP_STATE_DIR"] = str(state)
    gputop = [sys.executable, "-m", "gputop.tui", "run", "--quiet", *gputop_args, "--"]
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
    parser.add_argument("--json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="watch-overhead-"))
    python = Path(args.python) if args.python else make_program_env(work / "venv")
    if args.vmfb and args.irpa:
        vmfb, irpa = args.vmfb, args.irpa
    else:
        subprocess.run([sys.executable, str(PROGRAMS / "make_assets.py"), str(work)], check=True, capture_output=True)
        vmfb, irpa = str(work / "model.vmfb"), str(work / "model.irpa")
    program_args = [vmfb, irpa, str(args.calls), "--style", args.style, "--device", args.device]
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
            )
            for watched in order
        }
        plain, watched = got[False], got[True]
        row = {
            "round": i,
            "order": "plain first" if order[0] is False else "watched first",
            "plain_p50_ms": plain["p50_ms"],
            "watched_p50_ms": watched["p50_ms"],
            "plain_p95_ms": plain["p95_ms"],
            "watched_p95_ms": watched["p95_ms"],
            "p50_ratio": watched["p50_ms"] / plain["p50_ms"],
            "p95_ratio": watched["p95_ms"] / plain["p95_ms"],
        }
        rounds.append(row)
        print(
            f"round {i} ({row['order']}): p50 {plain['p50_ms']:.4f} -> {watched['p50_ms']:.4f} ms "
            f"({row['p50_ratio']:.3f}x), p95 {plain['p95_ms']:.4f} -> {watched['p95_ms']:.4f} ms "
            f"({row['p95_ratio']:.3f}x)",
            flush=True,
        )
    summary = {
        "device": args.device,
        "calls": args.calls,
        "rounds": args.rounds,
        "style": args.style,
        "gputop_args": args.gputop_arg,
        "agent_only": args.agent_only,
        "p50_ratio_median": statistics.median(r["p50_ratio"] for r in rounds),
        "p95_ratio_median": statistics.median(r["p95_ratio"] for r in rounds),
        "date": time.strftime("%Y-%m-%d"),
        "host": os.uname().nodename,
        "rows": rounds,
    }
    print(
        f"median over {args.rounds} rounds: p50 {summary['p50_ratio_median']:.3f}x, "
        f"p95 {summary['p95_ratio_median']:.3f}x (watched / plain, the program's own timings)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
