"""Start-up: `gputop` to its first frame with live data, and `gputop run demo:mlp` end to end.

Both with the compile cached (a warm-up run first), each timed in a fresh
process as a user would meet it. The first-frame time runs the real app
headless and stops the clock at the first frame that shows a counted call.
Target: first frame under 2 s on the CPU machine. Prints a table, writes JSON.

Usage: python bench/startup.py [--device local-task] [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

FIRST_FRAME = r"""
import asyncio, sys, time
t0 = time.perf_counter()
from gputop.tui.app import GputopApp
from gputop.tui.bridge import EngineBridge, RunConfig
async def main():
    app = GputopApp(EngineBridge(RunConfig(target="demo:mlp", device=sys.argv[1], iterations=None)))
    async with app.run_test(size=(120, 40)) as pilot:
        while not (app.frames and app.snapshot and app.snapshot.calls.count > 0):
            await pilot.pause(0.01)
        print(time.perf_counter() - t0, flush=True)
        await pilot.press("q")
asyncio.run(main())
"""


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="local-task")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    run = [sys.executable, "-m", "gputop.tui", "run", "demo:mlp", "--device", args.device, "-n", "1", "-q"]
    timed(run)  # warm the compile cache
    run_s = [timed(run) for _ in range(args.repeats)]
    frame_s = []
    for _ in range(args.repeats):
        proc = subprocess.run(
            [sys.executable, "-c", FIRST_FRAME, args.device], check=True, capture_output=True, text=True
        )
        frame_s.append(float(proc.stdout.strip().splitlines()[-1]))
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "device": args.device,
        "run_end_to_end_s": {"median": statistics.median(run_s), "all": run_s},
        "first_frame_s": {"median": statistics.median(frame_s), "all": frame_s},
        "target_first_frame_s": 2.0,
        "met": statistics.median(frame_s) < 2.0,
    }
    print(
        f"gputop run demo:mlp -n 1 end to end: median {statistics.median(run_s):.2f} s  {[round(x, 2) for x in run_s]}"
    )
    print(f"gputop to first frame with live data: median {statistics.median(frame_s):.2f} s (target < 2 s)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
