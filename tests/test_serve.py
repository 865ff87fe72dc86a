"""Beyond one machine: `gputop serve` scraped by a real Prometheus, and the TUI in a browser.

The exporter test starts Debian's `prometheus` on loopback, scraping a real
`gputop serve` on local-task every second, and asks Prometheus's HTTP API
what it stored; it skips with the reason when the server is not installed.
The web test starts `gputop web`, fetches its page and opens the websocket a
browser would, until the app's own panes arrive through it.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import assert_one_line_error, poll, run_gputop

PROMETHEUS = shutil.which("prometheus")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def fetch(url: str, timeout: float = 5) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return str(response.read().decode())


def gputop_child(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "gputop.tui", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def stop(child: subprocess.Popen[str]) -> str:
    if child.poll() is None:
        child.terminate()
    try:
        _, stderr = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()
        _, stderr = child.communicate()
    return stderr or ""


@pytest.fixture()
def served() -> Iterator[tuple[int, subprocess.Popen[str]]]:
    port = free_port()
    child = gputop_child(
        "serve", "demo:mlp", "--device", "local-task", "--metrics-port", str(port),
        "--metrics-addr", "127.0.0.1", "--profile-every", "5", "--quiet",
    )  # fmt: skip
    yield port, child
    stderr = stop(child)
    assert "Traceback" not in stderr


def samples_of(text: str) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(text):
        found.setdefault(family.name, []).extend(family.samples)
    return found


def test_metrics_page(served: tuple[int, subprocess.Popen[str]]) -> None:
    port, child = served
    url = f"http://127.0.0.1:{port}/metrics"

    def kernels_seen() -> dict[str, list[Any]] | None:
        found = samples_of(fetch(url))
        return found if found.get("gputop_kernel_avg_seconds") else None

    first = poll(kernels_seen)
    calls = first["gputop_calls"][0].value
    second = poll(lambda: (found := samples_of(fetch(url)))["gputop_calls"][0].value > calls and found)
    assert second["gputop_calls"][0].labels == {"device": "local-task"}
    buckets = [s for s in second["gputop_call_duration_seconds"] if s.name.endswith("_bucket")]
    assert buckets[-1].labels["le"] == "+Inf" and buckets[-1].value >= second["gputop_calls"][0].value
    kernels = {s.labels["kernel"] for s in second["gputop_kernel_avg_seconds"]}
    assert any(name.startswith("mlp_dispatch_0_matmul") for name in kernels), kernels
    live = {s.labels["memory_type"]: s.value for s in second["gputop_memory_live_bytes"]}
    assert live["DEVICE_LOCAL"] > 0
    assert second["gputop_info"][0].labels["target"] == "demo:mlp"
    assert second["gputop_errors"][0].value == 0 and second["gputop_captures"][0].value == 0
    state = {s.labels["state"]: s.value for s in second["gputop_run_state"]}
    assert state["running"] == 1
    assert child.poll() is None


@pytest.mark.skipif(PROMETHEUS is None, reason="Prometheus is not installed (apt-get install prometheus)")
def test_prometheus_scrapes_gputop(served: tuple[int, subprocess.Popen[str]], tmp_path: Path) -> None:
    port, _ = served
    web_port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        f"  - job_name: gputop\n    static_configs: [{{targets: ['127.0.0.1:{port}']}}]\n"
    )
    server = subprocess.Popen(
        [
            str(PROMETHEUS),
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{web_port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    api = f"http://127.0.0.1:{web_port}/api/v1"

    def query(expr: str) -> list[dict[str, Any]]:
        data = json.loads(fetch(f"{api}/query?query={urllib.parse.quote(expr)}"))
        assert data["status"] == "success", data
        return list(data["data"]["result"])

    try:
        poll(lambda: fetch(f"http://127.0.0.1:{web_port}/-/ready"))
        first = poll(lambda: query("gputop_calls_total"))
        count = float(first[0]["value"][1])
        poll(lambda: (rows := query("gputop_calls_total")) and float(rows[0]["value"][1]) > count)
        kernels = poll(lambda: query("gputop_kernel_avg_seconds"))
        assert {row["metric"]["device"] for row in kernels} == {"local-task"}
        assert any(row["metric"]["kernel"].startswith("mlp_dispatch") for row in kernels)
        assert poll(lambda: query('up{job="gputop"} == 1'))
        assert poll(lambda: query("rate(gputop_calls_total[5s]) > 0"), timeout=60)
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_metrics_port_in_use() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run_gputop("serve", "demo:mlp", "--device", "cpu", "--metrics-port", str(port), "--metrics-addr",
                          "127.0.0.1")  # fmt: skip
    assert_one_line_error(proc, 2, f"--metrics-port {port}", "in use")


async def test_tui_with_metrics_port() -> None:
    from gputop.tui.app import GputopApp
    from gputop.tui.bridge import EngineBridge, RunConfig

    bridge = EngineBridge(RunConfig(target="demo:mlp", device="local-task", iterations=None))
    port = free_port()
    url = bridge.serve_metrics(port, "127.0.0.1")
    assert url == f"http://127.0.0.1:{port}/metrics"
    app = GputopApp(bridge)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            deadline = time.monotonic() + 120
            count = 0.0
            while time.monotonic() < deadline and count == 0:
                await pilot.pause(0.5)
                text = await asyncio.to_thread(fetch, f"http://127.0.0.1:{port}/metrics")
                count = samples_of(text)["gputop_calls"][0].value if "gputop_calls_total" in text else 0.0
            assert count > 0
    finally:
        bridge.stop_metrics()


async def test_web_serves_the_tui() -> None:
    import aiohttp

    port = free_port()
    child = gputop_child("web", "--port", str(port), "demo:mlp", "--device", "local-task")
    try:
        page = poll(lambda: fetch(f"http://localhost:{port}/"), timeout=60)
        assert "<div>gputop</div>" in page and f"ws://localhost:{port}/ws" in page and "textual.js" in page
        screen = ""
        async with (
            aiohttp.ClientSession() as client,
            client.ws_connect(f"ws://localhost:{port}/ws?width=120&height=40") as ws,
        ):
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                message = await ws.receive(timeout=120)
                if message.type not in (aiohttp.WSMsgType.TEXT, aiohttp.WSMsgType.BINARY):
                    break
                data = message.data if isinstance(message.data, str) else message.data.decode("utf-8", "replace")
                screen += data
                plain = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", screen)
                if "Memory" in plain and "Kernels" in plain:
                    break
        plain = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", screen)
        assert "Memory" in plain and "Kernels" in plain, plain[-2000:]
    finally:
        stderr = stop(child)
        assert "Traceback" not in stderr


def test_web_with_a_bad_target() -> None:
    proc = run_gputop("web", "--port", str(free_port()), "nope.mlir")
    assert_one_line_error(proc, 2, "nope.mlir: no such file")
