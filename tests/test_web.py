"""`gputop web` serves one run to a few browsers, and nothing outlives its reason to exist.

Every test starts the real `gputop web` on loopback and talks to it as a
browser's `textual.js` does (`tests/web_client.py`: the websocket, terminal
frames, `["stdin", key]`, delivery meta messages). Viewers are counted as the
processes the server runs: one `gputop serve` engine for the run, one
`gputop attach` per browser. Where Debian's chromium is installed, a real
headless browser loads the page too.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import psutil
import pytest
from web_client import Viewer, plain, words

from conftest import assert_one_line_error, end_child, free_port, poll, processes_naming, run_gputop, spawn_gputop

CLIENT = Path(__file__).parent / "web_client.py"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
TOKEN = "0123456789abcdef0123456789abcdef"


class Web:
    """A running `gputop web` and what it runs."""

    def __init__(self, child: subprocess.Popen[str], port: int) -> None:
        self.child = child
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.ws_url = f"ws://127.0.0.1:{port}/ws?width=120&height=40"

    def children(self, kind: str) -> list[psutil.Process]:
        """The server's live children running `gputop KIND` (serve: the engine; attach: viewers)."""
        try:
            found = psutil.Process(self.child.pid).children()
        except psutil.NoSuchProcess:
            return []
        return [p for p in found if _is_gputop(p, kind)]

    def session_dir(self) -> Path:
        [engine] = self.children("serve")
        cmdline = engine.cmdline()
        return Path(cmdline[cmdline.index("--session-dir") + 1])


def _is_gputop(process: psutil.Process, kind: str) -> bool:
    try:
        cmdline = process.cmdline()
    except psutil.Error:
        return False
    return (
        process.is_running()
        and process.status() != psutil.STATUS_ZOMBIE
        and "gputop.tui" in cmdline
        and (kind in cmdline)
    )


def start_web(*extra: str, target: tuple[str, ...] = ("demo:mlp", "--device", "local-task")) -> Web:
    port = free_port()
    child = spawn_gputop("web", "--port", str(port), *extra, *target)
    web = Web(child, port)
    try:
        poll(lambda: child.poll() is not None or fetch(web.url + "/")[0], timeout=120)  # any answer: it listens
    except AssertionError:
        end_child(child)  # a server that never answered must not outlive the test
        raise
    assert child.poll() is None, child.communicate()[1]
    return web


@pytest.fixture()
def web() -> Iterator[Web]:
    served = start_web("--max-viewers", "5")
    yield served
    stderr = end_child(served.child)
    assert "Traceback" not in stderr


def client_process(web: Web, token: str | None = None) -> subprocess.Popen[str]:
    """A browser in a process of its own, so that it can vanish as one does (kill -9)."""
    args = [sys.executable, str(CLIENT), web.ws_url] + ([token] if token else [])
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_ready(client: subprocess.Popen[str], timeout: float = 180) -> None:
    assert client.stdout is not None
    deadline = time.monotonic() + timeout
    line = ""
    while time.monotonic() < deadline and client.poll() is None:
        line = client.stdout.readline()
        if line.strip() == "READY":
            return
    raise AssertionError(f"the viewer never showed the panes: {line!r} {client.stderr.read() if client.stderr else ''}")


def fetch(url: str, headers: dict[str, str] | None = None) -> tuple[int, str, Any]:
    request = urllib.request.Request(url, headers=headers or {})
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, response.read().decode(), response.headers
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(), error.headers


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def test_five_viewers_share_one_engine_and_the_sixth_is_told(web: Web) -> None:
    clients = [client_process(web) for _ in range(5)]
    try:
        for client in clients:
            wait_ready(client)
        assert len(web.children("serve")) == 1, "one run, one engine, whoever watches"
        assert len(web.children("attach")) == 5
        engine = web.children("serve")[0]
        assert engine.cmdline().count("demo:mlp") == 1

        status, page, _ = fetch(web.url + "/")
        assert status == 503 and "already has 5 viewers" in page and "--max-viewers 5" in page

        async def sixth() -> Viewer:
            async with aiohttp.ClientSession() as session, session.ws_connect(web.ws_url) as ws:
                viewer = Viewer(ws)
                await viewer.read_until(lambda v: v.closed, timeout=30)
                return viewer

        refused = asyncio.run(sixth())
        assert "already has 5 viewers" in plain(refused.screen)
        assert len(web.children("attach")) == 5 and len(web.children("serve")) == 1
    finally:
        for client in clients:
            client.kill()
            client.wait()


