"""`gputop serve TARGET`: a run headless until stopped, its live state as Prometheus metrics at /metrics.

The metrics server starts before the session, so a port in use fails fast and leaves no session
behind; `gputop web` starts one of these as the engine its browsers watch.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gputop.tui.bridge import ProgramHost, RunHost, UsageError, exposure_warning, load_token, versions
from gputop.tui.cli.command import Subcommand
from gputop.tui.cli.headless import drive, ending
from gputop.tui.cli.options import add_metrics_options, add_run_options, config_from
from gputop.tui.cli.program import program_ending, program_host, program_sample_interval, refuse_run_options

__all__ = ["SPEC", "add_arguments", "command_serve"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_options(parser, "serve")
    add_metrics_options(parser, required=True)
    parser.add_argument(
        "--profile-every",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="profile every SECONDS for per-kernel metrics (default 30; 0: never)",
    )
    parser.add_argument(
        "--record-every",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="session record: one sample per SECONDS plus every change (default 5; 0: every sample)",
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    parser.add_argument(
        "--list-metrics", action="store_true", help="print every metric /metrics serves (name, type, help) and exit"
    )
    # The TUI that started this engine (`gputop TARGET`): its requests may stop, reload and move the run,
    # and the engine ends with it. Not for users: the TUI passes it.
    parser.add_argument("--owner-pid", type=int, default=None, help=argparse.SUPPRESS)
    # gputop.watch() inside a running program: watch that pid (the command after -- names it), its watcher
    # connecting to the socket named. Not for users: gputop.watch() passes them.
    parser.add_argument("--adopt", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--agent-socket", default=None, help=argparse.SUPPRESS)


def command_serve(args: argparse.Namespace) -> int:
    # imported here (as in options.add_metrics_options): prometheus_client costs ~25 ms,
    # and `import gputop.tui.cli` alone need not pay it
    from gputop.tui.bridge import METRICS, MetricsServer

    if args.list_metrics:
        for name, text, kind in METRICS:
            print(f"{name:<40} {kind:<9} {text}")
        return 0
    if args.profile_every < 0:
        raise UsageError("--profile-every must be 0 (never) or positive")
    token = load_token(args.token)
    program = getattr(args, "program", None)
    host: RunHost | ProgramHost
    if program is not None:  # gputop serve -- CMD (and the TUI's engine for gputop -- CMD)
        refuse_run_options(args, "serve")
        if args.adopt is not None:  # gputop.watch(): the program is running already and connects to this socket
            if not args.agent_socket:
                raise UsageError("--adopt needs --agent-socket")
            host = ProgramHost(
                program,
                session_dir=args.session_dir,
                record_every_s=args.record_every,
                sample_interval_s=program_sample_interval(args.sample_interval),
                adopt_pid=args.adopt,
                listen_path=Path(args.agent_socket),
            )
        else:
            host = program_host(args, program, piped=args.owner_pid is not None)
    else:
        config = config_from(args, None, profile_every_s=args.profile_every or None, record_every_s=args.record_every)
        host = RunHost(config, owner_pid=args.owner_pid)
    server = MetricsServer(
        lambda: host.snapshot,
        args.metrics_port,
        args.metrics_addr,
        versions=versions(),
        token=token,
    )
    url = server.start()  # before the session: a port in use fails fast, leaving no session behind
    needs = " (bearer token required)" if token else ""
    print(f"gputop: serving metrics at {url}{needs} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    warning = exposure_warning("metrics", args.metrics_addr, server.port, token)
    if warning:
        print(f"gputop: warning: {warning}", file=sys.stderr, flush=True)
    first_profile = bool(args.profile_every) and program is None  # a program's calls are profiled on request only
    stop_code = drive(host, progress=not args.quiet, first_profile=first_profile)
    server.stop()
    if isinstance(host, ProgramHost):
        return program_ending(host, stop_code)
    return ending(host.session, stop_code)


SPEC = Subcommand(
    "serve",
    "run headless until stopped, with Prometheus metrics at /metrics",
    add_arguments,
    command_serve,
    description="Run TARGET headless until stopped (Ctrl-C or SIGTERM), serving Prometheus metrics at /metrics and "
    "profiling every --profile-every seconds; the session record keeps one sample per --record-every seconds "
    "plus every change. The TUI runs its engine this way.",
)
