"""The live run in Prometheus's format, for fleets that already scrape everything.

Users with many GPU servers run Prometheus and Grafana; gputop joins them
instead of inventing a collector. Nothing is updated per call: a custom
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
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
)
from prometheus_client.registry import Collector

from gputop.core.errors import UsageError
from gputop.core.records.calls import CALL_BUCKETS_MS
from gputop.core.serving.access import LOOPBACK, bearer_matches, url_host
from gputop.core.snapshot import RunSnapshot
from gputop.core.watch.clock_watch import THROTTLE_REASONS

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
PHASES = ("import", "compile", "load", "parameters", "context", "first_call", "teardown")
STATES = ("idle", "importing", "compiling", "loading", "running", "paused", "finished", "stopped", "error")

# (name, help, kind): the exporter's whole contract, also printed by `gputop serve --list-metrics`
# and listed in docs/prometheus-and-web.md.
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
    ("gputop_device_other_processes", "Other processes NVML lists on the run's GPU (not this run's)", "gauge"),
    ("gputop_host_other_cores", "CPU cores other processes used over the last few seconds", "gauge"),
    ("gputop_gpu_sm_clock_hertz", "The run's GPU's SM clock at the newest reading (NVML, NVIDIA GPUs only)", "gauge"),
    ("gputop_gpu_memory_clock_hertz", "The run's GPU's memory clock at the newest reading", "gauge"),
    ("gputop_gpu_power_watts", "The run's GPU's power draw at the newest reading", "gauge"),
    ("gputop_gpu_temperature_celsius", "The run's GPU's core temperature at the newest reading", "gauge"),
    ("gputop_gpu_clock_throttle_active", "1 for each NVML clock event reason active at the newest reading", "gauge"),
    ("gputop_pm_sampling_active", "1 while PM sampling reads the GPU's own counters (CUDA), else 0", "gauge"),
    (
        "gputop_pm_value",
        "Each PM sampled metric's newest value: % of the GPU's peak (SM, tensor, DRAM) or the SM clock in MHz",
        "gauge",
    ),
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

        families += _kernel_families(snap, device)
        families += _memory_families(snap)

        captures = CounterMetricFamily("gputop_captures", METRICS[14][1], labels=["device"])
        captures.add_metric([device], float(len(snap.captures)))
        errors = CounterMetricFamily("gputop_errors", METRICS[15][1], labels=["device"])
        errors.add_metric([device], float(snap.errors))
        families += [captures, errors]

        others = GaugeMetricFamily("gputop_device_other_processes", METRICS[16][1], labels=["device"])
        host_others = GaugeMetricFamily("gputop_host_other_cores", METRICS[17][1])
        neighbours = snap.neighbours
        if neighbours is not None:
            if neighbours.gpu is not None:  # a CPU device has no GPU processes to count, not zero of them
                others.add_metric([neighbours.device_id or device], float(neighbours.others))
            if neighbours.host is not None:
                host_others.add_metric([], neighbours.host.other_cores)
        families += [others, host_others]
        families += _clock_families(snap, device)
        families += _pm_families(snap, device)
        yield from families


def _kernel_families(snap: RunSnapshot, device: str) -> list[Any]:
    """Each profiled kernel's time, dispatches, average and longest dispatch (empty before a profile pass)."""
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
    return [kernel_seconds, dispatches, average, longest]


def _memory_families(snap: RunSnapshot) -> list[Any]:
    """The pools' live and peak bytes, the device's used and total memory, the host's RSS."""
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
    return [live, peak, used, capacity, rss]


def _clock_families(snap: RunSnapshot, device: str) -> list[Any]:
    """The newest clock reading of the run's GPU (empty families where there is none: a CPU device)."""
    sm_clock = GaugeMetricFamily("gputop_gpu_sm_clock_hertz", METRICS[18][1], labels=["device"])
    mem_clock = GaugeMetricFamily("gputop_gpu_memory_clock_hertz", METRICS[19][1], labels=["device"])
    power = GaugeMetricFamily("gputop_gpu_power_watts", METRICS[20][1], labels=["device"])
    temperature = GaugeMetricFamily("gputop_gpu_temperature_celsius", METRICS[21][1], labels=["device"])
    throttle = GaugeMetricFamily("gputop_gpu_clock_throttle_active", METRICS[22][1], labels=["device", "reason"])
    reading = snap.clock_now
    if reading is not None:
        sm_clock.add_metric([device], reading.sm_mhz * 1e6)
        mem_clock.add_metric([device], reading.mem_mhz * 1e6)
        if reading.power_w is not None:
            power.add_metric([device], reading.power_w)
        if reading.temperature_c is not None:
            temperature.add_metric([device], float(reading.temperature_c))
        for reason in THROTTLE_REASONS.values():  # every reason, 0 or 1: an alert needs the series before it fires
            throttle.add_metric([device, reason], 1.0 if reason in reading.throttle_reasons else 0.0)
    return [sm_clock, mem_clock, power, temperature, throttle]


def _pm_families(snap: RunSnapshot, device: str) -> list[Any]:
    """The GPU's own counters, newest values (CUPTI PM sampling): empty families where the run has no PM state
    (an engine that has not decided yet), `active` 0 and no values while it is paused, off or refused."""
    active = GaugeMetricFamily("gputop_pm_sampling_active", METRICS[23][1], labels=["device"])
    value = GaugeMetricFamily("gputop_pm_value", METRICS[24][1], labels=["device", "role", "metric", "unit"])
    pm = snap.pm_sampling
    if pm is not None:
        active.add_metric([device], 1.0 if pm.sampling else 0.0)
        for metric, newest in zip(pm.metrics, pm.newest, strict=False):
            if newest is not None:  # a metric the newest decode had no sample of: no value, not a zero
                value.add_metric([device, metric.role, metric.name, metric.unit], newest)
    return [active, value]


def _le(bound_ms: float) -> str:
    return "+Inf" if bound_ms == float("inf") else repr(bound_ms / 1e3)


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
