"""The live run in Prometheus's format, for fleets that already scrape everything.

Users with many GPU servers run Prometheus and Grafana; gputop joins them
instead of inventing a collector. Nothing is updated per call: a custom
collector turns the newest `RunSnapshot` into metric families when Prometheus
scrapes, so the call loop pays nothing for being watched. The call-time
histogram comes from exact bucket counts the engine keeps over the whole run.
Names follow Prometheus's conventions: base units (`_seconds`, `_bytes`) and
`_total` on counters. The server listens on 127.0.0.1 unless told otherwise and,
given a token, answers only scrapes that carry it (`Authorization: Bearer`).
"""

from __future__ import annotations

import errno
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
)
from prometheus_client.registry import Collector

from gputop.core.errors import UsageError
from gputop.core.serving.access import LOOPBACK, bearer_matches, url_host
from gputop.core.snapshot import CALL_BUCKETS_MS, RunSnapshot

DEFAULT_PORT = 9470
PHASES = ("import", "compile", "load", "parameters", "context", "first_call", "teardown")
STATES = ("idle", "importing", "compiling", "loading", "running", "paused", "finished", "stopped", "error")

# (name, help, kind): the exporter's whole contract, also printed by `gputop serve --list-metrics`
# and listed in the README.
METRICS = (
    ("gputop_info", "What runs: target, function, device and versions (value 1)", "info"),
    ("gputop_run_state", "1 for the run's current state, 0 for the others", "gauge"),
    ("gputop_phase_seconds", "Seconds spent in each run phase (compile, load, ...)", "gauge"),
    ("gputop_call_duration_seconds", "Synchronised wall time of each call (histogram)", "histogram"),
    ("gputop_calls_total", "Calls made since the run started", "counter"),
    ("gputop_kernel_seconds_total", "Device time of each kernel over all profile passes", "counter"),
    ("gputop_kernel_dispatches_total", "Dispatches of each kernel over all profile passes", "counter"),
    ("gputop_kernel_avg_seconds", "Average device time of one dispatch of each kernel", "gauge"),
    ("gputop_kernel_max_seconds", "Longest dispatch of each kernel", "gauge"),
    ("gputop_memory_live_bytes", "Bytes the runtime's allocator holds now, per device and memory type", "gauge"),
    ("gputop_memory_peak_bytes", "Most bytes the runtime's allocator held, per device and memory type", "gauge"),
    ("gputop_device_memory_used_bytes", "Device memory in use (NVML for NVIDIA GPUs, host RAM for CPUs)", "gauge"),
    ("gputop_device_memory_total_bytes", "Device memory in all", "gauge"),
    ("gputop_host_rss_bytes", "Resident memory of the gputop process", "gauge"),
    ("gputop_captures_total", "RenderDoc captures taken and verified", "counter"),
    ("gputop_errors_total", "Errors the run met (compile, device, call, check)", "counter"),
)