def test_a_vanished_browser_leaves_no_viewer_and_a_killed_server_leaves_nothing() -> None:
    web = start_web("--max-viewers", "2")
    client = client_process(web)
    try:
        wait_ready(client)
        folder = web.session_dir()
        [viewer] = web.children("attach")
        client.kill()  # the browser dies: no close frame, its socket just goes
        client.wait()
        started = time.monotonic()
        psutil.wait_procs([viewer], timeout=10)
        assert not viewer.is_running() or viewer.status() == psutil.STATUS_ZOMBIE, "the viewer outlived its browser"
        assert time.monotonic() - started < 10
        assert len(web.children("serve")) == 1  # the run goes on for the next visitor

        second = client_process(web)
        wait_ready(second)
        web.child.kill()  # the server dies outright: no one tells its children
        web.child.wait()
        second.kill()
        second.wait()
        poll(lambda: not processes_naming(folder), timeout=10, every=0.2)
        manifest = json.loads((folder / "manifest.json").read_text())
        assert manifest["state"] == "stopped" and manifest["exit_code"] == 0  # it noticed, and wrote its ending
        assert (folder / "report.json").is_file() and not (folder / "control.sock").exists()
    finally:
        for child in (client, web.child):
            if child.poll() is None:
                child.kill()
                child.wait()


def test_sigterm_ends_the_server_its_viewers_and_its_engine(web: Web) -> None:
    client = client_process(web)
    try:
        wait_ready(client)
        folder = web.session_dir()
        viewers = web.children("attach")
        started = time.monotonic()
        web.child.send_signal(signal.SIGTERM)
        web.child.wait(timeout=30)
        assert web.child.returncode == 143 and time.monotonic() - started < 20
        assert not processes_naming(folder)
        assert all(not v.is_running() or v.status() == psutil.STATUS_ZOMBIE for v in viewers)
        manifest = json.loads((folder / "manifest.json").read_text())
        assert manifest["state"] == "interrupted" and manifest["exit_code"] == 143
        assert json.loads((folder / "report.json").read_text())["state"] == "interrupted"
    finally:
        client.kill()
        client.wait()


def test_sigterm_to_a_viewer_ends_it_and_not_the_run(web: Web) -> None:
    client = client_process(web)
    try:
        wait_ready(client)
        [viewer] = web.children("attach")
        started = time.monotonic()
        viewer.send_signal(signal.SIGTERM)
        viewer.wait(timeout=15)  # the server reaps it (its exit code, 143, is checked in test_signals)
        assert time.monotonic() - started < 10
        client.wait(timeout=15)  # its websocket closes with it
        folder = web.session_dir()
        assert json.loads((folder / "manifest.json").read_text())["state"] == "running"
    finally:
        client.kill()
        client.wait()


async def test_downloads_go_to_the_browser(web: Web) -> None:
    async with aiohttp.ClientSession() as session, session.ws_connect(web.ws_url) as ws:
        viewer = Viewer(ws)
        assert await viewer.panes_shown()
        # the panes come up while the demo still compiles: a report with calls needs the calls first
        assert await viewer.read_until(lambda v: re.search(r"calls [1-9]\d*\s+[\d.]+/s", plain(v.screen)) is not None)

        async def delivered(key: str) -> tuple[str, str]:
            await viewer.press(key)
            await viewer.read_until(lambda v: any(m[0] == "deliver_file_start" for m in v.meta), timeout=60)
            [start] = [m for m in viewer.meta if m[0] == "deliver_file_start"]
            viewer.meta.clear()
            status, headers, body = await viewer.download(session, f"{web.url}/download/{start[1]}")
            assert status == 200
            return headers["Content-Disposition"], body

        disposition, text = await delivered("e")
        report = json.loads(text)
        assert "gputop-report-" in disposition and report["calls"]["count"] > 0 and report["state"] == "running"
        disposition, svg = await delivered("s")
        assert svg.lstrip().startswith("<svg") and ".svg" in disposition
    folder = web.session_dir()
    assert not list(folder.glob("report-*.json")) and not list(folder.glob("*.svg")), "nothing written on the server"


async def test_a_browsers_keys_reach_the_engine_in_its_own_process(web: Web) -> None:
    """space, p and r from a browser: the engine (another process) pauses, resumes and profiles; r is refused."""
    from gputop.core.serving.control_socket import ask

    async with aiohttp.ClientSession() as session, session.ws_connect(web.ws_url) as ws:
        viewer = Viewer(ws)
        assert await viewer.panes_shown()
        assert await viewer.read_until(lambda v: re.search(r"calls [1-9]\d*\s+[\d.]+/s", plain(v.screen)) is not None)
        folder = web.session_dir()
        [engine] = web.children("serve")
        assert ask(folder, "hello")["pid"] == engine.pid  # the run is the engine's, not the viewer's
        await viewer.press(" ")
        await viewer.read_until(lambda v: ask(folder, "hello")["state"] == "paused", timeout=30)
        await viewer.press(" ")
        await viewer.read_until(lambda v: ask(folder, "hello")["state"] == "running", timeout=30)
        await viewer.press("p")
        assert await viewer.read_until(lambda v: "matmul_256x1024x1024" in plain(v.screen), timeout=180)
        await viewer.press("r")
        assert await viewer.read_until(lambda v: "reload it there" in words(v.screen), timeout=30)
        assert ask(folder, "hello")["state"] == "running"


