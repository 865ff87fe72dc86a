"""Steady call time under `gputop run` vs `iree-benchmark-module`, same module, same run.

gputop times each call after the device has signalled completion (sync ABI)
and samples memory in the background; this measures what that costs against
IREE's own benchmark tool on the same `.vmfb`, function, inputs and device,
measured side by side in one process run. It prints a table and writes JSON.

Usage: python bench/run_overhead.py --vmfb M.vmfb --device cuda --function mlp
           --input @in0.npy ... [--iterations 100] [--json out.json]
       python bench/run_overhead.py --demo mlp --device local-task
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from gputop.core.module.device_discovery import resolve_device
from gputop.core.profiling.ireeprof.tools import benchmark_call_ms, device_uri
from gputop.core.run.run_host import tune_interpreter_for_calls
from gputop.core.session import RunConfig, Session


def benchmark_tool_p50(vmfb: str, device: str, function: str, inputs: list[str], iterations: int) -> dict[str, Any]:
    """iree-benchmark-module with one call per repetition: per-call times, p50."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bm.json"
        command = [
            sys.executable, "-m", "iree._runtime.scripts.iree_benchmark_module.__main__",
            f"--module={vmfb}", f"--device={device_uri(resolve_device(device))}", f"--function={function}",
            *[f"--input={i}" for i in inputs],
            "--benchmark_min_time=1x", f"--benchmark_repetitions={iterations}",
            f"--benchmark_out={out}", "--benchmark_out_format=json",
        ]  # fmt: skip
        subprocess.run(command, check=True, capture_output=True, text=True)
        times = benchmark_call_ms(out)
    # The percentile the engine's own CallStats uses (numpy's, interpolated), so the two p95s compare.
    p95 = float(np.percentile(times, 95))
    return {"count": len(times), "p50_ms": statistics.median(times), "p95_ms": p95, "min_ms": min(times)}


def gputop_p50(config: RunConfig) -> dict[str, Any]:
    session = Session(config)
    session.start()
    session.wait()
    if session.error:
        raise SystemExit(f"gputop run failed: {session.error}")
    calls = session.snapshot.calls
    compiled = session.outcome.compiled
    return {
        "count": calls.count,
        "p50_ms": calls.p50_ms,
        "p95_ms": calls.p95_ms,
        "min_ms": calls.min_ms,
        "vmfb": str(compiled.vmfb_path) if compiled else config.target,
        "function": session.snapshot.function,
        "check": session.outcome.check.passed if session.outcome.check else None,
        "inputs": session.outcome.inputs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vmfb")
    parser.add_argument("--demo", default="mlp")
    parser.add_argument("--device", default="local-task")
    parser.add_argument("--function")
    parser.add_argument("--input", action="append", default=[])
    parser.add_argument("--check", action="append", default=[], type=Path)
    parser.add_argument("--iterations", type=int, default=100, help="calls per round")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds of each tool")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--python-default-switch-interval",
        action="store_true",
        help="keep Python's 5 ms switch interval (gputop's engine processes use 0.2 ms): the before of issue 27",
    )
    args = parser.parse_args()
    if not args.python_default_switch_interval:
        tune_interpreter_for_calls()  # as `gputop run` does: this process makes the calls
    target = args.vmfb or f"demo:{args.demo}"
    config = RunConfig(
        target=target, device=args.device, iterations=args.iterations, function=args.function,
        inputs=tuple(args.input), checks=tuple(args.check),
    )  # fmt: skip
    # Alternate the two tools in rounds so drift on a shared machine hits both alike.
    rounds_ours, rounds_tool = [], []
    scratch = tempfile.TemporaryDirectory()
    inputs = list(args.input)
    for _ in range(args.rounds):
        ours = gputop_p50(config)
        if not inputs:
            # Give the tool the very inputs gputop made (seeded random), as .npy files.
            for index, array in enumerate(ours["inputs"]):
                path = Path(scratch.name) / f"in{index}.npy"
                np.save(path, array)
                inputs.append(f"@{path}")
        ours.pop("inputs")
        rounds_ours.append(ours)
        fn = args.function or ours["function"]
        rounds_tool.append(benchmark_tool_p50(ours["vmfb"], args.device, fn, inputs, args.iterations))
    scratch.cleanup()
    ours = {
        "count": sum(r["count"] for r in rounds_ours),
        "p50_ms": statistics.median(r["p50_ms"] for r in rounds_ours),
        "p95_ms": statistics.median(r["p95_ms"] for r in rounds_ours),
        "min_ms": min(r["min_ms"] for r in rounds_ours),
        "round_p50_ms": [r["p50_ms"] for r in rounds_ours],
        "check": all(r["check"] is not False for r in rounds_ours),
    }
    tool = {
        "count": sum(r["count"] for r in rounds_tool),
        "p50_ms": statistics.median(r["p50_ms"] for r in rounds_tool),
        "p95_ms": statistics.median(r["p95_ms"] for r in rounds_tool),
        "min_ms": min(r["min_ms"] for r in rounds_tool),
        "round_p50_ms": [r["p50_ms"] for r in rounds_tool],
    }
    ratio = ours["p50_ms"] / tool["p50_ms"]
    ratio_p95 = ours["p95_ms"] / tool["p95_ms"]
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "device": args.device,
        "target": target,
        "iterations": args.iterations,
        "rounds": args.rounds,
        "gputop": ours,
        "iree_benchmark_module": tool,
        "ratio_p50": ratio,
        "ratio_p95": ratio_p95,
    }
    print(f"{'':24s}{'calls':>8s}{'p50 ms':>12s}{'p95 ms':>12s}{'min ms':>12s}")
    for name, row in (("gputop run", ours), ("iree-benchmark-module", tool)):
        print(f"{name:24s}{row['count']:>8d}{row['p50_ms']:>12.3f}{row['p95_ms']:>12.3f}{row['min_ms']:>12.3f}")
    print(f"median over {args.rounds} alternating rounds, gputop / tool: p50 {ratio:.3f}, p95 {ratio_p95:.3f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
