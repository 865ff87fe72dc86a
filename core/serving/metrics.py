"""The live run in Prometheus's format, for fleets that already scrape everything.

Users with many GPU servers run Prometheus and Grafana; gputop joins them
instead of inventing a collector, with dcgm-exporter's GPU labels on its
per-GPU series (`labels.py`) and the run's on every series (`families.py`). Nothing is updated per call: a custom
collector turns the newest `RunSnapshot` into metric families when Prometheus
scrapes, so the call loop pays nothing for being watched. The call-time
histogram comes from exact bucket counts the engine keeps over the whole run.
Names follow Prometheus's conventions: base units (`_seconds`, `_bytes`) and
`_total` on counters. The server listens on 127.0.0.1 unless told otherwise and,
given a token, answers only scrapes that carry it (`Authorization: Bearer`).

Connections cost no thread until they send something: a quiet one waits in one
selector and is closed after `IDLE_S`; at most `MAX_HANDLERS` requests are
served at once, each with a `REQUEST_TIMEOUT_S` socket timeout, and at most
`MAX_WAITING` connections wait. Hundreds of half-open connections leave the
thread count bounded and a real scrape answered.
"""

from __future__ import annotations

import contextlib
import errno
import selectors
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.registry import Collector

from gputop.core.errors import UsageError
from gputop.core.serving.access import LOOPBACK, bearer_matches, url_host
from gputop.core.serving.families import METRICS, PHASES, STATES, KeptFunctions, Scrape
from gputop.core.serving.labels import GpuLabels, run_labels
from gputop.core.snapshot import RunSnapshot

__all__ = [
    "DEFAULT_PORT",
    "IDLE_S",
    "MAX_HANDLERS",
    "MAX_WAITING",
    "METRICS",
    "PHASES",
    "REQUEST_TIMEOUT_S",
    "STATES",
    "MetricsServer",
    "SnapshotCollector",
]

DEFAULT_PORT = 9470


class SnapshotCollector(Collector):
    """Metric families from the newest snapshot, computed at scrape time, each with the run's labels."""

    def __init__(self, current: Callable[[], RunSnapshot | None], versions: dict[str, str | None]) -> None:
        self._current = current
        self._versions = versions
        self._gpus = GpuLabels()  # NVML asked once per device, not per scrape
        self._kept = KeptFunctions()

    def collect(self) -> Iterator[Any]:
        snap = self._current()
        if snap is None:
            return
        run = run_labels(snap, self._gpus.hostname)
        yield from Scrape(snap, run, self._gpus.of(snap.device), self._kept).families(self._versions)


MAX_HANDLERS = 16  # requests served at once, each on its own thread
MAX_WAITING = 256  # connections that have sent nothing yet; more are closed at once
IDLE_S = 10.0  # a connection that sends nothing for this long is closed
REQUEST_TIMEOUT_S = 10.0  # a socket read or write of a request being served


class _QuietHandler(WSGIRequestHandler):
    """No access log on the terminal: scrapes come every few seconds for days. A stalled peer times out."""

    timeout = REQUEST_TIMEOUT_S

    def log_message(self, format: str, *args: Any) -> None:
        return


