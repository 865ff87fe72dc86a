"""Does watching a run change it? The same module headless, in the TUI, and served + attached, alternating.

gputop's numbers are only true if drawing them costs the run nothing. This
runs one module three ways, in alternating rounds so that drift of the
machine (clocks, neighbours) falls on every way alike:
- `headless`: `gputop run TARGET -n N` (one process, nothing drawn);
- `tui`: `gputop TARGET` in a real pseudo-terminal (120x40 unless --size),
  whose engine runs as its own process, for --seconds, then `q`;
- `served`: `gputop serve TARGET` with `gputop attach` in a pseudo-terminal.
Each way's p50/p95/max/mean are those of the calls made in its steady
window alone, from its own report's samples (the engine's synced wall time
of every call, in order), before any profile pass. Calls before the window
are left out: an attached viewer starts while its engine already calls (the
TUI starts its engine after itself). Every command runs in a session of its
own, as from its own terminal: with the kernel's autogroup scheduling a
session is a scheduling group, and these two made served + attached look 10%
slower than the TUI on the 2-core machine (BENCHMARKS.md). Headless makes as
many calls as the first viewed way made before and in its window, and leaves
out the same leading ones. The table gives each against headless.
With --profile each way also takes --profile-passes profile passes (`p` in
the TUI, one after another; headless, `--profile` in its run and then in as
many short runs more) and the call breakdown's segments are compared: the
mean of each segment over every pass of a way (all rounds pooled), beside
headless's, with each way's spread. A single pass's return wait moves by
10% from pass to pass on the H200 in any way, headless included, so one
pass per way cannot tell a 5% difference.
The viewer's CPU (psutil, over the steady window) and the age of each
snapshot when the viewer drew it (GPUTOP_VIEWER_STATS) come with the TUI and
attach rows.

Usage: python bench/perturbation.py [--target demo:mlp] [--device local-task] [--seconds 20] [--rounds 3]
           [--profile] [--profile-passes K] [--input @in0.npy ...] [--function F] [--json out.json]
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import fcntl
import json
import os
import pty
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from gputop.core.serving.control_socket import ControlUnavailable, StreamReader, ask

GPUTOP = [sys.executable, "-m", "gputop.tui"]
WAYS = ("headless", "tui", "served")
BREAKDOWN = ("host", "queue", "alloc", "device_busy", "device_idle", "return_wait", "unaccounted")  # totals, in ms
SEGMENTS_COMPARED = ("wall", "host", "return_wait", "device_busy")  # the three, and the wall they share


# Every process group this script starts (each in a session of its own), ended with it however it ends: a run
# cut short by `timeout` once left a TUI and its engine calling the GPU beside the next module's rounds.
STARTED: list[subprocess.Popen[bytes]] = []


def end_started(*_: object) -> None:
    for process in STARTED:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)  # a TUI's own engine follows: it watches its parent


def start(command: list[str], **popen: Any) -> subprocess.Popen[bytes]:
    """Popen in a session of its own, ended with this script."""
    process = subprocess.Popen(command, start_new_session=True, **popen)
    STARTED.append(process)
    return process


def run_to_end(command: list[str], env: dict[str, str]) -> None:
    """subprocess.run(check=True), quietly, in a session of its own and ended with this script."""
    process = start(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if process.wait() != 0:
        raise subprocess.CalledProcessError(process.returncode, command)


class Terminal:
    """A process on a pseudo-terminal of a given size, its output read and thrown away as a terminal would."""

    def __init__(self, command: list[str], size: tuple[int, int], env: dict[str, str]) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
        # Its own session, as a process in a real terminal is: with the kernel's autogroup scheduling (on here),
        # a session is a scheduling group, and a viewer that shared one with its engine took its CPU differently.
        self.process = start(
            command, stdin=slave, stdout=slave, stderr=slave, env={**env, "TERM": "xterm-256color"}, close_fds=True
        )
        os.close(slave)
        self._master = master
        self.bytes_out = 0
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self._master, 65536)
            except OSError:
                return
            if not data:
                return
            self.bytes_out += len(data)

    def press(self, keys: str) -> None:
        os.write(self._master, keys.encode())

    def wait(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._master)


def wait_running(folder: Path, timeout: float = 600.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(ControlUnavailable):
            if ask(folder, "hello").get("state") == "running":
                return
        time.sleep(0.1)
    raise SystemExit(f"{folder}: the run did not reach running in {timeout:.0f} s")


def wait_viewed(folder: Path, timeout: float = 120.0) -> None:
    """Until the viewer has subscribed to the run's stream: its start (imports, the first layouts, a second or
    more of a whole core) is not part of its steady CPU. An attached viewer starts after its engine runs, so
    without this its start fell inside a 2 s warmup's window on a slower machine."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(ControlUnavailable):
            if (ask(folder, "report", timeout=10.0)["report"].get("engine") or {}).get("viewers_now", 0) >= 1:
                return
        time.sleep(0.2)
    raise SystemExit(f"{folder}: no viewer subscribed to the run in {timeout:.0f} s")


