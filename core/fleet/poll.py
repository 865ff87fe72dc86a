"""One refresh of the fleet view: every fleet query asked of Prometheus, timed, and joined into rows.

The queries go out together (`workers` at once, default all of them): Prometheus answers each on
its own goroutine, so a refresh takes about as long as its slowest query rather than their sum
(BENCHMARKS.md, "The fleet view at 8,000 GPUs"). The pool is made and joined inside `poll_fleet`:
no thread outlives a refresh. The first error (unreachable, refused) is raised as it is, one line.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from gputop.core.fleet.client import PrometheusClient, Sample
from gputop.core.fleet.queries import FleetQueries
from gputop.core.fleet.rows import FleetPoll, fleet_rows

__all__ = ["poll_fleet"]


def poll_fleet(
    client: PrometheusClient, queries: FleetQueries | None = None, *, at: float | None = None, workers: int = 0
) -> FleetPoll:
    """The fleet at `at` (Unix seconds; None: now) as `client`'s Prometheus holds it. `workers`: queries at once
    (0: all of them, 1: one after another)."""
    expressions = (queries or FleetQueries()).expressions()
    start = time.perf_counter()
    answers: dict[str, tuple[list[Sample], float]] = {}
    if workers == 1:
        answers = {name: client.timed_query(expr, at) for name, expr in expressions.items()}
    else:
        with ThreadPoolExecutor(max_workers=workers or len(expressions), thread_name_prefix="gputop-fleet") as pool:
            futures = {name: pool.submit(client.timed_query, expr, at) for name, expr in expressions.items()}
            answers = {name: future.result() for name, future in futures.items()}
    results = {name: samples for name, (samples, _) in answers.items()}
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
