"""Where a viewer's CPU goes: py-spy samples of the TUI's viewer and of an attached one, beside their CPU share.

Issue 27 asks for a viewer under 15% of one core at 10 Hz. On one H100 the attached viewer read 15-23% while
the TUI's read 12-15%, and the same pair read about 10% each on the 2-core CPU machine. This runs each way
the way `bench/perturbation.py` does (a real pseudo-terminal, its own session), waits for the steady state,
then samples the viewer with py-spy without stopping it (`--nonblocking`) while measuring its CPU time, and
writes py-spy's raw stacks (`spy-WAY.txt`) and a summary: the share of samples in each of our frames and in
Textual's compositor, and the stream's snapshot size.

Usage: python bench/viewer_profile.py TARGET --device D [--function F] [--input @x.npy ...] --py-spy PATH --out DIR
"""

from __future__ import annotations

import argparse
import atexit
import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perturbation import close_way, cpu_of, end_started, open_way


def summarize(raw: Path) -> dict[str, float]:
    """Share of the viewer's busy samples (stacks not parked in a wait) under each frame of ours or Textual's."""
    busy = 0
    under: collections.Counter[str] = collections.Counter()
    for line in raw.read_text().split("\n"):  # not splitlines: a frame's text may hold a form feed
        stack, _, count_text = line.rpartition(" ")
        if not count_text.isdigit():
            continue
        frames = stack.split(";")
        if any(word in frames[-1] for word in ("select", "wait", "sleep", "_recv", "read (")):
            continue
        busy += int(count_text)
        seen = set()
        for frame in frames:
            name, _, where = frame.partition(" (")
            key = f"{name} ({where.split(':')[0]}"
            if ("/tui/" in where or "/core/" in where or "textual/" in where) and key not in seen:
                seen.add(key)
                under[key] += int(count_text)
    return {"busy_samples": busy, **{k: round(100 * v / max(busy, 1), 1) for k, v in under.most_common(40)}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target")
    parser.add_argument("--device", required=True)
    parser.add_argument("--py-spy", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--ways", default="tui,served")
    args, extra = parser.parse_known_args()
    atexit.register(end_started)  # the viewers and engines it starts end with it
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    run_args = [args.target, "--device", args.device, *extra]
    summary = {}
    for way in args.ways.split(","):
        folder = out / f"session-{way}"
        term, engine = open_way(way, run_args, folder, (120, 40), env, env)
        time.sleep(4)
        pid = term.process.pid
        raw = out / f"spy-{way}.txt"
        cpu0, wall0 = cpu_of(pid), time.monotonic()
        spy = [args.py_spy, "record", "-p", str(pid), "-d", str(int(args.seconds)), "-r", "200", "-f", "raw"]
        subprocess.run([*spy, "--nonblocking", "-o", str(raw)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cpu_pct = 100 * (cpu_of(pid) - cpu0) / (time.monotonic() - wall0)
        close_way(term, engine, 60.0)
        lines = (folder / "samples.jsonl").read_text().splitlines() if (folder / "samples.jsonl").exists() else []
        summary[way] = {
            "viewer_cpu_pct": round(cpu_pct, 1),
            "snapshot_bytes": round(sum(map(len, lines[-20:])) / max(len(lines[-20:]), 1)),
            **(summarize(raw) if raw.exists() else {"py_spy": "no samples"}),
        }
        print(way, json.dumps(summary[way], indent=1), flush=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
