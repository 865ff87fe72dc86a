"""A/A and A/B experiments for `gputop compare`: how often two runs of the same module are called different.

Runs `gputop run demo:mlp` (local-task by default) 2N times in separate processes,
compares run 2i with run 2i+1 with `gputop compare --fail-above`, and prints each
pair's p50 change, interval, mark, the kernels marked as changed and the gate's exit
code, then the false-alarm rate. With `--b-flag FLAG` the second run of each pair is
compiled with FLAG, or with `--b-target-flags FLAGS` in place of the device's target flags
(an A/B experiment: every pair should then be called slower).
The figures it printed are in BENCHMARKS.md, "Comparing runs".
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["main"]


def run_once(out: Path, args: argparse.Namespace, flag: str | None, target_flags: str | None = None) -> None:
    command = [sys.executable, "-m", "gputop.tui", "run", args.target, "-d", args.device, "-n", str(args.calls),
               "--profile", "--profile-calls", str(args.profile_calls), "-q", "--json", str(out)]  # fmt: skip
    if flag:
        command.append(f"--compile-flag={flag}")
    if target_flags:
        command += ["--target-flags", target_flags]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--target", default="demo:mlp")
    parser.add_argument("--device", default="local-task")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--profile-calls", type=int, default=50)
    parser.add_argument("--fail-above", default="5%")
    parser.add_argument("--b-flag", help="compile B with this extra flag (an A/B experiment)")
    parser.add_argument("--b-target-flags", help="compile B with these target flags instead of the device's")
    parser.add_argument("--keep", type=Path, help="keep the reports in this folder (a{i}.json, b{i}.json)")
    args = parser.parse_args()
    alarms = gate_failures = kernel_alarms = 0
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or Path(scratch)
        tmp.mkdir(parents=True, exist_ok=True)
        for pair in range(args.pairs):
            a, b, out = Path(tmp, f"a{pair}.json"), Path(tmp, f"b{pair}.json"), Path(tmp, f"c{pair}.json")
            run_once(a, args, None)
            run_once(b, args, args.b_flag, args.b_target_flags)
            gate = subprocess.run(
                [sys.executable, "-m", "gputop.tui", "compare", str(a), str(b), "--json", str(out),
                 "--fail-above", args.fail_above],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=os.environ,
            )  # fmt: skip
            data = json.loads(out.read_text())
            p50 = next(c for c in data["calls"] if c["stat"] == "p50")
            moved = [f"{k['name']} {k['change']['mark']}" for k in data["kernels"] if k["change"] and
                     k["change"]["significant"]]  # fmt: skip
            alarms += p50["significant"]
            kernel_alarms += bool(moved)
            gate_failures += gate.returncode == 7
            interval = f"[{p50['low'] * 100:+.1f}%, {p50['high'] * 100:+.1f}%] p={p50['p']:.2g}"
            kernels = ", ".join(moved) or "~"
            line = f"pair {pair:2d}: p50 {p50['change'] * 100:+6.1f}% {interval} {p50['mark']:>7}"
            print(f"{line}  gate rc={gate.returncode}  kernels: {kernels}", flush=True)
    n = args.pairs
    print(
        f"calls changed in {alarms}/{n} pairs, some kernel changed in {kernel_alarms}/{n}, "
        f"gate failed {gate_failures}/{n}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
