"""Event-loop lag of the TUI while the real engine runs flat out.

The promise is that the UI never blocks: compile, load and calls run on
threads and snapshots arrive as coalescing messages at most ten times a
second. This runs the real app headless on a live engine (demo:mlp on
local-task by default, calls back to back), schedules a 10 ms tick on the
app's event loop and records how late each tick fires. It reports p50, p99
and max lag, frames drawn per second and snapshots received per second.

Usage: python bench/ui_lag.py [--device local-task] [--seconds 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path

import numpy as np

from gputop.tui.app import GputopApp
from gputop.tui.bridge import EngineBridge, RunConfig, SnapshotArrived

TICK_S = 0.010


async def measure(args: argparse.Namespace) -> dict[str, object]:
    config = RunConfig(target=args.target, device=args.device, iterations=None, inputs=tuple(args.input))
    app = GputopApp(EngineBridge(config))
    received = [0]

    def hook(message: object) -> None:
        if isinstance(message, SnapshotArrived):
            received[0] += 1

    lags: list[float] = []
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        while app.snapshot is None or app.snapshot.state != "running":
            if app.snapshot is not None and app.snapshot.state == "error":
                raise SystemExit(f"run failed: {app.snapshot.error}")
            await pilot.pause(0.1)
        frames0, received0, calls0 = app.frames, received[0], app.snapshot.calls.count
        started = time.perf_counter()
        while time.perf_counter() - started < args.seconds:
            before = time.perf_counter()
            await asyncio.sleep(TICK_S)
            lags.append((time.perf_counter() - before - TICK_S) * 1e3)
        elapsed = time.perf_counter() - started
        frames = app.frames - frames0
        snapshots = received[0] - received0
        calls = app.snapshot.calls.count - calls0
        device = app.snapshot.device.id if app.snapshot.device else args.device
        await pilot.press("q")
    lag = np.array(lags)
    return {
        "date": time.strftime("%Y-%m-%d"),
        "device": device,
        "target": args.target,
        "seconds": round(elapsed, 2),
        "cpu_count": os.cpu_count(),
        "engine_calls_per_s": round(calls / elapsed, 1),
        "lag_ms": {
            "p50": round(float(np.percentile(lag, 50)), 2),
            "p99": round(float(np.percentile(lag, 99)), 2),
            "max": round(float(lag.max()), 2),
        },
        "frames_per_s": round(frames / elapsed, 2),
        "snapshots_per_s": round(snapshots / elapsed, 2),
        "target_p99_ms": 50,
        "met": bool(np.percentile(lag, 99) < 50),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="demo:mlp")
    parser.add_argument("--device", default="local-task")
    parser.add_argument("--input", action="append", default=[])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = asyncio.run(measure(args))
    lag = result["lag_ms"]
    print(f"device {result['device']}: engine {result['engine_calls_per_s']} calls/s for {result['seconds']} s")
    print(f"event-loop lag p50 {lag['p50']} ms  p99 {lag['p99']} ms  max {lag['max']} ms  (target p99 < 50 ms)")  # type: ignore[index]
    print(f"frames {result['frames_per_s']}/s  snapshots {result['snapshots_per_s']}/s")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