def wait_profiled(folder: Path, timeout: float = 300.0, after: float | None = None) -> dict[str, Any]:
    """Until a profile pass has landed (one newer than the pass stamped `after`), watched on the run's stream
    (no report is built meanwhile); its report."""
    reader = StreamReader.open(folder)
    timer = threading.Timer(timeout, reader.close)
    timer.start()
    try:
        for line in reader.lines():
            snapshot = json.loads(line)
            profile = snapshot.get("profile")
            if profile and not snapshot.get("profiling") and (after is None or profile.get("timestamp", 0) > after):
                break
        else:
            raise SystemExit(f"{folder}: no profile pass landed in {timeout:.0f} s")
    finally:
        timer.cancel()
        reader.close()
    return dict(ask(folder, "report", timeout=60.0)["report"])


def read_report(folder: Path, timeout: float = 120.0) -> dict[str, Any]:
    path = folder / "report.json"
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return dict(json.loads(path.read_text()))


def cpu_of(pid: int) -> float:
    with contextlib.suppress(psutil.Error):
        times = psutil.Process(pid).cpu_times()
        return float(times.user + times.system)
    return 0.0


def call_times(report: dict[str, Any]) -> list[float]:
    """Every steady call's time (ms), in order: the report's samples keep all of them up to 20000 calls."""
    samples = (report.get("samples") or {}).get("calls") or {}
    if samples.get("uniform"):
        raise SystemExit("more calls than the report's samples keep: shorten --seconds")
    return [float(v) for v in samples.get("ms") or []]


def window_figures(times: list[float]) -> dict[str, float | int | None]:
    """p50, p95, max and mean of the calls of a window, as gputop's CallStats takes them (numpy's percentiles)."""
    if not times:
        return {"count": 0, "p50_ms": None, "p95_ms": None, "max_ms": None, "mean_ms": None}
    p50, p95 = np.percentile(times, [50, 95])
    return {"count": len(times), "p50_ms": float(p50), "p95_ms": float(p95), "max_ms": max(times),
            "mean_ms": float(np.mean(times))}  # fmt: skip


def steady_window(folder: Path, pid: int, seconds: float) -> tuple[dict[str, Any], list[float], int, float]:
    """Sleep through the steady window; the report at its end, the calls made in it, how many came before it,
    and the viewer's CPU share over it.

    Only the window's calls count: those made before it competed with the viewer's start-up (an attached
    viewer starts after its engine, while calls run) and are no part of watching. The figures are taken
    before any profile pass, as headless `gputop run --profile` reports the calls made before its pass.
    """
    before = len(call_times(ask(folder, "report", timeout=60.0)["report"]))
    cpu0, wall0 = cpu_of(pid), time.monotonic()
    time.sleep(seconds)
    wall = time.monotonic() - wall0
    cpu_pct = round(100 * (cpu_of(pid) - cpu0) / wall, 1)
    report = ask(folder, "report", timeout=60.0)["report"]
    return report, call_times(report)[before:], before, cpu_pct


