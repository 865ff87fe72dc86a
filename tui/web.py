"""`gputop web`: one run, watched from browsers by a few viewers at a time.

The server starts one engine (`gputop serve`, a child process writing a
session folder) or attaches to a run that already exists, and every browser
connection gets a viewer of that run: a `gputop attach` child behind
textual-serve's protocol. N visitors share one workload; `--max-viewers`
bounds them, and the one too many gets a page that says so. Viewers' keys
reach the run through its control channel; their downloads (report,
screenshot) go to their own browser.

Nothing outlives its reason to exist: a viewer ends when its websocket does
(the server tells it, and it also notices a closed stdin or a dead server),
the engine ends when the server does (it watches its parent), and the server
ends when the run does. It listens on 127.0.0.1 unless `--host` says
otherwise; with a token the page, its websocket and its downloads need it
(`?token=` once, then a cookie; or `Authorization: Bearer`).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import os
import shlex
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import aiohttp_jinja2
from aiohttp import WSMsgType, web
from textual_serve import download_manager
from textual_serve.app_service import AppService
from textual_serve.server import Server

from gputop.tui.bridge import EXIT_SIGHUP, EXIT_SIGINT, SessionFollower, bearer_matches, url_host
from gputop.tui.ending import PARENT_ENV, SignalEnding

__all__ = ["RunServer"]

TOKEN_COOKIE = "gputop_token"
DOWNLOAD_CHUNK_S = 30  # how long a download waits for each chunk from its viewer before ending it empty
HEARTBEAT_S = 5.0  # a browser that vanished without closing its socket is noticed within two of these
VIEWER_QUIT_S = 3.0  # a viewer asked to quit gets this long before it is killed
ENGINE_STOP_S = 12.0  # the engine's own ending (report, manifest) gets this long after SIGTERM
MANIFEST_WAIT_S = 120.0

PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>gputop</title>
<style>body {{ background: #0c181f; color: #e0e6ea; font-family: menlo, monospace; margin: 4em; }}
h1 {{ font-size: 1.3em; }} code {{ color: #8fd3ff; }}</style></head>
<body><h1>gputop: {title}</h1><p>{body}</p></body></html>
"""


def _page(status: int, title: str, body: str) -> web.Response:
    text = PAGE.format(title=html.escape(title), body=body)
    return web.Response(status=status, text=text, content_type="text/html")


