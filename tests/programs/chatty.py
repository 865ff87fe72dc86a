"""A program that prints a line for every call: its output must reach the terminal whole, at its own speed.

Not gputop code: iree.runtime, numpy and the standard library. Loads the module
once (the FunctionInvoker way) and calls it N times, printing `call I: SUM` after
each; the last line is JSON from its own timers:
{"calls": N, "p50_ms": .., "seconds": ..}.

Usage: python chatty.py MODEL.vmfb PARAMS.irpa N [--device local-task]
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from load_and_call import load, parse


def main() -> None:
    args = parse(__doc__.splitlines()[0])
    loaded = load(args.vmfb, args.irpa, "from", args.device)
    times = []
    started = time.perf_counter()
    write = sys.stdout.write
    for i in range(args.n):
        t0 = time.perf_counter()
        loaded.call()
        times.append(time.perf_counter() - t0)
        write(f"call {i}: done\n")
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "calls": len(times),
                "p50_ms": statistics.median(times) * 1e3,
                "p95_ms": sorted(times)[int(len(times) * 0.95)] * 1e3,
                "seconds": seconds,
                "ended_at": time.time(),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