def open_way(
    way: str, run_args: list[str], folder: Path, size: tuple[int, int], env: dict[str, str], viewer_env: dict[str, str]
) -> tuple[Terminal, subprocess.Popen[bytes] | None]:
    """A viewed way, started as a user would and running: the TUI (its engine its own child), or `gputop serve`
    and `gputop attach` in a terminal of its own (`engine`, else None)."""
    engine: subprocess.Popen[bytes] | None = None
    if way == "tui":
        term = Terminal([*GPUTOP, *run_args, "--session-dir", str(folder)], size, viewer_env)
    else:
        # As the TUI starts its engine: no periodic profile passes (serve's default takes one at once).
        serve = ["serve", *run_args, "--session-dir", str(folder), "--metrics-port", "0", "--profile-every", "0"]
        # In a session of its own, as from another terminal; the TUI starts its engine in a session too.
        engine = start([*GPUTOP, *serve, "--quiet"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_running(folder)
        term = Terminal([*GPUTOP, "attach", str(folder)], size, viewer_env)
    wait_running(folder)
    return term, engine


def close_way(term: Terminal, engine: subprocess.Popen[bytes] | None, timeout: float) -> None:
    """`q` in the viewer; a served engine, which `q` in attach leaves going, is then interrupted."""
    term.press("q")
    term.wait(timeout)
    term.close()
    if engine is not None:
        engine.send_signal(signal.SIGINT)
        engine.wait(timeout)


def run_way(
    way: str, args: argparse.Namespace, base: Path, calls: tuple[int, int] | None, env: dict[str, str]
) -> dict[str, Any]:
    """One round of one way. `calls`: (calls before the window, calls in it) of a viewed way, which headless
    makes too and then leaves out the same leading calls."""
    folder = base / f"{way}-{time.monotonic_ns()}"
    run_args = [args.target, "--device", args.device, *args.extra]
    if args.profile:  # the same pass everywhere: headless `--profile` would otherwise profile every one of its calls
        run_args += ["--profile-calls", str(args.profile_calls)]
    stats_path = folder.with_suffix(".viewer.json")
    viewer_env = {**env, "GPUTOP_VIEWER_STATS": str(stats_path)}
    row: dict[str, Any] = {"way": way}
    if way == "headless":
        skipped, window = calls or (0, 100)
        command = [*GPUTOP, "run", *run_args, "-n", str(skipped + window), "--session-dir", str(folder), "--quiet"]
        if args.profile:
            command += ["--profile"]
        run_to_end(command, env)
        report = read_report(folder)
        passes = [report]
        times = call_times(report)[skipped:]
        row["skipped"] = skipped
        for extra in range(1, args.profile_passes if args.profile else 1):  # more passes: short runs of their own
            more = folder.with_name(f"{folder.name}-pass{extra}")
            command = [*GPUTOP, "run", *run_args, "-n", str(args.profile_calls), "--session-dir", str(more)]
            run_to_end([*command, "--quiet", "--profile"], env)
            passes.append(read_report(more))
    else:
        term, engine = open_way(way, run_args, folder, args.size, env, viewer_env)
        wait_viewed(folder)
        time.sleep(args.warmup)
        report, times, row["skipped"], row["viewer_cpu_pct"] = steady_window(folder, term.process.pid, args.seconds)
        passes = [report]
        if args.profile:
            passes, stamp = [], None
            for _ in range(args.profile_passes):
                term.press("p")
                profiled = wait_profiled(folder, after=stamp)
                stamp = (profiled.get("profile") or {}).get("timestamp")
                passes.append(profiled)
        close_way(term, engine, 120.0)
    row.update(**window_figures(times), engine=report.get("engine"))
    if stats_path.exists():
        row["viewer"] = json.loads(stats_path.read_text())
    breakdowns = []
    for profiled in passes:
        breakdown = profiled.get("call_breakdown")
        if breakdown:
            totals = breakdown.get("totals", {})
            breakdowns.append({"wall": breakdown.get("wall_ms"), **{k: totals.get(f"{k}_ms") for k in BREAKDOWN}})
    if breakdowns:
        row["breakdown_ms"] = breakdowns[0]
        row["breakdowns_ms"] = breakdowns
    return row


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per way: the median over rounds of each figure, and its ratio to headless."""
    table = []
    for way in WAYS:
        mine = [r for r in rows if r["way"] == way]
        if not mine:
            continue
        entry: dict[str, Any] = {"way": way, "rounds": len(mine), "p50_by_round": [r.get("p50_ms") for r in mine]}
        for key in ("p50_ms", "p95_ms", "max_ms", "mean_ms", "viewer_cpu_pct"):
            values = [r[key] for r in mine if r.get(key) is not None]
            entry[key] = statistics.median(values) if values else None
        latencies = [r["viewer"]["p95_ms"] for r in mine if r.get("viewer") and r["viewer"].get("p95_ms")]
        entry["snapshot_age_p95_ms"] = statistics.median(latencies) if latencies else None
        # Every pass of every round pooled: the mean of each segment, and its spread over the passes.
        walls = [
            b for r in mine for b in r.get("breakdowns_ms") or ([r["breakdown_ms"]] if r.get("breakdown_ms") else [])
        ]
        if walls:
            keys = ("wall", *BREAKDOWN)
            entry["passes"] = len(walls)
            entry["breakdown_ms"] = {k: statistics.fmean(w.get(k) or 0.0 for w in walls) for k in keys}
            by_segment = {k: [w.get(k) or 0.0 for w in walls] for k in keys}
            entry["breakdown_spread_ms"] = {k: [min(v), max(v)] for k, v in by_segment.items()}
        table.append(entry)
    head = next((t for t in table if t["way"] == "headless"), None)
    for entry in table:
        for key in ("p50_ms", "p95_ms", "max_ms", "mean_ms"):
            if head and head.get(key) and entry.get(key):
                entry[key.replace("_ms", "_ratio")] = round(entry[key] / head[key], 3)
        if head and head.get("breakdown_ms") and entry.get("breakdown_ms"):
            entry["breakdown_ratio"] = {
                k: round(entry["breakdown_ms"][k] / head["breakdown_ms"][k], 3)
                for k in SEGMENTS_COMPARED
                if head["breakdown_ms"].get(k)
            }
    return table


def main() -> None:
    atexit.register(end_started)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(124))  # `timeout`: end what was started, then exit
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="demo:mlp")
    parser.add_argument("--device", default="local-task")
    parser.add_argument("--seconds", type=float, default=20.0, help="steady window of the viewed ways")
    parser.add_argument(
        "--warmup", type=float, default=3.0, help="seconds from the viewer's subscription to the steady window"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", default="120x40", help="terminal COLSxROWS")
    parser.add_argument("--profile", action="store_true", help="one profile pass per way; compare breakdowns")
    parser.add_argument("--profile-calls", type=int, default=10, help="calls in each way's profile pass (default 10)")
    parser.add_argument("--profile-passes", type=int, default=1, help="profile passes per way and round (default 1)")
    parser.add_argument("--ways", default=",".join(WAYS))
    parser.add_argument("--json", help="write rows and table here")
    args, extra = parser.parse_known_args()
    args.extra = extra  # --input @x.npy, --function F: passed to every way
    cols, rows_ = args.size.split("x")
    args.size = (int(cols), int(rows_))
    ways = [w for w in args.ways.split(",") if w in WAYS]
    env = dict(os.environ)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="gputop-perturb-") as tmp:
        base = Path(tmp)
        calls: tuple[int, int] | None = None
        for round_index in range(args.rounds):
            order = ways[round_index % len(ways) :] + ways[: round_index % len(ways)]
            if calls is None and "headless" in order:
                order = [w for w in order if w != "headless"] + ["headless"]  # calls come from a viewed way
            for way in order:
                row = run_way(way, args, base, calls, env)
                row["round"] = round_index
                if way != "headless" and calls is None and row.get("count"):
                    calls = (int(row["skipped"]), int(row["count"]))
                rows.append(row)
                print(json.dumps(row), flush=True)
    table = summarise(rows)
    print(f"\n{args.target} on {args.device}, {args.rounds} rounds, {args.seconds:.0f} s steady per viewed way")
    figures = ("p50_ms", "p95_ms", "max_ms", "mean_ms")
    heading = " ".join(f"{k.replace('_ms', ' ms'):>8}" for k in figures)
    print(f"{'way':<9} {heading}  ratios p50/p95/max/mean  viewer CPU  age p95")
    for t in table:
        ratios = "/".join(f"{t.get(k.replace('_ms', '_ratio')) or 1.0:.3f}" for k in figures)
        cpu = f"{t['viewer_cpu_pct']:.1f}%" if t.get("viewer_cpu_pct") else "-"
        age = f"{t['snapshot_age_p95_ms']:.1f} ms" if t.get("snapshot_age_p95_ms") else "-"
        values = " ".join(f"{(t.get(k) or 0):>8.3f}" for k in ("p50_ms", "p95_ms", "max_ms", "mean_ms"))
        print(f"{t['way']:<9} {values}  {ratios:<23} {cpu:>10}  {age:>7}")
        print("          p50 by round " + ", ".join(f"{v:.3f}" for v in t["p50_by_round"] if v is not None))
        if t.get("breakdown_ms"):
            print(f"          breakdown, mean of {t['passes']} passes: "
                  + ", ".join(f"{k} {v:.3f}" for k, v in t["breakdown_ms"].items()))  # fmt: skip
            spread = t["breakdown_spread_ms"]
            print(
                "          spread " + ", ".join(f"{k} {spread[k][0]:.3f}-{spread[k][1]:.3f}" for k in SEGMENTS_COMPARED)
            )
        if t.get("breakdown_ratio"):
            print("          against headless " + ", ".join(f"{k} {v:.3f}" for k, v in t["breakdown_ratio"].items()))
    if args.json:
        meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "target": args.target, "device": args.device}
        Path(args.json).write_text(json.dumps({**meta, "rows": rows, "table": table}, indent=2) + "\n")


if __name__ == "__main__":
    main()