class RunServer(Server):
    """textual-serve's server, made to serve viewers of one run (see the module's docstring).

    Args:
        folder: the run's session folder (the engine's `--session-dir`, or an existing live session).
        engine: the engine's command line when this server starts the run; None to attach to `folder`.
    """

    def __init__(
        self,
        folder: Path,
        *,
        engine: list[str] | None,
        host: str,
        port: int,
        public_url: str | None,
        max_viewers: int,
        token: str | None,
    ) -> None:
        super().__init__("gputop attach", host=host, port=port, title="gputop", public_url=public_url)
        # textual-serve gives a viewer 4 s per chunk, then ends the download with an empty body: a report or
        # screenshot asked for while the engine keeps a loaded host's cores busy can miss that (seen: an empty
        # SVG on a 2-core CI machine). Its downloads read this module global on every chunk.
        download_manager.DOWNLOAD_TIMEOUT = DOWNLOAD_CHUNK_S
        self.folder = folder
        self.engine_command = engine
        self.given_public_url = public_url
        self.max_viewers = max_viewers
        self.token = token
        self.viewers: set[AppService] = set()
        self.code = 0
        self.finished = threading.Event()  # set once the run and every child are gone
        self._engine: asyncio.subprocess.Process | None = None
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- who may come in ---------------------------------------------------------------
    def _allowed(self, request: web.Request) -> bool:
        if self.token is None:
            return True
        if bearer_matches(request.headers.get("Authorization"), self.token):
            return True
        import hmac

        for given in (request.cookies.get(TOKEN_COOKIE), request.query.get("token")):
            if given and hmac.compare_digest(given.encode(), self.token.encode()):
                return True
        return False

    def _locked_out(self) -> web.Response:
        where = f"http://{url_host(self.host)}:{self.port}/?token=..."
        return _page(
            401,
            "this run needs its token",
            f"Open <code>{html.escape(where)}</code> with the token given to <code>gputop web</code> "
            "(<code>--token FILE</code> or <code>$GPUTOP_TOKEN</code>) on the machine that serves it.",
        )

    def _full(self) -> str:
        return (
            f"this run already has {len(self.viewers)} viewers, the most this server allows "
            f"(--max-viewers {self.max_viewers}); try again when one of them leaves."
        )

    def _base_url(self, request: web.Request) -> str:
        """Where browsers reach this server: --public-url, else the address they used (so the cookie goes along)."""
        if self.given_public_url:
            return self.given_public_url.rstrip("/")
        return f"{request.scheme}://{request.host}"

    # -- routes --------------------------------------------------------------------------
    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        if not self._allowed(request):
            return self._locked_out()
        if self.token is not None and "token" in request.query:  # keep the token out of the address bar
            response = web.Response(status=303, headers={"Location": "/"})
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="Strict")
            return response
        if len(self.viewers) >= self.max_viewers:
            return _page(503, "no room", html.escape(self._full()))
        base = self._base_url(request)
        ws_scheme = "wss" if base.startswith("https") else "ws"
        context = {
            "font_size": 16,
            "app_websocket_url": f"{ws_scheme}:{base.split(':', 1)[1]}/ws",
            "config": {"static": {"url": f"{base}/static/"}},
            "application": {"name": "gputop"},
        }
        return aiohttp_jinja2.render_template("app_index.html", request, context)

    async def handle_download(self, request: web.Request) -> web.StreamResponse:
        if not self._allowed(request):
            return self._locked_out()
        return await super().handle_download(request)

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        if not self._allowed(request):
            raise web.HTTPUnauthorized(text="gputop: this run needs its token")
        websocket = web.WebSocketResponse(heartbeat=HEARTBEAT_S)
        await websocket.prepare(request)
        if len(self.viewers) >= self.max_viewers or self._stop is None or self._stop.is_set():
            await websocket.send_bytes(f"\r\n  gputop: {self._full()}\r\n".encode())
            await websocket.close(code=1013, message=b"too many viewers")
            return websocket
        width = _int(request.query.get("width"), 80)
        height = _int(request.query.get("height"), 24)
        viewer = AppService(
            self.viewer_command(),
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=lambda: _close(websocket),
            download_manager=self.download_manager,
        )
        self.viewers.add(viewer)  # counted before the first await: the limit holds under a rush
        try:
            await viewer.start(width, height)
            messages = asyncio.ensure_future(self._process_messages(websocket, viewer))
            app_task = viewer._task  # textual-serve keeps the viewer's reader task there: it ends with the viewer
            waits: list[asyncio.Future[Any]] = [messages]
            if app_task is not None:
                waits.append(app_task)
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            messages.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await messages
        except asyncio.CancelledError:
            pass
        finally:
            await self._end_viewer(viewer)
            self.viewers.discard(viewer)
            with contextlib.suppress(Exception):
                await websocket.close()
        return websocket

    async def _process_messages(self, websocket: web.WebSocketResponse, app_service: AppService) -> None:
        # Like textual-serve's, but a malformed message is ignored instead of ending the handler.
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = message.json()
                kind, data = envelope[0], envelope[1]
            except (ValueError, TypeError, IndexError, KeyError):
                continue
            if kind == "stdin" and isinstance(data, str):
                await app_service.send_bytes(data.encode("utf-8"))
            elif kind == "resize" and isinstance(data, dict):
                await app_service.set_terminal_size(_int(data.get("width"), 80), _int(data.get("height"), 24))
            elif kind == "ping":
                await websocket.send_json(["pong", data])
            elif kind == "blur":
                await app_service.blur()
            elif kind == "focus":
                await app_service.focus()

    async def _end_viewer(self, viewer: AppService) -> None:
        """Ask the viewer to quit; kill it if it has not within VIEWER_QUIT_S."""
        process = viewer._process
        with contextlib.suppress(asyncio.TimeoutError, Exception):
            await asyncio.wait_for(viewer.stop(), VIEWER_QUIT_S)
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait(), VIEWER_QUIT_S)

    def viewer_command(self) -> str:
        """A viewer: `gputop attach FOLDER`, exec'd (no shell left between), living only as long as this server."""
        argv = ["env", f"{PARENT_ENV}={os.getpid()}", sys.executable, "-m", "gputop.tui", "attach", str(self.folder)]
        return "exec " + shlex.join(argv)

    async def on_startup(self, app: web.Application) -> None:
        return None  # textual-serve prints its logo here; gputop prints one line of its own

    # -- the run ---------------------------------------------------------------------------
    async def _start_engine(self) -> int | None:
        """Start the engine and wait for its session folder; returns its exit code if it ended first."""
        if self.engine_command is None:
            return None
        # In a session of its own: a Ctrl-C in the terminal reaches the whole foreground process group, and the
        # engine would take it and then the server's forwarded one as a second signal ("interrupted again").
        # The server forwards the signal it got, once.
        self._engine = await asyncio.create_subprocess_exec(
            *self.engine_command,
            stdin=asyncio.subprocess.DEVNULL,
            env={**os.environ, PARENT_ENV: str(os.getpid())},
            start_new_session=True,
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + MANIFEST_WAIT_S
        while not (self.folder / "manifest.json").is_file():
            if self._engine.returncode is not None or loop.time() > deadline:
                return await self._engine.wait()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._engine.wait(), 0.1)
        return None

    async def _run_ended(self) -> None:
        """Returns when the run is over: the engine exited, or the attached run's manifest says so."""
        if self._engine is not None:
            self.code = await self._engine.wait()
            return
        follower = SessionFollower(self.folder)
        while follower.ended() is None:
            await asyncio.sleep(1.0)

    async def _stop_engine(self) -> None:
        engine = self._engine
        if engine is None or engine.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            engine.send_signal(self._engine_signal())  # it records `interrupted` and writes its report
        try:
            await asyncio.wait_for(engine.wait(), ENGINE_STOP_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                engine.kill()
            await engine.wait()

    def _engine_signal(self) -> signal.Signals:
        """The signal the server was ended by, for the engine to record the same code (SIGTERM otherwise)."""
        return {EXIT_SIGINT: signal.SIGINT, EXIT_SIGHUP: signal.SIGHUP}.get(self.code, signal.SIGTERM)

    def request_stop(self, code: int) -> None:
        """A signal (from another thread): end the viewers, the engine and the server; exit with `code`."""
        self.code = code
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            loop.call_soon_threadsafe(stop.set)

    def abandon(self, code: int) -> None:
        """A second signal: the engine gets its second one too (it writes its record at once)."""
        engine = self._engine
        if engine is not None and engine.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                engine.send_signal(self._engine_signal())

    async def run(self, announce: str) -> int:
        """Serve until the run ends or a signal comes; returns the exit code."""
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        runner: web.AppRunner | None = None
        try:
            ended_early = await self._start_engine()
            if ended_early is not None:
                return ended_early
            runner = web.AppRunner(await self._make_app(), handle_signals=False, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, self.host, self.port).start()
            print(announce, file=sys.stderr, flush=True)
            stop_wait = asyncio.ensure_future(self._stop.wait())
            run_wait = asyncio.ensure_future(self._run_ended())
            await asyncio.wait([stop_wait, run_wait], return_when=asyncio.FIRST_COMPLETED)
            for task in (stop_wait, run_wait):
                task.cancel()
            if run_wait.done() and not self._stop.is_set():
                print("gputop: the run has ended; closing the viewers", file=sys.stderr, flush=True)
        finally:
            self._stop.set()
            await asyncio.gather(*(self._end_viewer(v) for v in list(self.viewers)), return_exceptions=True)
            await self._stop_engine()
            if runner is not None:
                await runner.cleanup()
            self.finished.set()
        return self.code


async def _close(websocket: web.WebSocketResponse) -> None:
    await websocket.close()


def _int(value: object, default: int) -> int:
    try:
        return int(str(value))
    except ValueError:
        return default


def serve_run(server: RunServer, announce: str) -> int:
    """Run `server` on this thread with gputop's signal ending; returns the exit code."""
    ending = SignalEnding(
        interrupt=server.request_stop,
        wait=lambda timeout: server.finished.wait(timeout),
        abandon=server.abandon,
        face="the web server",
    )
    ending.install()
    try:
        return asyncio.run(server.run(announce))
    finally:
        ending.uninstall()
