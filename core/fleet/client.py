"""Prometheus's HTTP API, read with the standard library: one instant query in, its samples out.

A fleet already has a Prometheus scraping every `gputop serve`; the fleet view asks it, not each
host, so it needs nothing on the hosts beyond what they serve already. Only `GET /api/v1/query`
is used (an instant vector at one time), through `urllib`, so reading a fleet costs no client
library. Every way the server can fail to answer becomes one of gputop's errors with one line:
a URL that is no URL or names no Prometheus API is a usage error (exit 2), a server that cannot
be reached is `PrometheusUnreachable` (exit 4: what gputop reads is not there, as a device
would not be), and a query Prometheus refuses is `QueryRefused` (exit 5: gputop's own query).
"""

from __future__ import annotations

import json
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from gputop.core.errors import EXIT_DEVICE, GputopError, RuntimeFailure, UsageError

__all__ = ["FLEET_TIMEOUT_S", "PrometheusClient", "PrometheusUnreachable", "QueryRefused", "Sample", "base_url"]

API = "/api/v1/query"
# One query. At 8,000 GPUs on a 2-core Prometheus a quantile query took seconds (BENCHMARKS.md, the fleet view at
# 8,000 GPUs): an answer that slow is still an answer, and `gputop fleet --timeout` gives a bigger fleet more.
FLEET_TIMEOUT_S = 30.0


class PrometheusUnreachable(GputopError):
    """Prometheus does not answer: refused, no such host, timed out, or not ready."""

    exit_code = EXIT_DEVICE


class QueryRefused(RuntimeFailure):
    """Prometheus answered a query with an error of its own (a query gputop got wrong, or a server limit)."""


@dataclass(frozen=True)
class Sample:
    """One element of an instant vector: its labels and its value at the query's time."""

    labels: dict[str, str] = field(default_factory=dict)
    value: float = 0.0


def base_url(text: str) -> str:
    """`--prometheus URL` as the base the API's paths go under: `http://host:9090` (a path prefix kept,
    for a Prometheus behind a proxy); a UsageError for anything that is not an http(s) URL."""
    url = text.strip()
    if "://" not in url:
        url = f"http://{url}"  # `localhost:9090`, as Prometheus's own flags write it
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018  (a port that is no number raises here)
    except ValueError as exc:
        raise UsageError(f"--prometheus {text}: not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--prometheus {text}: not an http(s) URL (e.g. http://localhost:9090)")
    path = parts.path.rstrip("/")
    for suffix in (API, "/api/v1", "/graph"):  # a URL copied from the browser or the API's docs
        if path.endswith(suffix):
            path = path[: -len(suffix)]
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _why(exc: BaseException) -> str:
    """A connection failure as a short phrase: `connection refused`, `no such host`, `timed out`."""
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, socket.gaierror):
        return "no such host"
    if isinstance(reason, TimeoutError):
        return "timed out"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, ssl.SSLError):
        return f"TLS: {reason.reason or reason}"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror.lower()
    return str(reason) or type(reason).__name__


class PrometheusClient:
    """Instant queries against one Prometheus; safe to share between threads (no state but the URL)."""

    def __init__(self, url: str, timeout_s: float = FLEET_TIMEOUT_S) -> None:
        self.url = base_url(url)
        self.timeout_s = timeout_s

    def query(self, expr: str, at: float | None = None) -> list[Sample]:
        """The instant vector `expr` evaluates to at `at` (Unix seconds; None: the server's now)."""
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        body = urllib.parse.urlencode(params).encode()
        request = urllib.request.Request(  # POST: a fleet's query never meets a URL length limit
            self.url + API,
            data=body,
            headers={"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"},
        )
        data = self._answer(request)
        result = data.get("data", {})
        if not isinstance(result, dict) or result.get("resultType") not in ("vector", "scalar"):
            raise QueryRefused(f"Prometheus at {self.url} answered {str(result)[:80]!r}, not an instant vector")
        if result["resultType"] == "scalar":
            return [Sample({}, float(result["result"][1]))]
        return [Sample(dict(row.get("metric", {})), float(row["value"][1])) for row in result.get("result", [])]

    def _answer(self, request: urllib.request.Request) -> dict[str, Any]:
        """The API's JSON answer to `request`, or one of the errors above."""
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raw = exc.read() if exc.fp is not None else b""
            refusal = _api_error(raw)
            if refusal is not None:  # 400 bad_data, 422 execution, 503 timeout: the API's own words
                if exc.code == 503 and "not ready" in refusal.lower():
                    raise PrometheusUnreachable(f"Prometheus at {self.url} is not ready yet") from None
                raise QueryRefused(f"Prometheus at {self.url} refused a query: {refusal}") from None
            if exc.code == 503:
                raise PrometheusUnreachable(f"Prometheus at {self.url} is not ready (HTTP 503)") from None
            if exc.code in (401, 403):
                raise UsageError(f"Prometheus at {self.url} needs credentials (HTTP {exc.code})") from None
            raise UsageError(f"{self.url} is not a Prometheus HTTP API (HTTP {exc.code} for {API})") from None
        except (urllib.error.URLError, OSError) as exc:
            raise PrometheusUnreachable(f"Prometheus at {self.url} is unreachable ({_why(exc)})") from None
        try:
            data = json.loads(raw)
        except ValueError:
            raise UsageError(f"{self.url} is not a Prometheus HTTP API (its {API} answers no JSON)") from None
        if not isinstance(data, dict) or data.get("status") not in ("success", "error"):
            raise UsageError(f"{self.url} is not a Prometheus HTTP API (its {API} answers other JSON)")
        if data["status"] == "error":
            raise QueryRefused(f"Prometheus at {self.url} refused a query: {data.get('error', '?')}")
        return data

    def timed_query(self, expr: str, at: float | None = None) -> tuple[list[Sample], float]:
        """`query`, and the seconds it took (the server's work, the transfer and the JSON's decoding)."""
        start = time.perf_counter()
        samples = self.query(expr, at)
        return samples, time.perf_counter() - start


def _api_error(raw: bytes) -> str | None:
    """The error text of an API answer with `status: error`, else None."""
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if isinstance(data, dict) and data.get("status") == "error":
        return str(data.get("error") or data.get("errorType") or "error")
    return None
