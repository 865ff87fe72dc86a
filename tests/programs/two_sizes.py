"""One function called at two sizes, in turns: calls that fall into two groups for a reason gputop cannot see.

Not gputop code: iree.runtime, numpy and the standard library. `rowsum.main(x: ?xCOLS f32)` (a module whose
rows are dynamic, compiled by the test) is called on a small and a large array taking turns, for as many
seconds as asked, so every other call is the slow one: the clock (none on a CPU), the host's load and the
GPU's neighbours are the same for both groups, and only the size, which gputop does not look at, parts them.
Prints one JSON line from its own timers: {"calls": N, "small_p50_ms": .., "large_p50_ms": ..}.

Usage: python two_sizes.py ROWSUM.vmfb SECONDS [--device local-sync] [--rows SMALL LARGE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import iree.runtime as rt
import numpy as np

COLS = 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vmfb")
    parser.add_argument("seconds", type=float)
    parser.add_argument("--device", default="local-sync")
    parser.add_argument("--rows", type=int, nargs=2, default=(16, 4096), metavar=("SMALL", "LARGE"))
    args = parser.parse_args()
    config = rt.Config(device=rt.get_device(args.device))
    context = rt.SystemContext(config=config)
    context.add_vm_module(rt.VmModule.mmap(config.vm_instance, args.vmfb))
    function = context.modules.rowsum["main"]
    arrays = [rt.asdevicearray(config.device, np.ones((rows, COLS), np.float32)) for rows in args.rows]
    times: list[list[float]] = [[], []]
    deadline = time.perf_counter() + args.seconds
    turn = 0
    while time.perf_counter() < deadline:
        began = time.perf_counter()
        function(arrays[turn])
        times[turn].append((time.perf_counter() - began) * 1e3)
        turn = 1 - turn
    print(
        json.dumps(
            {
                "calls": len(times[0]) + len(times[1]),
                "small_p50_ms": statistics.median(times[0]),
                "large_p50_ms": statistics.median(times[1]),
            }
        )
    )


if __name__ == "__main__":
    main()
