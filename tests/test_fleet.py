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

import contextlib
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
from program_env import PROGRAMS
from prometheus_env import needs_prometheus, prometheus_on
from test_e2e_tmux import GPUTOP, TMUX, Terminal
from textual.pilot import Pilot
from tui_pilot import wait_for

from conftest import assert_one_line_error, end_child, free_port, poll, run_gputop, spawn_gputop
from gputop.core.fleet import FleetRow, PrometheusClient, poll_fleet, sort_rows
from gputop.core.serving.control_socket import ControlUnavailable, ask
from gputop.core.snapshot import RunSnapshot
from gputop.core.store.reader import read_tail
from gputop.tui.fleet import FleetApp
from gputop.tui.screens.fleet import FleetHelpScreen

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))  # the fleet simulation's generator
import fleet_sim  # noqa: E402

BUCKETS_S = fleet_sim.BUCKETS_S


def hello(folder: Path) -> dict[str, object] | None:
    try:
        return ask(folder, "hello")
    except ControlUnavailable:
        return None


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


@pytest.fixture()
def simulated(tmp_path: Path) -> tuple[Path, int, list[fleet_sim.Run]]:
    """A TSDB of 2 hosts x 8 GPUs over 10 minutes at 15 s, backfilled with promtool: its folder, end and truth."""
    runs = fleet_sim.make_fleet(2, 8, seed=7)
    end = (int(time.time()) // fleet_sim.BLOCK_S) * fleet_sim.BLOCK_S - 15
    history = tmp_path / "history.om"
    fleet_sim.write_openmetrics(runs, history, end - 39 * 15, 40, 15)
    command = ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(history), str(tmp_path / "data")]
    subprocess.run(command, check=True, capture_output=True)
    return tmp_path / "data", end, runs


@needs_prometheus
def test_rows_of_a_simulated_history(tmp_path: Path, simulated: tuple[Path, int, list[fleet_sim.Run]]) -> None:
    """Two hosts x 8 GPUs, 10 minutes at 15 s steps: each row against the generator's own parameters."""
    data, end, runs = simulated
    step, steps = 15, 40
    with prometheus_on(tmp_path / "prometheus", data=data) as url:
        poll = poll_fleet(PrometheusClient(url), at=float(end))
    stopped = any(r.state in ("finished", "error", "paused") for r in runs)
    second = {"p50_run", "p95_run"} if stopped else set()  # the whole run's quantiles, for those runs alone
    assert len(poll.rows) == 16 and set(poll.query_s) == {
        "info", "state", "p50", "p95", "calls", "clock", "memory_used", "memory_total", "growth", "hints", *second
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


@needs_prometheus
async def test_the_views_keys_and_a_prometheus_that_goes_away(
    tmp_path: Path, simulated: tuple[Path, int, list[fleet_sim.Run]]
) -> None:
    """The real app over the simulated fleet: s, ?, enter on another host's run; then Prometheus stops: one line."""
    data, end, _ = simulated
    with contextlib.ExitStack() as prometheus:
        url = prometheus.enter_context(prometheus_on(tmp_path / "prometheus", data=data))
        app = FleetApp(url, interval_s=3600, at=float(end))
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.fleet.polls == 1, timeout=30)
            fleet = app.fleet
            assert len(fleet.rows) == 16 and "16 runs on 2 hosts" in str(fleet.title_text())
            first = next(iter(fleet.rows.values()))
            assert first.hints  # worst first: no run in error here, so one with a hint leads
            await pilot.press("s")
            assert fleet.order == "p95" and "p95 first" in str(fleet.title_text())
            p95s = [row.p95_s or 0 for row in fleet.rows.values()]
            assert p95s == sorted(p95s, reverse=True)
            shown = [row.key.value for row in fleet.table.ordered_rows]
            assert shown == list(fleet.rows)  # the table shows the order, not only the list
            await pilot.press("s", "s", "s")
            assert fleet.order == "worst"
            await pilot.press("question_mark")
            assert isinstance(app.screen, FleetHelpScreen)
            await pilot.press("escape")
            assert app.screen is fleet
            await pilot.press("down", "enter")
            row = fleet.cursor_row()
            assert row is not None and fleet.said[1] == (
                f"run {row.run} is on host {row.host}: ssh {row.host} gputop attach {row.run}"
            )
            assert app.is_running
            prometheus.close()  # Prometheus stops: the next poll says so in the title, and the rows stay
            await pilot.press("r")
            await wait_for(pilot, lambda: fleet.problem is not None, timeout=30)
            title = str(fleet.title_text())
            assert f"Prometheus at {url} is unreachable (connection refused) (since " in title, title
            assert len(fleet.rows) == 16 and fleet.table.row_count == 16
            await pilot.press("q")
        assert app.return_value is None


