"""`gputop fleet --prometheus URL`: every run a real Prometheus scrapes, one row each, in the real app.

The end-to-end test starts Debian's Prometheus (loopback, a temporary folder) scraping three real
`gputop serve` runs, two of gputop's own on the CPU and one watched program, and checks the fleet
view's rows (through Textual's Pilot) against what each run says of itself in its own session
record: its state, its calls' p50/p95 (exact in the run; Prometheus interpolates inside a histogram
bucket, so the check is the bucket), its calls a second (its own count over its own clock), its
memory and growth. One run is scraped under a job that relabels its `Hostname`, as a fleet's rules
would for a run on another host: `enter` there says how to attach from that host. A second test
checks the rows against a history whose truth is known because it was generated (bench/fleet_sim.py,
backfilled with promtool); the rest are the one-line answers to a wrong URL, an unreachable or empty
Prometheus.
"""

from __future__ import annotations

import http.server
import json
import math
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fleet_env import needs_prometheus, prometheus_on

from conftest import assert_one_line_error, free_port, run_gputop

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))  # the fleet simulation's generator
import fleet_sim  # noqa: E402

BUCKETS_S = fleet_sim.BUCKETS_S


def bucket_of(seconds: float) -> int:
    """The index of the histogram bucket `seconds` falls in (gputop's call-time buckets)."""
    return next((i for i, bound in enumerate(BUCKETS_S) if seconds <= bound), len(BUCKETS_S))


# -- one line for every way the URL can be wrong -------------------------------------------------------


@pytest.fixture()
def not_prometheus() -> Iterator[str]:
    """A real HTTP server that is not Prometheus (the standard library's, serving an empty folder)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_wrong_urls_and_no_prometheus_are_one_line(not_prometheus: str) -> None:
    assert_one_line_error(run_gputop("fleet", "--prometheus", "ftp://example.org"), 2, "not an http(s) URL")
    assert_one_line_error(run_gputop("fleet", "--prometheus", "http://host:port"), 2, "not a URL")
    assert_one_line_error(run_gputop("fleet", "--prometheus", not_prometheus), 2, "not a Prometheus HTTP API")
    port = free_port()
    assert_one_line_error(
        run_gputop("fleet", "--prometheus", f"127.0.0.1:{port}"),
        4,
        f"Prometheus at http://127.0.0.1:{port}",
        "is unreachable (connection refused)",
    )
    assert_one_line_error(
        run_gputop("fleet", "--prometheus", "http://no-such-host.invalid:9090"), 4, "unreachable (no such host)"
    )
    assert_one_line_error(run_gputop("fleet", "--prometheus", not_prometheus, "--window", "1 minute"), 2, "--window")
    assert_one_line_error(run_gputop("fleet", "--prometheus", not_prometheus, "--interval", "0"), 2, "--interval")
    proc = run_gputop("fleet")
    assert proc.returncode == 2 and "--prometheus" in proc.stderr and "Traceback" not in proc.stderr


@needs_prometheus
def test_an_empty_prometheus_and_a_wrong_path(tmp_path: Path) -> None:
    with prometheus_on(tmp_path / "prometheus") as url:
        proc = run_gputop("fleet", "--prometheus", url)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines() == [
            f"gputop: no gputop runs in Prometheus at {url} (no gputop_info series there now)"
        ]
        assert not proc.stderr
        # Prometheus itself, at a path where its API is not: its own 404
        assert_one_line_error(
            run_gputop("fleet", "--prometheus", f"{url}/prom"), 2, "not a Prometheus HTTP API (HTTP 404"
        )
        # a URL copied from the browser's graph page or the API's docs is the same Prometheus
        for copied in (f"{url}/graph", f"{url}/api/v1/query", f"{url}/"):
            proc = run_gputop("fleet", "--prometheus", copied, "--json", "-")
            assert proc.returncode == 0 and json.loads(proc.stdout)["url"] == url, proc.stderr


# -- a history whose truth is known: generated, backfilled with promtool --------------------------------


@needs_prometheus
def test_rows_of_a_simulated_history(tmp_path: Path) -> None:
    """Two hosts x 8 GPUs, 10 minutes at 15 s steps: each row against the generator's own parameters."""
    runs = fleet_sim.make_fleet(2, 8, seed=7)
    step, steps = 15, 40
    end = (int(time.time()) // fleet_sim.BLOCK_S) * fleet_sim.BLOCK_S - step
    start = end - (steps - 1) * step
    history = tmp_path / "history.om"
    fleet_sim.write_openmetrics(runs, history, start, steps, step)
    data = tmp_path / "data"
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(history), str(data)],
        check=True,
        capture_output=True,
    )
    from gputop.core.fleet import PrometheusClient, poll_fleet, sort_rows

    with prometheus_on(tmp_path / "prometheus", data=data) as url:
        poll = poll_fleet(PrometheusClient(url), at=float(end))
    assert len(poll.rows) == 16 and set(poll.query_s) == {
        "info", "state", "p50", "p95", "calls", "clock", "memory_used", "memory_total", "growth", "hints"
    }  # fmt: skip
    truth = {(r.labels.split('Hostname="')[1].split('"')[0], r.labels.split('run="')[1].split('"')[0]): r for r in runs}
    span = step * steps
    for row in poll.rows:
        run = truth[(row.host, row.run)]
        assert row.state == run.state
        assert row.sm_clock_hz == run.clock_hz
        assert row.memory_total_bytes == fleet_sim.TOTAL_BYTES
        assert row.growth_bytes_per_call == run.growth
        assert row.hints == run.hints
        assert row.gpu_name == "NVIDIA H200" and row.device == f"cuda:{row.gpu}"
        assert row.functions == len(run.functions)
        top = next(f for f in run.functions if f.name == row.function)
        if run.state in ("finished", "error", "paused"):  # calls stopped: no rate, the whole run's figures
            assert row.over == "run" and row.calls_per_s == 0
            continue
        assert row.over == "window"
        slowed = top.slower_at is not None and span * top.slower_at < span - 60
        median = top.median_s * (3 if slowed else 1)
        # the generator's log-normal median, against Prometheus's interpolation in the bucket it falls in
        assert abs(bucket_of(row.p50_s or 0) - bucket_of(median)) <= 1, (row, median)
        assert row.p95_s is not None and row.p50_s is not None and row.p95_s >= row.p50_s
        rate = sum(
            f.rate / (3 if f.slower_at is not None and span * f.slower_at < span - 60 else 1) for f in run.functions
        )
        assert row.calls_per_s == pytest.approx(rate, rel=0.05)
    worst = sort_rows(poll.rows)
    keys = [r.worst_key() for r in worst]
    assert keys == sorted(keys)
    bad = [r for r in worst if r.state in ("error", "crashed")]
    assert worst[: len(bad)] == bad  # a run in error leads, then the hinted ones
    assert all(math.isfinite(r.p50_s or 0) for r in poll.rows)
    assert socket.gethostname() not in {r.host for r in poll.rows}
