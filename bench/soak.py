"""Soak: `gputop run` flat out for a long time, watched from outside.

The promise of the session record is that a long run neither grows nor loses
anything. This starts the real command line (`gputop run demo:mlp` on
local-task, calls back to back, memory sampled every 0.1 s, every snapshot
written to the session's samples.jsonl), watches the process with psutil
(RSS, open files, threads, child processes) every few seconds, stops it with
SIGINT after `--minutes`, and then audits its session directory: every line
parses, snapshot numbers have no gap, and the report's count of snapshots
published equals the lines written (samples lost).

Usage: python bench/soak.py [--minutes 30] [--device local-task] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil


def watch(proc: psutil.Process) -> dict[str, float]:
    with proc.oneshot():
        return {
            "t": time.time(),
            "rss_bytes": proc.memory_info().rss,
            "open_files": proc.num_fds(),
            "threads": proc.num_threads(),
            "children": len(proc.children(recursive=True)),
        }


def audit(session_dir: Path) -> dict[str, Any]:
    """Read the session back as `gputop report` would: lines, gaps, loss."""
    lines = 0
    torn = 0
    gaps = 0
    last_seq = 0
    with open(session_dir / "samples.jsonl", "rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                torn += 1
                continue
            seq = json.loads(line)["seq"]
            if last_seq and seq != last_seq + 1:
                gaps += 1
            last_seq = seq
            lines += 1
    report = json.loads((session_dir / "report.json").read_text())
    manifest = json.loads((session_dir / "manifest.json").read_text())
    return {
        "lines": lines,
        "torn_lines": torn,
        "seq_gaps": gaps,
        "samples_published": report["record"]["samples_published"],
        "samples_lost": report["record"]["samples_lost"],
        "calls": report["calls"]["count"],
        "p50_ms": report["calls"]["p50_ms"],
        "memory_samples": report["memory"]["samples"],
        "state": manifest["state"],
        "exit_code": manifest["exit_code"],
        "samples_bytes": (session_dir / "samples.jsonl").stat().st_size,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--device", default="local-task")
    parser.add_argument("--target", default="demo:mlp")
    parser.add_argument("--every", type=float, default=5.0, help="seconds between watches")
    parser.add_argument("--warmup", type=float, default=60.0, help="seconds after the first call to the 'warm' RSS")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    session_dir = Path(tempfile.mkdtemp(prefix="gputop-soak-"))
    command = [
        sys.executable, "-m", "gputop.tui", "run", args.target, "--device", args.device,
        "--iterations", str(10**9), "--quiet", "--session-dir", str(session_dir),
    ]  # fmt: skip
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    proc = psutil.Process(child.pid)
    # "start" is once calls are running: compile and load are not what a soak is about.
    while child.poll() is None:
        manifest = session_dir / "manifest.json"
        if manifest.exists() and json.loads(manifest.read_text()).get("state") == "running":
            break
        time.sleep(0.2)
    started = time.time()
    rows = [watch(proc)]
    deadline = started + args.minutes * 60
    while time.time() < deadline and child.poll() is None:
        time.sleep(args.every)
        rows.append(watch(proc))
    child.send_signal(signal.SIGINT)
    try:
        _, stderr = child.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        child.kill()
        _, stderr = child.communicate()
    warm = next((r for r in rows if r["t"] - started >= args.warmup), rows[0])
    start, end = rows[0], rows[-1]
    result = {
        "device": args.device,
        "target": args.target,
        "minutes": round((end["t"] - started) / 60, 2),
        "date": time.strftime("%Y-%m-%d"),
        "host_cpus": os.cpu_count(),
        "exit_code": child.returncode,
        "rss_start_bytes": start["rss_bytes"],
        "rss_warm_bytes": warm["rss_bytes"],
        "rss_end_bytes": end["rss_bytes"],
        "rss_max_bytes": max(r["rss_bytes"] for r in rows),
        "rss_growth_from_start": round(end["rss_bytes"] / start["rss_bytes"] - 1, 4),
        "rss_growth_from_warm": round(end["rss_bytes"] / warm["rss_bytes"] - 1, 4),
        "open_files": sorted({r["open_files"] for r in rows}),
        "threads": sorted({r["threads"] for r in rows}),
        "children": sorted({r["children"] for r in rows}),
        "watches": len(rows),
        "session_dir": str(session_dir),
        "stderr_tail": stderr.strip().splitlines()[-2:],
    }
    result.update(audit(session_dir))
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
