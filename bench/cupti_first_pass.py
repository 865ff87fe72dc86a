"""Whether a CUDA pass's first recording in a process costs more than later ones (issue 57 item 5).

`gputop run --profile` read its kernel-table calls (CUPTI kernel records alone) at 1.12-1.20x the unprofiled
calls on an H200's ResNet-20, where bench/profile_overhead.py's alternating rounds, in one process after many
recordings, read 1.00-1.02x. This makes, in a fresh process, the pass's own sequence `--repeats` times: unprofiled
calls, then the kernel-table calls with `--warmup` calls recorded and left out first, and prints each repeat's
ratio of medians: where the first repeat alone is dear, the cost is CUPTI's first recording in the process.

Usage: python bench/cupti_first_pass.py --vmfb M --function F --input @x.npy --warmup 1 [--calls 200] [--repeats 4]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from gputop.core.module.device_discovery import resolve_device
from gputop.core.module.inputs import parse_input
from gputop.core.profiling.cupti import activity
from gputop.core.runners.iree_runner import IreeModuleRun


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vmfb", required=True)
    parser.add_argument("--function", default="main")
    parser.add_argument("--input", action="append", default=[])
    parser.add_argument("--warmup", type=int, default=1, help="recorded calls left out before the timed ones")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--prime", default="0x0", help="CYCLESxCALLS: recordings made and dropped before the first")
    args = parser.parse_args()
    runner = IreeModuleRun([resolve_device("cuda")])
    runner.open_devices()
    runner.load_module(Path(args.vmfb))
    runner.create_context(args.function)
    runner.upload([parse_input(i) for i in args.input])
    runner.timed_calls(args.calls)  # the module's own first calls
    activity.RECORDING_WARMUP_CALLS = args.warmup
    activity._primed = True  # the pass's own priming is off here: --prime says what this run makes instead
    cycles, calls = (int(v) for v in args.prime.split("x"))
    for _ in range(cycles):
        activity.record_calls(runner.steady_call, calls, apart=True)
    ratios = []
    for _ in range(args.repeats):
        unprofiled = statistics.median(runner.timed_calls(args.calls))
        recorded = activity.record_calls(runner.steady_call, args.calls, apart=True)
        ratios.append(statistics.median(recorded.kernel_walls_s) / unprofiled)
    print(
        json.dumps(
            {"warmup": args.warmup, "prime": args.prime, "calls": args.calls, "ratios": [round(r, 3) for r in ratios]}
        )
    )
    runner.close()


if __name__ == "__main__":
    main()
