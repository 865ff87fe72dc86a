"""`gputop -- CMD`, `gputop run -- CMD`, `gputop serve -- CMD`: a user's own program, watched, unmodified.

Everything after the first `--` is the user's command, whole (`python app.py --its-own-flags`, `pytest -k x`),
so none of its words is ever read as gputop's. Before it, the face's own options still apply where they
mean something for a program gputop does not drive (the session folder, sampling, `--json`, `--quiet`,
the baseline gate, the metrics server); a TARGET or an option that only a run gputop makes can honour
(`--device`, `-n`, `--input`, ...) is refused in one line, since the program loads and calls its own
modules. The exit code is the program's (128 + N when signal N killed it), or 7 from a `--fail-above` gate.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from gputop.tui.bridge import EXIT_SIGINT, ProgramHost, UsageError, config_default
from gputop.tui.cli.headless import drive
from gputop.tui.cli.options import Face, add_run_options

__all__ = ["PROGRAM_OPTIONS", "program_ending", "program_host", "refuse_run_options", "run_program", "split_program"]

# What the faces' options may say about a watched program; the rest configure a run gputop makes itself.
PROGRAM_OPTIONS = frozenset(
    {
        "session_dir",
        "sample_interval",
        "record_every",
        "quiet",
        "json",
        "profile",
        "baseline",
        "fail_above",
        "gate",
        "metrics_port",
        "metrics_addr",
        "token",
        "profile_every",
        "owner_pid",
        "command",
        "adopt",
        "agent_socket",
    }
)


def split_program(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """gputop's own words, and the user's command after the first `--` (None where there is no `--`)."""
    if "--" not in argv:
        return argv, None
    at = argv.index("--")
    return argv[:at], argv[at + 1 :]


def refuse_run_options(args: argparse.Namespace, face: Face) -> None:
    """A TARGET or a run option given beside `-- CMD` is a usage error naming it (exit 2, nothing started).

    Raises:
        UsageError: the first option that does not apply to a watched program.
    """
    parser = argparse.ArgumentParser(add_help=False)
    add_run_options(parser, face)
    for action in parser._actions:
        if action.dest in PROGRAM_OPTIONS or action.dest == argparse.SUPPRESS:
            continue
        if getattr(args, action.dest, action.default) != action.default:
            flag = action.option_strings[0] if action.option_strings else f"TARGET ({getattr(args, action.dest)})"
            raise UsageError(
                f"{flag} does not apply with -- CMD: the program loads and calls its own modules "
                "(gputop watches them; run gputop TARGET to have gputop make the calls)"
            )


PROGRAM_SAMPLE_S = 0.5  # a watched program's RSS and GPU memory: its watcher sends the allocators' every 0.5 s too


def program_sample_interval(given: float | None) -> float:
    """The engine's memory sampling period for a program: 0.5 s where the run's default (0.1 s) stands.

    NVML reads beside a program's CUDA calls cost it time (bench/watch_overhead.py): a program's memory is
    sampled as often as its watcher reports its allocators, unless --sample-interval says otherwise.
    """
    default = config_default("sample_interval_s")
    return PROGRAM_SAMPLE_S if given is None or given == default else float(given)


PROGRAM_RECORD_S = 1.0  # a watched program's record: a sample a second (plus every change) unless said otherwise


def program_host(args: argparse.Namespace, command: list[str], *, piped: bool = False) -> ProgramHost:
    """The host of `command` with the options that apply to it.

    Its record keeps a sample per PROGRAM_RECORD_S (gputop run) or per --record-every (gputop serve, the TUI's
    engine): a program's calls, contexts and output lines come at its pace, and the record must grow with time
    (docs/sessions.md states the bound), not with what the program does.
    """
    record_every = getattr(args, "record_every", None)
    return ProgramHost(
        command,
        session_dir=getattr(args, "session_dir", None),
        record_every_s=PROGRAM_RECORD_S if record_every is None else float(record_every),
        sample_interval_s=program_sample_interval(getattr(args, "sample_interval", None)),
        owner_pid=getattr(args, "owner_pid", None),
        piped=piped,
    )


def _ask_profile_when_running(host: ProgramHost, quiet: bool) -> None:
    """`--profile`: the program's first calls are profiled where its backend allows; else one line says why."""
    asked = [False]

    def on_snapshot(snapshot: Any) -> None:
        if asked[0] or snapshot.state != "running":
            return
        asked[0] = True
        reason = host.request_profile()
        if reason and not quiet:
            print(f"gputop: profile: {reason}", file=sys.stderr, flush=True)

    host.subscribe(on_snapshot)


def run_program(args: argparse.Namespace, command: list[str]) -> int:
    """`gputop run [options] -- CMD`: its output passes through; the report comes at its end, on stderr."""
    from gputop.tui.cli.command import write_json
    from gputop.tui.cli.compare import baseline_gate, judge_run
    from gputop.tui.text import program_report_text

    refuse_run_options(args, "run")
    baseline = baseline_gate(args)  # read before the program starts: a missing baseline costs no run
    host = program_host(args, command)
    if args.profile is not None:
        _ask_profile_when_running(host, args.quiet)
    stop_code = drive(host, progress=False)
    session = host.session
    if not session.done:  # a second signal: the record was written from the newest snapshot, the program killed
        return program_ending(host, stop_code)
    report = session.report or session.current_report()
    write_json(report, args.json)
    if session.pid is not None:
        print(program_report_text(report), file=sys.stderr, flush=True)
    else:
        print(f"gputop: {shlex.join(command)} made no IREE calls", file=sys.stderr, flush=True)
    if session.record_error is not None:
        print(f"gputop: error: the session's record is incomplete: {session.record_error}", file=sys.stderr)
    code = session.exit_code()
    if baseline is not None and code == 0:
        return judge_run(baseline, report, stream=sys.stderr)
    return code


def program_ending(host: ProgramHost, stop_code: int) -> int:
    """The exit code of a watched program's face: the program's own, or the signal's where gputop left first."""
    session = host.session
    if not session.done:  # a second signal: written from the newest snapshot, and the program killed
        print("gputop: interrupted", file=sys.stderr)
        return stop_code or EXIT_SIGINT
    if session.pid is None:
        print(f"gputop: {shlex.join(host.command)} made no IREE calls", file=sys.stderr, flush=True)
    return session.exit_code()
