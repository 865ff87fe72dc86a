"""The PromQL the fleet view asks: one instant query per figure, each over every run Prometheus holds.

Each query returns one series per run (and per function where a run has several), keyed by the labels
every run's series carry (`Hostname`, `run`; `gputop serve` adds them, issue 58), so one refresh is a
fixed number of queries, whatever the fleet's size, and the rows are joined here in Python rather
than by PromQL's matching (which would need every query to agree on every label). The call-time
quantiles come from the rate of the histogram's buckets over the window, and, where that is empty
(a run too young for two scrapes in the window, or one whose calls have stopped: every rate 0 gives
NaN), from the buckets counted since the run started, asked in a second round for those runs alone
(`whole_run`): at 8,000 GPUs asking it of every run, with `or`, cost as much again as the window's.
Calls a second are the last two scrapes' (`irate`): what the run does now, whatever its age.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from gputop.core.errors import UsageError

__all__ = [
    "FLEET_WINDOW",
    "RUN_LABELS",
    "FleetQueries",
    "any_of",
    "check_window",
    "whole_run_quantile",
    "window_quantile",
]

FLEET_WINDOW = "1m"  # the rates' window: at least two scrapes of Prometheus's (15 s is usual; 1 m is its default)
RUN_LABELS = ("Hostname", "run")  # what names a run across the fleet: the host it says it is on and its session id
FUNCTION_BY = "Hostname, run, function"
_DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")


def check_window(text: str) -> str:
    """`--window` as a PromQL duration (`30s`, `1m`, `1h30m`); a UsageError for anything else."""
    if not _DURATION.match(text):
        raise UsageError(f"--window {text}: not a Prometheus duration (e.g. 30s, 1m, 5m)")
    return text


BUCKETS = "gputop_call_duration_seconds_bucket"
_RE2_SPECIAL = set("\\.+*?()|[]{}^$")


def any_of(values: Iterable[str]) -> str:
    """A PromQL regex (inside a double-quoted string) that matches exactly `values`."""
    escaped = ("".join(f"\\{c}" if c in _RE2_SPECIAL else c for c in value) for value in sorted(set(values)))
    return "|".join(escaped).replace("\\", "\\\\").replace('"', '\\"')


def window_quantile(q: float, window: str) -> str:
    """The call time's `q` quantile per run and function over `window`; `>= 0` drops the NaN of no calls in it."""
    return f"histogram_quantile({q}, sum by ({FUNCTION_BY}, le) (rate({BUCKETS}[{window}]))) >= 0"


def whole_run_quantile(q: float, runs: Iterable[tuple[str, str]]) -> str:
    """The `q` quantile of every call since the start, of the (host, run) pairs `runs` only (a superset: the
    hosts' and the runs' names each; `poll_fleet` keeps the pairs asked for)."""
    pairs = list(runs)
    hosts, names = any_of(host for host, _ in pairs), any_of(run for _, run in pairs)
    selector = f'{BUCKETS}{{Hostname=~"{hosts}", run=~"{names}"}}'
    return f"histogram_quantile({q}, sum by ({FUNCTION_BY}, le) ({selector})) >= 0"


@dataclass(frozen=True)
class FleetQueries:
    """The fleet view's queries for one rates' window, by name (the names `rows.fleet_rows` reads)."""

    window: str = FLEET_WINDOW

    def whole_run(self, runs: Iterable[tuple[str, str]]) -> dict[str, str]:
        """The second round's queries: the whole run's p50 and p95 of the runs whose window held no calls."""
        pairs = sorted(set(runs))
        return {"p50_run": whole_run_quantile(0.5, pairs), "p95_run": whole_run_quantile(0.95, pairs)}

    def expressions(self) -> dict[str, str]:
        w = self.window
        return {
            "info": "gputop_info",
            "state": "gputop_run_state == 1",
            "p50": window_quantile(0.5, w),
            "p95": window_quantile(0.95, w),
            # irate: the last two scrapes' rate, what the run does now (as its own Run pane says), and right for a
            # series younger than the window, where rate() divides a few seconds' calls by the whole window
            "calls": f"sum by ({FUNCTION_BY}) (irate(gputop_calls_total[{w}]))",
            "clock": "gputop_gpu_sm_clock_hertz",
            "memory_used": "gputop_device_memory_used_bytes",
            "memory_total": "gputop_device_memory_total_bytes",
            "growth": "gputop_memory_growth_bytes_per_call",
            "hints": "gputop_hint_active > 0",
        }