class _BoundedServer(WSGIServer):
    """A WSGI server whose connections wait, threadless, until they send something; few are served at once."""

    request_queue_size = 128  # the listen backlog: a burst of scrapers is accepted, not refused

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Before the base class binds: a port in use closes the server before it ever listens.
        self._slots = threading.BoundedSemaphore(MAX_HANDLERS)
        self._waiting: dict[socket.socket, tuple[Any, float]] = {}
        self._lock = threading.Lock()
        self._selector = selectors.DefaultSelector()
        self._closed = threading.Event()
        super().__init__(*args, **kwargs)

    def server_activate(self) -> None:
        super().server_activate()
        threading.Thread(target=self._watch, name="gputop-metrics-wait", daemon=True).start()

    def process_request(self, request: Any, client_address: Any) -> None:
        """Called by the accepting thread: the connection waits (no thread) until it has something to read."""
        with self._lock:
            if self._closed.is_set() or len(self._waiting) >= MAX_WAITING:
                self.shutdown_request(request)
                return
            self._waiting[request] = (client_address, time.monotonic() + IDLE_S)
            self._selector.register(request, selectors.EVENT_READ)

    def _watch(self) -> None:
        while not self._closed.is_set():
            with self._lock:
                empty = not self._waiting
            if empty:
                time.sleep(0.05)
                continue
            try:
                ready = [key.fileobj for key, _ in self._selector.select(timeout=0.1)]
            except (OSError, ValueError):  # closed meanwhile
                continue
            now = time.monotonic()
            with self._lock:
                expired = [s for s, (_, deadline) in self._waiting.items() if deadline < now]
                started = []
                for sock in ready:
                    if sock in self._waiting and self._slots.acquire(blocking=False):
                        started.append((sock, self._release(sock)[0]))
                for sock in expired:
                    if sock in self._waiting:
                        self._release(sock)
                        self.shutdown_request(sock)
            for sock, address in started:
                threading.Thread(target=self._serve, args=(sock, address), name="gputop-metrics", daemon=True).start()
            if ready and not started:
                time.sleep(0.02)  # every slot busy: the ready ones wait for the next free one

    def _release(self, sock: Any) -> tuple[Any, float]:
        with contextlib.suppress(KeyError, ValueError, OSError):
            self._selector.unregister(sock)
        return self._waiting.pop(sock)

    def _serve(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:  # a peer that stalled (timed out) or left: nothing to tell the terminal
            pass
        finally:
            self.shutdown_request(request)
            self._slots.release()

    def server_close(self) -> None:
        self._closed.set()
        with self._lock:
            for sock in list(self._waiting):
                self._release(sock)
                self.shutdown_request(sock)
            self._selector.close()
        super().server_close()


def _guarded(app: Callable[..., Iterable[bytes]], token: str) -> Callable[..., Iterable[bytes]]:
    """`app`, answering only requests whose `Authorization` header carries `token` as a bearer token."""

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if bearer_matches(environ.get("HTTP_AUTHORIZATION"), token):
            return app(environ, start_response)
        start_response(
            "401 Unauthorized",
            [("Content-Type", "text/plain; charset=utf-8"), ("WWW-Authenticate", 'Bearer realm="gputop"')],
        )
        return [b"gputop: this /metrics needs its bearer token (Authorization: Bearer ...)\n"]

    return guarded


class MetricsServer:
    """`/metrics` over HTTP on its own daemon thread, for as long as gputop runs."""

    def __init__(
        self,
        current: Callable[[], RunSnapshot | None],
        port: int = DEFAULT_PORT,
        addr: str = LOOPBACK,
        versions: dict[str, str | None] | None = None,
        token: str | None = None,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(SnapshotCollector(current, versions or {}))
        self.port = port
        self.addr = addr
        self.token = token
        self._server: WSGIServer | None = None

    def start(self) -> str:
        """Start serving; returns the URL with the address really bound. A port in use is one UsageError."""
        if not 0 <= self.port <= 65535:
            raise UsageError(f"--metrics-port {self.port}: not a port number (0-65535)")
        app = make_wsgi_app(self.registry)
        if self.token is not None:
            app = _guarded(app, self.token)
        try:
            family = socket.getaddrinfo(self.addr or None, self.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
            server_class = type("MetricsHTTPServer", (_BoundedServer,), {"address_family": family[0][0]})
            self._server = make_server(self.addr, self.port, app, server_class, handler_class=_QuietHandler)
        except OSError as exc:
            why = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be opened ({exc.strerror or exc})"
            raise UsageError(f"--metrics-port {self.port} on {self.addr} {why}") from None
        threading.Thread(target=self._server.serve_forever, name="gputop-metrics", daemon=True).start()
        bound: tuple[Any, ...] = tuple(self._server.server_address)  # the real port when 0 asked for any free one
        self.port = int(bound[1])
        return f"http://{url_host(str(bound[0]))}:{self.port}/metrics"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