# -- three real runs, a real Prometheus, the real app ------------------------------------------------------


def serve(folder: Path, port: int, *args: str) -> subprocess.Popen[str]:
    own = ["--metrics-port", str(port), "--session-dir", str(folder), "--record-every", "1", "--quiet"]
    if args[0] == "--":  # a watched program: the run options are gputop's own runs'
        return spawn_gputop("serve", *own, *args)
    return spawn_gputop("serve", *args, *own, "--profile-every", "0")


def own_record(folder: Path) -> RunSnapshot:
    """What the run says of itself: the newest snapshot in its own session record (written every second)."""
    return read_tail(folder, 1)[-1]


@needs_prometheus
async def test_the_fleet_view_against_three_served_runs(
    tmp_path: Path, program_python: Path, program_assets: tuple[Path, Path]
) -> None:
    vmfb, irpa = program_assets
    names = ("mlp-task", "mlp-sync", "held")
    folders = {name: tmp_path / name for name in names}
    ports = {name: free_port() for name in names}
    program = [str(program_python), str(PROGRAMS / "hold_results.py"), str(vmfb), str(irpa), "10000000"]
    children = [
        serve(folders["mlp-task"], ports["mlp-task"], "demo:mlp", "--device", "local-task"),
        serve(folders["mlp-sync"], ports["mlp-sync"], "demo:mlp", "--device", "local-sync"),
        serve(folders["held"], ports["held"], "--", *program),
    ]
    target = {name: f"127.0.0.1:{port}" for name, port in ports.items()}
    here = socket.gethostname()
    try:
        for folder in folders.values():
            poll(lambda f=folder: (hello(f) or {}).get("state") == "running", timeout=180, every=0.2)
        jobs = {"gputop": [target["mlp-task"], target["held"]], "far": [target["mlp-sync"]]}
        with prometheus_on(tmp_path / "prometheus", jobs, hosts={"far": "far-node"}) as url:
            client = PrometheusClient(url)

            def ready() -> bool:
                rows = {row.run: row for row in poll_fleet(client).rows}
                return (
                    set(rows) == set(names)
                    and all((r.calls_per_s or 0) > 0 for r in rows.values())
                    and bool(rows["held"].hints)
                )

            poll(ready, timeout=180, every=1.0)
            app = FleetApp(url, interval_s=1.0)
            async with app.run_test(size=(120, 40)) as pilot:
                await wait_for(pilot, lambda: len(app.fleet.rows) == 3, timeout=30)
                polls = app.fleet.polls
                await wait_for(pilot, lambda: app.fleet.polls >= polls + 2, timeout=30)  # refreshed live
                rows = {row.run: row for row in app.fleet.rows.values()}
                own = {name: own_record(folder) for name, folder in folders.items()}
                check_rows_against_runs(rows, own, here)
                assert next(iter(app.fleet.rows.values())).run == "held"  # worst first: the hint leads
                shown = [row.key.value for row in app.fleet.table.ordered_rows]
                assert shown[0] == rows["held"].key and len(shown) == 3
                await check_enter(app, pilot, rows)
            listed = json.loads(run_gputop("fleet", "--prometheus", url, "--json", "-").stdout)
            assert {(r["host"], r["run"]) for r in listed["rows"]} == {(r.host, r.run) for r in rows.values()}
            assert listed["rows"][0]["run"] == "held"
            if TMUX:
                attach_in_a_terminal(url, tmp_path)
    finally:
        for child in children:
            assert "Traceback" not in end_child(child)


