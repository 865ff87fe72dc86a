"""Beyond one machine: `gputop serve` scraped by a real Prometheus, and the TUI in a browser.

The exporter test starts Debian's `prometheus` on loopback, scraping a real
`gputop serve` on local-task every second, and asks Prometheus's HTTP API
what it stored; it skips with the reason when the server is not installed.
The web test starts `gputop web`, fetches its page and opens the websocket a
browser would, until the app's own panes arrive through it (tests/test_web.py
has the rest of the web). Both listen on loopback unless told otherwise, and
a token closes `/metrics` to scrapes without it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import assert_one_line_error, end_child, free_port, poll, run_gputop, spawn_gputop

PROMETHEUS = shutil.which("prometheus")
TOKEN = "s3cret-token-for-the-scrape-0123456789"


def fetch(url: str, timeout: float = 5, token: str | None = None) -> str:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout) as response:
        return str(response.read().decode())


def serve_on(port: int, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return spawn_gputop(
        "serve", "demo:mlp", "--device", "local-task", "--metrics-port", str(port), "--profile-every", "5",
        "--quiet", *extra, env=env,
    )  # fmt: skip


@pytest.fixture()
def served() -> Iterator[tuple[int, subprocess.Popen[str]]]:
    port = free_port()
    child = serve_on(port)  # no --metrics-addr: the default must be this machine only
    yield port, child
    stderr = end_child(child)
    assert "Traceback" not in stderr
    assert f"serving metrics at http://127.0.0.1:{port}/metrics" in stderr and "warning" not in stderr


@pytest.fixture()
def guarded(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    port = free_port()
    child = serve_on(port, "--token", str(token_file))
    yield port, token_file
    stderr = end_child(child)
    assert "Traceback" not in stderr and "(bearer token required)" in stderr


def test_serve_listens_on_loopback_only_by_default(served: tuple[int, subprocess.Popen[str]]) -> None:
    import psutil

    port, child = served
    poll(lambda: fetch(f"http://127.0.0.1:{port}/metrics"))
    listening = [c for c in psutil.Process(child.pid).net_connections("inet") if c.status == psutil.CONN_LISTEN]
    assert [c.laddr for c in listening] == [("127.0.0.1", port)]
    others = [
        a.address
        for addrs in psutil.net_if_addrs().values()
        for a in addrs
        if a.family == socket.AF_INET and not a.address.startswith("127.")
    ]
    if not others:
        pytest.skip("this machine has no non-loopback IPv4 address to knock on")
    for address in others:  # the machine's own outward address: nothing answers there
        with socket.socket() as probe, pytest.raises(ConnectionRefusedError):
            probe.settimeout(5)
            probe.connect((address, port))


def test_a_token_guards_metrics(guarded: tuple[int, Path]) -> None:
    port, _ = guarded
    url = f"http://127.0.0.1:{port}/metrics"
    poll(lambda: fetch(url, token=TOKEN))
    for wrong in (None, "not-the-token-not-the-token"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            fetch(url, token=wrong)
        assert refused.value.code == 401 and refused.value.headers["WWW-Authenticate"].startswith("Bearer")
    assert "gputop_calls_total" in fetch(url, token=TOKEN)


def test_the_token_from_the_environment_and_bad_tokens(tmp_path: Path) -> None:
    port = free_port()
    child = serve_on(port, env={"GPUTOP_TOKEN": TOKEN})
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        poll(lambda: fetch(url, token=TOKEN))
        with pytest.raises(urllib.error.HTTPError):
            fetch(url)
    finally:
        end_child(child)
    short = tmp_path / "short"
    short.write_text("abc\n")
    proc = run_gputop("serve", "demo:mlp", "--device", "cpu", "--metrics-port", "0", "--token", str(short))
    assert_one_line_error(proc, 2, f"--token {short}", "16 characters or more")
    proc = run_gputop("serve", "demo:mlp", "--device", "cpu", "--metrics-port", "0", "--token", str(tmp_path / "no"))
    assert_one_line_error(proc, 2, "no such file")


def test_exposure_is_warned_about() -> None:
    from gputop.core.serving.access import exposure_warning, is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("") and not is_loopback("192.0.2.7")
    assert exposure_warning("metrics", "127.0.0.1", 9470, None) is None
    open_to_all = exposure_warning("metrics", "0.0.0.0", 9470, None)
    assert open_to_all is not None and "open to anyone" in open_to_all and "--token FILE" in open_to_all
    guarded = exposure_warning("gputop web", "0.0.0.0", 8000, TOKEN)
    assert guarded is not None and "asks for the token" in guarded


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
    run = {"device": "local-task", "target": "demo:mlp", "Hostname": socket.gethostname()}
    assert second["gputop_calls"][0].labels == {
        **run,
        "run": second["gputop_calls"][0].labels["run"],
        "function": "mlp",
    }
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
    # local-task: the host's other load is a gauge, and no GPU has processes to count (not zero of them).
    third = poll(lambda: (found := samples_of(fetch(url))).get("gputop_host_other_cores") and found)
    assert 0 <= third["gputop_host_other_cores"][0].value <= (os.cpu_count() or 1)
    assert not third.get("gputop_device_other_processes")
    assert child.poll() is None


@pytest.mark.skipif(PROMETHEUS is None, reason="Prometheus is not installed (apt-get install prometheus)")
def test_prometheus_scrapes_gputop(guarded: tuple[int, Path], tmp_path: Path) -> None:
    """The configuration of docs/prometheus-and-web.md: the bearer token read from a file by Prometheus itself."""
    port, token_file = guarded
    web_port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        "  - job_name: gputop\n"
        f"    authorization: {{credentials_file: '{token_file}'}}\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{port}']}}]\n"
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
        proc = run_gputop("serve", "demo:mlp", "--device", "cpu", "--metrics-port", str(port))
    assert_one_line_error(proc, 2, f"--metrics-port {port} on 127.0.0.1", "in use")


async def test_tui_with_metrics_port() -> None:
    from gputop.tui.app import GputopApp
    from gputop.tui.bridge import EngineBridge, RunConfig

    bridge = EngineBridge(RunConfig(target="demo:mlp", device="local-task", iterations=None))
    port = free_port()
    url = bridge.serve_metrics(port, "127.0.0.1")
    assert url == f"http://127.0.0.1:{port}/metrics"  # the address really bound, said as it is
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
    child = spawn_gputop("web", "--port", str(port), "demo:mlp", "--device", "local-task")
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
        stderr = end_child(child)
        assert "Traceback" not in stderr


def test_web_with_a_bad_target() -> None:
    proc = run_gputop("web", "--port", str(free_port()), "nope.mlir")
    assert_one_line_error(proc, 2, "nope.mlir: no such file")
