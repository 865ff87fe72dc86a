"""`gputop fleet --prometheus URL`: every gputop run a Prometheus scrapes, one row each, live in a TUI.

Prometheus is asked once before the screen is taken, so a wrong URL (exit 2), a Prometheus that
does not answer (exit 4) or one that holds no gputop runs (exit 0, one line: nothing to show) is
said in one line on the terminal, never in a screen. `--json PATH` writes that one poll's rows,
worst first, and ends (for scripts, and for a fleet that has no terminal at hand). `enter` on a
row that runs here ends the view with that run's folder: `gputop attach` follows it in the same
terminal, and the fleet comes back when it ends.
"""

from __future__ import annotations

import argparse
import sys

from gputop.tui.bridge import (
    EXIT_OK,
    FLEET_TIMEOUT_S,
    FLEET_WINDOW,
    FleetQueries,
    PrometheusClient,
    UsageError,
    check_window,
    poll_fleet,
    sort_rows,
    to_json,
)
from gputop.tui.cli.command import Subcommand, check_json_destination, write_json

__all__ = ["SPEC", "add_arguments", "command_fleet"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--prometheus",
        required=True,
        metavar="URL",
        help="the Prometheus that scrapes the runs' gputop serve, e.g. http://prometheus:9090",
    )
    parser.add_argument(
        "--interval", type=float, default=2.0, metavar="SECONDS", help="seconds between refreshes (default 2)"
    )
    parser.add_argument(
        "--window",
        default=FLEET_WINDOW,
        metavar="DURATION",
        help=f"the rates' window, at least two scrapes long (default {FLEET_WINDOW}); "
        "p50/p95 fall back to the whole run where it holds no calls",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=FLEET_TIMEOUT_S,
        metavar="SECONDS",
        help=f"the longest a query may take before Prometheus counts as unreachable (default {FLEET_TIMEOUT_S:.0f})",
    )
    parser.add_argument("--json", metavar="PATH", help="write the rows once as JSON (- for stdout) and end")


def command_fleet(args: argparse.Namespace) -> int:
    if not args.interval > 0:
        raise UsageError("--interval must be positive")
    if not args.timeout > 0:
        raise UsageError("--timeout must be positive")
    check_json_destination(args.json)
    queries = FleetQueries(check_window(args.window))
    client = PrometheusClient(
        args.prometheus, timeout_s=args.timeout
    )  # a URL that is none: one line now, before anything is asked
    first = poll_fleet(client, queries)  # unreachable, not Prometheus, refused: one line, its exit code
    if args.json:
        rows = sort_rows(first.rows)
        write_json({"url": client.url, "took_s": round(first.took_s, 4), "rows": to_json(rows)}, args.json)
        return EXIT_OK
    if not first.rows:
        print(f"gputop: no gputop runs in Prometheus at {client.url} (no gputop_info series there now)")
        return EXIT_OK
    # imported here: the Textual app (~0.3 s) is for the view, not for --json or a one-line answer
    from gputop.tui.fleet import FleetApp
    from gputop.tui.launch import run_attached

    while True:
        folder = FleetApp(client, interval_s=args.interval, window=queries.window, first=first).run()
        if folder is None:
            return EXIT_OK
        run_attached(folder)  # `enter`: the run followed here; its q comes back to the fleet
        sys.stdout.flush()
        first = poll_fleet(client, queries)


SPEC = Subcommand(
    "fleet",
    "every gputop run a Prometheus scrapes, one row per host, GPU and run, live (enter attaches)",
    add_arguments,
    command_fleet,
    description="Read every gputop run a Prometheus scrapes (gputop serve on each host) through its HTTP API: one "
    "row per host, GPU and run with the busiest function's p50/p95, calls/s, SM clock, memory, growth per call, "
    "state and a ⚠ where a hint stands, worst first, refreshed every --interval seconds. enter attaches to a run "
    "on this host; exit 2 for a URL that is no Prometheus, 4 when it does not answer.",
)