def check_rows_against_runs(rows: dict[str, FleetRow], own: dict[str, RunSnapshot], here: str) -> None:
    """Each fleet row against its run's own record (the run's exact figures; Prometheus's interpolated ones)."""
    assert rows["mlp-task"].host == here and rows["held"].host == here and rows["mlp-sync"].host == "far-node"
    for name, row in rows.items():
        snap = own[name]
        assert row.state == snap.state == "running"
        assert row.target == snap.target
        if snap.program is not None:  # a watched program: its busiest function's own figures
            calls = snap.program.functions[0]
            p50_ms, p95_ms, rate = calls.p50_ms, calls.p95_ms, calls.recent_calls_per_s
            assert row.function.endswith(calls.name) and row.program
        else:
            p50_ms, p95_ms, rate = snap.calls.p50_ms, snap.calls.p95_ms, snap.calls.recent_calls_per_s
            assert row.device == snap.device.id if snap.device else row.device
        assert p50_ms is not None and p95_ms is not None and rate and row.p50_s and row.p95_s and row.calls_per_s
        # Prometheus interpolates inside gputop's histogram buckets: the same bucket, or the next one
        assert abs(bucket_of(row.p50_s) - bucket_of(p50_ms / 1e3)) <= 1, (name, row.p50_s, p50_ms)
        assert abs(bucket_of(row.p95_s) - bucket_of(p95_ms / 1e3)) <= 1, (name, row.p95_s, p95_ms)
        assert row.over == "window"
        assert 0.5 < row.calls_per_s / rate < 2, (name, row.calls_per_s, rate)  # a 1 m rate against the last seconds
        device = snap.memory.devices[0] if snap.memory and snap.memory.devices else None
        if device is not None and device.device_total_bytes:
            assert row.memory_total_bytes == device.device_total_bytes
        assert row.sm_clock_hz is None  # the CPU has no SM clock: no figure, not a zero
    held = own["held"].program
    assert held is not None and held.growth is not None
    assert rows["held"].growth_bytes_per_call == held.growth.bytes_per_call == 32 * 512 * 4
    assert rows["held"].hints and not rows["mlp-task"].hints and not rows["mlp-sync"].hints


async def check_enter(app: FleetApp, pilot: Pilot[object], rows: dict[str, FleetRow]) -> None:
    """`enter` on the run from another host says how to attach there; on a live run here it attaches."""
    table = app.fleet.table
    table.move_cursor(row=table.get_row_index(rows["mlp-sync"].key))
    await pilot.press("enter")
    far = rows["mlp-sync"]
    assert app.fleet.said[1] == f"run {far.run} is on host far-node: ssh far-node gputop attach {far.run}"
    assert f"far-node gputop attach {far.run}" in str(app.fleet.query_one("#fleet-detail").render())
    assert app.is_running
    table.move_cursor(row=table.get_row_index(rows["mlp-task"].key))
    await pilot.press("enter")
    await pilot.pause(0.2)
    assert app.return_value is not None and app.return_value.name == "mlp-task"


def attach_in_a_terminal(url: str, tmp_path: Path) -> None:
    """The installed `gputop fleet` in tmux: enter on the first row (the watched program, here and live) gives way
    to `gputop attach`; its q comes back to the fleet, whose q ends the command with 0."""
    exit_file = tmp_path / "fleet_exit"
    term = Terminal(f"{GPUTOP} fleet --prometheus {url} --interval 1; echo $? > {exit_file}; sleep 60")
    try:
        term.wait_for(lambda s: "3 runs on 1 host" in s or "3 runs on 2 hosts" in s)
        term.keys("Enter")
        term.wait_for(lambda s: "watching" in s and "attached pid" in s and "gputop fleet" not in s)
        term.keys("q")
        term.wait_for(lambda s: "gputop fleet" in s and "3 runs on 2 hosts" in s)
        term.keys("q")
        poll(exit_file.exists, timeout=30, every=0.2)
        assert exit_file.read_text().strip() == "0"
        assert "Traceback" not in term.screen()
    finally:
        term.close()