async def test_a_token_guards_the_page_its_socket_and_downloads(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    web = start_web("--token", str(token_file))
    try:
        status, page, _ = fetch(web.url + "/")
        assert status == 401 and "needs its token" in page
        assert fetch(web.url + "/?token=wrong-token-wrong-token")[0] == 401
        status, _, headers = fetch(web.url + f"/?token={TOKEN}")
        assert status == 303 and headers["Location"] == "/"
        cookie = headers["Set-Cookie"].split(";")[0]
        assert "HttpOnly" in headers["Set-Cookie"]
        status, page, _ = fetch(web.url + "/", {"Cookie": cookie})
        assert status == 200 and "textual.js" in page
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(web.ws_url)
            assert refused.value.status == 401
            headers = {"Authorization": f"Bearer {TOKEN}"}
            async with session.ws_connect(web.ws_url, headers=headers) as ws:
                assert await Viewer(ws).panes_shown()
            async with session.get(f"{web.url}/download/anything") as response:
                assert response.status == 401
    finally:
        stderr = end_child(web.child)
    assert "the token is required" in stderr and "warning" not in stderr  # loopback: no warning


def test_web_refuses_both_a_target_and_attach() -> None:
    from conftest import run_gputop

    proc = run_gputop("web", "--attach", "x", "demo:mlp")
    assert proc.returncode == 2 and "not both" in proc.stderr


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_a_real_browser_that_dies_leaves_no_viewer() -> None:
    """The issue's own reproduction: headless Chromium loads the page, then dies with SIGKILL."""
    web = start_web("--max-viewers", "2")
    profile = tempfile.mkdtemp(prefix="gputop-chromium-")
    browser = subprocess.Popen(
        [str(CHROMIUM), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={profile}", "--window-size=1400,1000", web.url + "/"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        viewer = poll(lambda: web.children("attach"), timeout=180, every=0.5)[0]
        folder = web.session_dir()
        # The viewer draws for the browser: its screen reaches the page (the engine's samples keep coming).
        poll(lambda: viewer.cpu_times().user > 0.5, timeout=120, every=0.5)
        os.killpg(browser.pid, signal.SIGKILL)  # chromium and every one of its helper processes
        browser.wait()
        psutil.wait_procs([viewer], timeout=10)
        assert not viewer.is_running() or viewer.status() == psutil.STATUS_ZOMBIE, "the viewer outlived its browser"
        assert len(web.children("serve")) == 1 and json.loads((folder / "manifest.json").read_text())["state"] in (
            "running",
            "paused",
        )
    finally:
        if browser.poll() is None:
            os.killpg(browser.pid, signal.SIGKILL)
        end_child(web.child)
        shutil.rmtree(profile, ignore_errors=True)


def test_one_ctrl_c_in_the_terminal_ends_the_server_and_its_engine_once() -> None:
    """A terminal's Ctrl-C reaches its whole foreground process group: one interruption, said once, code 130."""
    port = free_port()
    child = subprocess.Popen(
        [sys.executable, "-m", "gputop.tui", "web", "--port", str(port), "demo:mlp", "--device", "local-task"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,  # a process group of its own, as a shell gives a foreground job
    )
    served = Web(child, port)
    try:
        poll(lambda: child.poll() is not None or served.children("serve"), timeout=120)
        folder = served.session_dir()
        poll(lambda: json.loads((folder / "manifest.json").read_text())["state"] == "running", timeout=180)
        os.killpg(child.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        child.wait(timeout=30)
    finally:
        stderr = end_child(child)
    assert child.returncode == 130, stderr
    assert "interrupted again" not in stderr and "Traceback" not in stderr, stderr
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["state"] == "interrupted" and manifest["exit_code"] == 130
    assert not processes_naming(folder)


def test_web_options_after_the_target_are_webs_own() -> None:
    """`gputop web demo:mlp --device local-task --port P`: the server takes --port, the engine the rest."""
    port = free_port()
    child = spawn_gputop("web", "demo:mlp", "--device", "local-task", "--port", str(port), "--max-viewers", "2")
    served = Web(child, port)
    try:
        poll(lambda: child.poll() is not None or fetch(served.url + "/")[0], timeout=120)
        assert child.poll() is None
        [engine] = poll(lambda: served.children("serve"), timeout=60)
        cmdline = engine.cmdline()
        assert "--device" in cmdline and "--port" not in cmdline and "--max-viewers" not in cmdline
    finally:
        stderr = end_child(child)
    assert f"127.0.0.1:{port} (at most 2 viewers" in stderr and "unrecognized arguments" not in stderr, stderr


def test_a_web_option_given_twice_is_one_line() -> None:
    proc = run_gputop("web", "--port", "8123", "demo:mlp", "--device", "local-task", "--port", "8124")
    assert_one_line_error(proc, 2, "--port given twice (8123 and 8124)")
