"""What the PM sampling strip costs the calls it watches: the same calls with it on and off, alternating.

Issue 48 item 3: the strip must not disturb the run, within 2% at p50 and p95 on an H100/H200. Each round runs
one engine session (as `gputop run` does, in this process) with PM sampling on and one with it off, the order
swapped every round so that neither side always runs second (a GPU warmed by the first, a page cache filled).
The ratio on/off of the rounds' medians is what BENCHMARKS.md reports; the strip's own time (its thread's decode
and evaluate, ms a second) and how many samples and calls it aligned come from the runs' own reports.

Usage (GPU machine): python bench/pm_overhead.py --vmfb M.vmfb --function F [--input @x.npy]
           [--iterations 3000] [--rounds 8] [--interval-ms 10] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from gputop.core.run.run_host import tune_interpreter_for_calls
from gputop.core.session import RunConfig, Session
from gputop.core.store.report import pm_sampling_json


def one_run(config: RunConfig) -> dict[str, Any]:
    session = Session(config)
    session.start()
    session.wait()
    if session.error:
        raise SystemExit(f"gputop run failed: {session.error}")
    snap = session.snapshot
    pm = pm_sampling_json(snap.pm_sampling)
    return {
        "count": snap.calls.count,
        "p50_ms": snap.calls.p50_ms,
        "p95_ms": snap.calls.p95_ms,
        "pm_samples": pm.get("samples"),
        "pm_calls_aligned": pm.get("calls_aligned"),
        "pm_decode_ms_per_s": pm.get("decode_ms_per_s"),
        "pm_reason": pm.get("reason"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vmfb", required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--function")
    parser.add_argument("--input", action="append", default=[])
    parser.add_argument("--iterations", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--interval-ms", type=float, default=RunConfig().pm_interval_ms)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    tune_interpreter_for_calls()  # as `gputop run` does: this process makes the calls
    runs: dict[str, list[dict[str, Any]]] = {"on": [], "off": []}
    for index in range(args.rounds):
        for mode in ("on", "off") if index % 2 == 0 else ("off", "on"):
            config = RunConfig(
                target=args.vmfb,
                device=args.device,
                function=args.function,
                inputs=tuple(args.input),
                iterations=args.iterations,
                pm_sampling=mode == "on",
                pm_interval_ms=args.interval_ms,
            )
            result = one_run(config)
            runs[mode].append(result)
            print(
                f"round {index + 1} {mode:3}: p50 {result['p50_ms']:.4f} ms  p95 {result['p95_ms']:.4f} ms"
                + (
                    f"  ({result['pm_samples']} samples, {result['pm_decode_ms_per_s']} ms/s decoding)"
                    if mode == "on"
                    else ""
                ),
                flush=True,
            )
    summary: dict[str, Any] = {}
    for stat in ("p50_ms", "p95_ms"):
        on = statistics.median(r[stat] for r in runs["on"])
        off = statistics.median(r[stat] for r in runs["off"])
        per_round = [a[stat] / b[stat] for a, b in zip(runs["on"], runs["off"], strict=True)]
        summary[stat] = {"on": on, "off": off, "ratio": on / off, "per_round": per_round}
        print(
            f"{stat}: on {on:.4f} off {off:.4f} ratio {on / off:.4f} (rounds {min(per_round):.3f}-{max(per_round):.3f})"
        )
    out = {"args": {k: str(v) for k, v in vars(args).items()}, "runs": runs, "summary": summary}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