class SnapshotCollector(Collector):
    """Metric families from the newest snapshot, computed at scrape time."""

    def __init__(self, current: Callable[[], RunSnapshot | None], versions: dict[str, str | None]) -> None:
        self._current = current
        self._versions = versions

    def collect(self) -> Iterator[Any]:
        snap = self._current()
        if snap is None:
            return
        device = snap.device.id if snap.device else "none"
        families: list[Any] = []

        info = InfoMetricFamily("gputop", METRICS[0][1])
        info.add_metric(
            [],
            {
                "target": snap.target,
                "function": snap.function or "",
                "device": device,
                "device_name": snap.device.name if snap.device else "",
                **{k: v or "" for k, v in self._versions.items()},
            },
        )
        families.append(info)

        state = GaugeMetricFamily("gputop_run_state", METRICS[1][1], labels=["state"])
        for name in STATES:
            state.add_metric([name], 1.0 if snap.state == name else 0.0)
        families.append(state)

        phases = GaugeMetricFamily("gputop_phase_seconds", METRICS[2][1], labels=["phase"])
        for name in PHASES:
            value = getattr(snap.phases, f"{name}_s")
            if value is not None:
                phases.add_metric([name], value)
        families.append(phases)

        calls = snap.calls
        histogram = HistogramMetricFamily("gputop_call_duration_seconds", METRICS[3][1], labels=["device"])
        if calls.buckets:
            cumulative, buckets = 0, []
            for bound, count in zip((*CALL_BUCKETS_MS, float("inf")), calls.buckets, strict=True):
                cumulative += count
                buckets.append((_le(bound), float(cumulative)))
            histogram.add_metric([device], buckets, calls.sum_ms / 1e3)
        families.append(histogram)
        total = CounterMetricFamily("gputop_calls", METRICS[4][1], labels=["device"])
        total.add_metric([device], float(calls.count))
        families.append(total)

        kernel_labels = ["kernel", "device"]
        kernel_seconds = CounterMetricFamily("gputop_kernel_seconds", METRICS[5][1], labels=kernel_labels)
        dispatches = CounterMetricFamily("gputop_kernel_dispatches", METRICS[6][1], labels=kernel_labels)
        average = GaugeMetricFamily("gputop_kernel_avg_seconds", METRICS[7][1], labels=kernel_labels)
        longest = GaugeMetricFamily("gputop_kernel_max_seconds", METRICS[8][1], labels=kernel_labels)
        for kernel in snap.profile.kernels if snap.profile else ():
            labels = [kernel.name, device]
            kernel_seconds.add_metric(labels, kernel.total_us / 1e6)
            dispatches.add_metric(labels, float(kernel.count))
            average.add_metric(labels, kernel.avg_us / 1e6)
            longest.add_metric(labels, kernel.max_us / 1e6)
        families += [kernel_seconds, dispatches, average, longest]

        pool_labels = ["device", "memory_type"]
        live = GaugeMetricFamily("gputop_memory_live_bytes", METRICS[9][1], labels=pool_labels)
        peak = GaugeMetricFamily("gputop_memory_peak_bytes", METRICS[10][1], labels=pool_labels)
        used = GaugeMetricFamily("gputop_device_memory_used_bytes", METRICS[11][1], labels=["device", "source"])
        capacity = GaugeMetricFamily("gputop_device_memory_total_bytes", METRICS[12][1], labels=["device", "source"])
        rss = GaugeMetricFamily("gputop_host_rss_bytes", METRICS[13][1])
        if snap.memory is not None:
            for dev in snap.memory.devices:
                for pool in dev.pools:
                    live.add_metric([dev.device_id, pool.memory_type], float(pool.live_bytes))
                    peak.add_metric([dev.device_id, pool.memory_type], float(pool.peak_bytes))
                if dev.device_used_bytes is not None:
                    used.add_metric([dev.device_id, dev.source], float(dev.device_used_bytes))
                if dev.device_total_bytes is not None:
                    capacity.add_metric([dev.device_id, dev.source], float(dev.device_total_bytes))
            rss.add_metric([], float(snap.memory.host_rss_bytes))
        families += [live, peak, used, capacity, rss]

        captures = CounterMetricFamily("gputop_captures", METRICS[14][1], labels=["device"])
        captures.add_metric([device], float(len(snap.captures)))
        errors = CounterMetricFamily("gputop_errors", METRICS[15][1], labels=["device"])
        errors.add_metric([device], float(snap.errors))
        families += [captures, errors]
        yield from families


def _le(bound_ms: float) -> str:
    return "+Inf" if bound_ms == float("inf") else repr(bound_ms / 1e3)


class _QuietHandler(WSGIRequestHandler):
    """No access log on the terminal: scrapes come every few seconds for days."""

    def log_message(self, format: str, *args: Any) -> None:
        return


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a slow scraper must not keep gputop from leaving


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
            server_class = type("MetricsHTTPServer", (_ThreadingServer,), {"address_family": family[0][0]})
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
