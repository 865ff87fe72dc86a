"""gputop's own cost: CPU and RSS while it watches an idle module at 10 samples/s.

The module is loaded and the run paused (no calls), so what is measured is
gputop's sampling and publishing alone. With `--nvitop`, nvitop's own
collector (`ResourceMetricCollector`) watches the same GPUs at the same rate
in this same run for comparison. Target: under 5% of one core.

Usage: python bench/own_cost.py [--device local-task] [--seconds 30] [--nvitop] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import psutil

from gputop.core.session import RunConfig, Session


def measure(seconds: float) -> tuple[float, int]:
    """Percent of one core this process used over `seconds`, and its RSS at the end."""
    process = psutil.Process()
    before = process.cpu_times()
    started = time.perf_counter()
    time.sleep(seconds)
    after = process.cpu_times()
    busy = (after.user - before.user) + (after.system - before.system)
    return 100.0 * busy / (time.perf_counter() - started), int(process.memory_info().rss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="local-task")
    parser.add_argument("--target", default="demo:mlp")
    parser.add_argument("--input", action="append", default=[])
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--nvitop", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    session = Session(
        RunConfig(
            target=args.target, device=args.device, iterations=None, inputs=tuple(args.input), sample_interval_s=0.1
        )
    )
    snapshots = [0]
    session.subscribe(lambda _: snapshots.__setitem__(0, snapshots[0] + 1))
    session.start()
    while session.snapshot.state not in ("running", "error"):
        time.sleep(0.05)
    session.pause()
    time.sleep(1.0)
    first = snapshots[0]
    cpu, rss = measure(args.seconds)
    rate = (snapshots[0] - first) / args.seconds
    session.stop()
    session.wait(30)
    result: dict[str, object] = {
        "date": time.strftime("%Y-%m-%d"),
        "device": args.device,
        "gputop": {"cpu_percent_of_one_core": round(cpu, 2), "rss_bytes": rss, "snapshots_per_s": round(rate, 2)},
        "target_cpu_percent": 5.0,
        "met": cpu < 5.0,
    }
    print(f"gputop watching an idle module: {cpu:.2f}% of one core, RSS {rss / 2**20:.0f} MiB, {rate:.1f} snapshots/s")
    if args.nvitop:
        from nvitop import Device, ResourceMetricCollector

        collector = ResourceMetricCollector(Device.all(), interval=0.1)
        collector.daemonize(on_collect=lambda metrics: True, interval=0.1)
        time.sleep(1.0)
        nv_cpu, _ = measure(args.seconds)
        result["nvitop"] = {"cpu_percent_of_one_core": round(nv_cpu, 2), "interval_s": 0.1}
        print(f"nvitop's collector at 10 Hz in the same process: {nv_cpu:.2f}% of one core")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
