"""One refresh of the fleet view: every fleet query asked of Prometheus, timed, and joined into rows.

The queries go out together (`workers` at once, default all of them): Prometheus answers each on
its own goroutine, so a refresh takes about as long as its slowest query rather than their sum
(BENCHMARKS.md, "The fleet view at 8,000 GPUs"). The pool is made and joined inside `poll_fleet`:
no thread outlives a refresh. A second round asks the whole run's quantiles of the functions whose
window held no calls, and of those alone. The first error (unreachable, refused) is raised as is, one line.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from gputop.core.fleet.client import PrometheusClient, Sample
from gputop.core.fleet.queries import FleetQueries
from gputop.core.fleet.rows import FleetPoll, fleet_rows, run_key

__all__ = ["poll_fleet"]


def _ask(
    client: PrometheusClient, expressions: dict[str, str], at: float | None, workers: int
) -> dict[str, tuple[list[Sample], float]]:
    """Each expression's samples and time, `workers` at once (0: all, 1: one after another)."""
    if workers == 1 or len(expressions) == 1:
        return {name: client.timed_query(expr, at) for name, expr in expressions.items()}
    with ThreadPoolExecutor(max_workers=workers or len(expressions), thread_name_prefix="gputop-fleet") as pool:
        futures = {name: pool.submit(client.timed_query, expr, at) for name, expr in expressions.items()}
        return {name: future.result() for name, future in futures.items()}


def _unquantiled(results: dict[str, list[Sample]]) -> set[tuple[str, str, str]]:
    """(host, run, function) of every function that has calls but no p50 over the window."""
    called = {(*run_key(s.labels), s.labels.get("function", "")) for s in results.get("calls", [])}
    return called - {(*run_key(s.labels), s.labels.get("function", "")) for s in results.get("p50", [])}


def poll_fleet(
    client: PrometheusClient, queries: FleetQueries | None = None, *, at: float | None = None, workers: int = 0
) -> FleetPoll:
    """The fleet at `at` (Unix seconds; None: now) as `client`'s Prometheus holds it. `workers`: queries at once
    (0: all of them, 1: one after another)."""
    queries = queries or FleetQueries()
    start = time.perf_counter()
    answers = _ask(client, queries.expressions(), at, workers)
    results = {name: samples for name, (samples, _) in answers.items()}
    missing = _unquantiled(results)
    if missing:  # a second round: the whole run's quantiles, of those functions' runs alone
        second = _ask(client, queries.whole_run((host, run) for host, run, _ in missing), at, workers)
        answers.update(second)
        for name, (samples, _) in second.items():
            results[name] = [s for s in samples if (*run_key(s.labels), s.labels.get("function", "")) in missing]
    rows = fleet_rows(results)
    return FleetPoll(
        url=client.url,
        rows=rows,
        at=at,
        took_s=time.perf_counter() - start,
        done_at=time.time(),
        query_s={name: took for name, (_, took) in answers.items()},
        series=sum(len(samples) for samples in results.values()),
    )
