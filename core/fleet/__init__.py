"""The fleet: every gputop run a Prometheus scrapes, read through its HTTP API (`gputop fleet`).

One machine's runs are read from their session folders; a fleet's are read from the Prometheus
that already scrapes every `gputop serve` on it. This room holds the client (`client`, the
standard library's `urllib` and nothing else), the queries (`queries`), the rows they join into
(`rows`) and one refresh (`poll`). It imports nothing of the engine that runs anything: the
fleet view loads neither IREE, NVML nor the Prometheus client library (an import-linter contract).
"""

from __future__ import annotations

from gputop.core.fleet.client import (
    FLEET_TIMEOUT_S,
    PrometheusClient,
    PrometheusUnreachable,
    QueryRefused,
    Sample,
    base_url,
)
from gputop.core.fleet.poll import poll_fleet
from gputop.core.fleet.queries import FLEET_WINDOW, FleetQueries, check_window
from gputop.core.fleet.rows import FLEET_SORTS, FleetPoll, FleetRow, fleet_rows, sort_rows

__all__ = [
    "FLEET_SORTS",
    "FLEET_TIMEOUT_S",
    "FLEET_WINDOW",
    "FleetPoll",
    "FleetQueries",
    "FleetRow",
    "PrometheusClient",
    "PrometheusUnreachable",
    "QueryRefused",
    "Sample",
    "base_url",
    "check_window",
    "fleet_rows",
    "poll_fleet",
    "sort_rows",
]
