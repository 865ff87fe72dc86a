"""A fleet past one machine, by simulation: Prometheus loaded with a generated history, the fleet view timed on it.

Item 4 of issue 58: do the fleet view and its queries hold for 1,000 hosts x 8 GPUs? No such fleet
is at hand, so this writes the history one would leave in Prometheus (the series `gputop serve`
exports, with the labels of issue 58's contract: `run`, `target`, `device`, `Hostname`, the GPU's
`UUID`, `gpu`, `modelName`, `pci_bus_id`, `instance`, `job`), turns it into TSDB blocks with
Prometheus's own backfill (`promtool tsdb create-blocks-from openmetrics`), starts the Debian
Prometheus on those blocks (loopback, a temporary folder) and times, at the history's end:
each fleet query, one whole refresh (`poll_fleet`, the queries at once and one after another), the
rows' join, and the view's table filled and updated in the real app (headless, Textual's run_test).

The fleet: every GPU runs one session; a quarter are watched programs with two functions
(prefill/decode), the rest gputop's own runs with one. Call times are log-normal around each run's
own median (0.3-30 ms); 2 % of the runs slow down 3x for the last third of the history, 5 % sit
at a 345 MHz SM clock, 3 % grow memory per call (with a `held results` hint), 2 % carry another
hint, and a few are paused, finished or in error. Series per run: 38 (own runs) or 68 (programs).

Only the contract's series are written: a real `gputop serve` exports more (phases, kernels, pools,
throttle reasons), which take disk and memory in Prometheus but no query of the fleet view's
selects them. Usage:

    python bench/fleet_sim.py --hosts 1000 --gpus 8 --minutes 15 --step 15 --json bench/results/fleet-sim.json
    python bench/fleet_sim.py --hosts 20 --minutes 15        # a small fleet first: how long the backfill takes
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gputop.core.fleet import FleetQueries, PrometheusClient, fleet_rows, poll_fleet
from gputop.core.records.calls import CALL_BUCKETS_MS

BUCKETS_S = tuple(bound / 1e3 for bound in CALL_BUCKETS_MS)  # gputop serve's own histogram buckets
STATES = ("idle", "importing", "compiling", "loading", "running", "paused", "finished", "stopped", "error")
# A watched call's parts as gputop serve exports them (p50 each); a run gputop makes has the one part `call`.
PROGRAM_PARTS = (("arguments", 0.05), ("invoke", 0.8), ("results", 0.05), ("to_host", 0.1))
OWN_PARTS = (("call", 1.0),)
BLOCK_S = 7200  # Prometheus's block range: a history inside one range is one block and one backfill pass
TOTAL_BYTES = 150_754_820_096  # an H200's memory as NVML gives it (143,771 MiB)


@dataclass
class Function:
    name: str
    median_s: float
    sigma: float
    rate: float  # calls a second while running
    slower_at: float | None = None  # the fraction of the history after which calls take 3x as long


@dataclass
class Run:
    labels: str  # the run's own labels, ready to write
    gpu_labels: str  # the same with the GPU's
    state: str
    functions: list[Function]
    clock_hz: float
    used_bytes: float
    growth: float | None
    hints: tuple[str, ...]
    counts: dict[str, float] = field(default_factory=dict)


def make_fleet(hosts: int, gpus: int, seed: int = 58) -> list[Run]:
    rng = random.Random(seed)
    runs = []
    for h in range(hosts):
        host = f"gpu-node-{h:04d}"
        for g in range(gpus):
            program = rng.random() < 0.25
            run_id = f"20261201-0{g}{rng.randrange(60):02d}{rng.randrange(60):02d}Z-{'serve' if program else 'model'}"
            target = "python serve.py" if program else "/models/llm-block.vmfb"
            base = (
                f'run="{run_id}",target="{target}",device="cuda:{g}",Hostname="{host}",'
                f'instance="{host}:{9470 + g}",job="gputop"' + (',program="serve.py"' if program else "")
            )
            uuid = "GPU-" + "-".join(f"{rng.getrandbits(4 * n):0{n}x}" for n in (8, 4, 4, 4, 12))
            gpu_labels = (
                f'{base},UUID="{uuid}",gpu="{g}",modelName="NVIDIA H200",pci_bus_id="00000000:{0x18 + 16 * g:02X}:00.0"'
            )
            names = ("model.prefill", "model.decode") if program else ("main",)
            functions = []
            for name in names:
                median = math.exp(rng.uniform(math.log(3e-4), math.log(3e-2)))
                slower = 2 / 3 if rng.random() < 0.02 else None
                functions.append(Function(name, median, rng.uniform(0.05, 0.4), 0.8 / median / len(names), slower))
            roll = rng.random()
            state = "error" if roll < 0.01 else "paused" if roll < 0.02 else "finished" if roll < 0.03 else "running"
            growth = rng.choice((4096.0, 65536.0, 1e6)) if rng.random() < 0.03 else None
            hints = (
                ("held results",)
                if growth
                else (rng.choice(("numpy argument", "context per call")),)
                if rng.random() < 0.02
                else ()
            )
            clock = 345e6 if rng.random() < 0.05 else rng.choice((1980e6, 1965e6, 1950e6))
            runs.append(Run(base, gpu_labels, state, functions, clock, rng.uniform(10, 130) * 2**30, growth, hints))
    return runs


def _cdf(bound: float, median: float, sigma: float) -> float:
    return 0.5 * (1 + math.erf((math.log(bound) - math.log(median)) / (sigma * math.sqrt(2))))


def write_openmetrics(runs: list[Run], path: Path, start: int, steps: int, step: int) -> int:
    """The history as OpenMetrics, family by family, each series in time order; returns the lines written."""
    times = [start + i * step for i in range(steps)]
    lines = 0
    with path.open("w", encoding="utf-8", buffering=1 << 22) as out:

        def family(name: str, kind: str, rows: Iterator[str]) -> None:
            nonlocal lines
            out.write(f"# TYPE {name} {kind}\n")
            chunk = []
            for row in rows:
                chunk.append(row)
                if len(chunk) >= 20000:
                    out.write("".join(chunk))
                    lines += len(chunk)
                    chunk.clear()
            out.write("".join(chunk))
            lines += len(chunk)

        family("gputop", "info", (f"gputop_info{{{r.gpu_labels}}} 1 {t}\n" for t in times for r in runs))
        family(
            "gputop_run_state",
            "gauge",
            (
                f'gputop_run_state{{{r.labels},state="{s}"}} {int(s == r.state)} {t}\n'
                for t in times
                for r in runs
                for s in STATES
            ),
        )
        family("gputop_call_duration_seconds", "histogram", _histogram_rows(runs, times, start, step * steps))
        family("gputop_calls", "counter", _counter_rows(runs, times, start))
        family(
            "gputop_call_part_seconds",
            "gauge",
            (
                f'gputop_call_part_seconds{{{r.labels},function="{f.name}",part="{p}"}} {f.median_s * share:.6g} {t}\n'
                for t in times
                for r in runs
                for f in r.functions
                for p, share in (PROGRAM_PARTS if len(r.functions) > 1 else OWN_PARTS)
            ),
        )
        family(
            "gputop_memory_growth_bytes_per_call",
            "gauge",
            (
                f"gputop_memory_growth_bytes_per_call{{{r.labels}}} {r.growth} {t}\n"
                for t in times
                for r in runs
                if r.growth
            ),
        )
        family(
            "gputop_hint_active",
            "gauge",
            (f'gputop_hint_active{{{r.labels},subject="{h}"}} 1 {t}\n' for t in times for r in runs for h in r.hints),
        )
        family(
            "gputop_hints_active",
            "gauge",
            (f"gputop_hints_active{{{r.labels}}} {len(r.hints)} {t}\n" for t in times for r in runs),
        )
        family(
            "gputop_gpu_sm_clock_hertz",
            "gauge",
            (f"gputop_gpu_sm_clock_hertz{{{r.gpu_labels}}} {r.clock_hz:.0f} {t}\n" for t in times for r in runs),
        )
        family(
            "gputop_device_memory_used_bytes",
            "gauge",
            (
                f'gputop_device_memory_used_bytes{{{r.gpu_labels},source="nvml"}} '
                f"{r.used_bytes + (r.growth or 0) * r.functions[0].rate * (t - start):.0f} {t}\n"
                for t in times
                for r in runs
            ),
        )
        family(
            "gputop_device_memory_total_bytes",
            "gauge",
            (
                f'gputop_device_memory_total_bytes{{{r.gpu_labels},source="nvml"}} {TOTAL_BYTES} {t}\n'
                for t in times
                for r in runs
            ),
        )
        out.write("# EOF\n")
    return lines


def _calls(f: Function, state: str, elapsed: float, span: float) -> tuple[float, float]:
    """(calls at the normal speed, calls slowed) made `elapsed` seconds into a history of `span` seconds."""
    if state in ("finished", "error"):
        elapsed = min(elapsed, span / 3)  # its calls stopped a third of the way in
    if state == "paused":
        elapsed = min(elapsed, span / 2)
    if f.slower_at is None or elapsed <= f.slower_at * span:
        return f.rate * elapsed, 0.0
    before = f.slower_at * span
    return f.rate * before, f.rate / 3 * (elapsed - before)


def _histogram_rows(runs: list[Run], times: list[int], start: int, span: float) -> Iterator[str]:
    fractions = {
        (id(f)): (
            [_cdf(b, f.median_s, f.sigma) for b in BUCKETS_S],
            [_cdf(b, f.median_s * 3, f.sigma) for b in BUCKETS_S],
        )
        for r in runs
        for f in r.functions
    }
    bounds = [repr(b) for b in BUCKETS_S]
    for t in times:
        for r in runs:
            for f in r.functions:
                normal, slow = _calls(f, r.state, t - start, span)
                fast_cdf, slow_cdf = fractions[id(f)]
                head = f'gputop_call_duration_seconds_bucket{{{r.labels},function="{f.name}",le="'
                for bound, a, b in zip(bounds, fast_cdf, slow_cdf, strict=True):
                    yield f'{head}{bound}"}} {int(normal * a + slow * b)} {t}\n'
                count = int(normal) + int(slow)
                yield f'{head}+Inf"}} {count} {t}\n'
                yield f'gputop_call_duration_seconds_count{{{r.labels},function="{f.name}"}} {count} {t}\n'
                mean = f.median_s * math.exp(f.sigma**2 / 2)
                total = normal * mean + slow * 3 * mean
                yield f'gputop_call_duration_seconds_sum{{{r.labels},function="{f.name}"}} {total:.6f} {t}\n'


def _counter_rows(runs: list[Run], times: list[int], start: int) -> Iterator[str]:
    span = times[-1] - start + (times[1] - times[0] if len(times) > 1 else 0)
    for t in times:
        for r in runs:
            for f in r.functions:
                normal, slow = _calls(f, r.state, t - start, span)
                yield f'gputop_calls_total{{{r.labels},function="{f.name}"}} {int(normal) + int(slow)} {t}\n'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def prometheus_on(data: Path, config: Path) -> Iterator[tuple[str, float]]:
    """Debian's Prometheus on `data` (loopback, no scrapes); yields its URL and how long it took to be ready."""
    port = free_port()
    config.write_text("global: {scrape_interval: 1h}\nscrape_configs: []\n")
    started = time.perf_counter()
    server = subprocess.Popen(
        [
            "prometheus",
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            "--storage.tsdb.retention.time=100y",  # the blocks are in the past: keep them
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(data.parent / "prometheus.log").open("w"),
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(1200):
            with contextlib.suppress(OSError):
                if urllib.request.urlopen(f"{url}/-/ready", timeout=2).status == 200:
                    break
            time.sleep(0.1)
        else:
            raise SystemExit("Prometheus did not get ready in 120 s (prometheus.log beside the data)")
        yield url, time.perf_counter() - started
    finally:
        server.terminate()
        server.wait(timeout=60)


def rss_kib(pid_name: str = "prometheus") -> int | None:
    """Prometheus's resident memory (the newest process of that name), from /proc."""
    for entry in sorted(Path("/proc").iterdir(), key=lambda p: p.name):
        with contextlib.suppress(OSError, ValueError):
            if entry.name.isdigit() and (entry / "comm").read_text().strip() == pid_name:
                for line in (entry / "status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
    return None


def time_queries(client: PrometheusClient, at: float, repeats: int) -> dict[str, object]:
    """Each fleet query's time and answer size, and whole refreshes at once and in turn (seconds)."""
    queries = FleetQueries().expressions()
    each: dict[str, object] = {}
    for name, expr in queries.items():
        times, size = [], 0
        for _ in range(repeats):
            samples, took = client.timed_query(expr, at)
            times.append(took)
            size = len(samples)
        each[name] = {"median_s": round(statistics.median(times), 4), "max_s": round(max(times), 4), "samples": size}
    polls: dict[str, object] = {}
    for label, workers in (("parallel", 0), ("serial", 1)):
        took = [poll_fleet(client, at=at, workers=workers).took_s for _ in range(repeats)]
        polls[label] = {"median_s": round(statistics.median(took), 4), "max_s": round(max(took), 4)}
    # For the record: the whole run's p50 asked of every run with `or` (the first version's query), and a poll's
    # second round (the whole run's quantiles of the runs whose window held no calls) as the poll asks it.
    window = FleetQueries().expressions()["p50"]
    whole = "histogram_quantile(0.5, sum by (Hostname, run, function, le) (gputop_call_duration_seconds_bucket)) >= 0"
    combined = (
        f'label_replace({window}, "over", "window", "", "") or on (Hostname, run, function) '
        f'label_replace({whole}, "over", "run", "", "")'
    )
    took = [client.timed_query(combined, at)[1] for _ in range(repeats)]
    each["p50_or_whole_run_for_all"] = {"median_s": round(statistics.median(took), 4), "max_s": round(max(took), 4)}
    poll = poll_fleet(client, at=at)
    each["second_round"] = {name: round(t, 4) for name, t in poll.query_s.items() if name.endswith("_run")}
    results = {name: client.query(expr, at) for name, expr in queries.items()}
    join = []
    for _ in range(repeats):
        begun = time.perf_counter()
        fleet_rows(results)
        join.append(time.perf_counter() - begun)
    return {
        "queries": each,
        "refresh": polls,
        "join_s": round(statistics.median(join), 4),
        "rows": len(poll.rows),
        "samples": poll.series,
        "hinted_rows": sum(1 for r in poll.rows if r.hints),
    }


def time_view(url: str, at: float) -> dict[str, float]:
    """The real fleet view (headless, 120x40) on this Prometheus at `at`: first rows drawn, then one refresh."""
    from gputop.tui.fleet import FleetApp

    async def wait_polls(app: FleetApp, pilot: Any, polls: int) -> None:
        while app.fleet.polls < polls:
            if app.fleet.problem:
                raise SystemExit(f"fleet_sim: the view's poll failed: {app.fleet.problem}")
            await pilot.pause(0.05)

    async def drive() -> dict[str, float]:
        app = FleetApp(PrometheusClient(url, timeout_s=120), interval_s=3600, at=at)
        begun = time.perf_counter()
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_polls(app, pilot, 1)
            first = time.perf_counter() - begun
            again = time.perf_counter()
            app.fleet.action_poll_now()
            await wait_polls(app, pilot, 2)
            second = time.perf_counter() - again
            stats = {"table_update_s": round(app.fleet.view_s, 3), "rows": len(app.fleet.rows)}
            await pilot.press("q")
        return {"first_rows_s": round(first, 3), "refresh_s": round(second, 3), **stats}

    return asyncio.run(drive())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--minutes", type=float, default=15.0, help="history's length (default 15)")
    parser.add_argument("--step", type=int, default=15, help="seconds between samples (a scrape interval)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--work", type=Path, default=None, help="folder for the history and the TSDB (kept)")
    parser.add_argument("--no-view", action="store_true", help="time the queries only, not the Textual view")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--reuse", action="store_true", help="time the queries on --work's TSDB of an earlier run")
    args = parser.parse_args()
    if shutil.which("promtool") is None or shutil.which("prometheus") is None:
        print("fleet_sim: needs Debian's prometheus (promtool, prometheus)", file=sys.stderr)
        return 2
    work = args.work or Path(tempfile.mkdtemp(prefix="gputop-fleet-sim-"))
    work.mkdir(parents=True, exist_ok=True)
    steps = max(2, int(args.minutes * 60 / args.step))
    end = (int(time.time()) // BLOCK_S) * BLOCK_S - args.step  # inside the last whole block range: one block
    start = end - (steps - 1) * args.step
    if start // BLOCK_S != end // BLOCK_S:
        raise SystemExit(f"--minutes {args.minutes}: the history must fit one 2 h block range")
    result: dict[str, object] = {
        "hosts": args.hosts,
        "gpus": args.gpus,
        "runs": args.hosts * args.gpus,
        "steps": steps,
        "step_s": args.step,
        "machine": f"{platform.node()}, {os.cpu_count()} cores",
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "prometheus": subprocess.run(["prometheus", "--version"], capture_output=True, text=True).stdout.split("\n")[0],
    }
    result["end"] = end
    data = work / "data"
    if args.reuse:  # the TSDB an earlier run of the same fleet left (its end: that run's JSON)
        earlier = json.loads((work / "result.json").read_text())
        end = int(earlier["end"])
        kept = ("end", "generate_s", "lines", "history_bytes", "backfill_s", "tsdb_bytes")
        result.update({k: earlier[k] for k in kept})
    else:
        build_tsdb(args, work, data, start, end, steps, result)
    with prometheus_on(data, work / "prometheus.yml") as (url, ready_s):
        result["prometheus_ready_s"] = round(ready_s, 2)
        client = PrometheusClient(url, timeout_s=120)
        result.update(time_queries(client, float(end), args.repeats))
        result["prometheus_rss_kib"] = rss_kib()
        print(json.dumps(result, indent=2), flush=True)  # the queries' figures, before the view's
        if not args.no_view:
            result["view"] = time_view(url, float(end))
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


def build_tsdb(
    args: argparse.Namespace, work: Path, data: Path, start: int, end: int, steps: int, result: dict[str, object]
) -> None:
    """The fleet's history written as OpenMetrics and backfilled into `data` with promtool, timed."""
    runs = make_fleet(args.hosts, args.gpus)
    history = work / "history.om"
    begun = time.perf_counter()
    lines = write_openmetrics(runs, history, start, steps, args.step)
    result.update(generate_s=round(time.perf_counter() - begun, 2), lines=lines, history_bytes=history.stat().st_size)
    print(
        f"history: {lines:,} samples, {history.stat().st_size / 2**20:.0f} MiB in {result['generate_s']} s", flush=True
    )
    shutil.rmtree(data, ignore_errors=True)
    begun = time.perf_counter()
    backfill = subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(history), str(data)],
        capture_output=True,
        text=True,
    )
    if backfill.returncode:
        raise SystemExit(backfill.stderr[-2000:])
    result["backfill_s"] = round(time.perf_counter() - begun, 2)
    result["tsdb_bytes"] = sum(p.stat().st_size for p in data.rglob("*") if p.is_file())
    history.unlink()
    print(f"backfill: {result['backfill_s']} s, TSDB {result['tsdb_bytes'] / 2**20:.0f} MiB", flush=True)


if __name__ == "__main__":
    sys.exit(main())
