"""The `gputop` command line: `gputop [TARGET]` (the TUI), `gputop run`, `gputop devices`.

Every path through here ends in an exit code from gputop's contract (0 ok,
2 usage, 3 compile, 4 device unavailable, 5 runtime, 6 check failed, 130/143
interrupted) and, on failure, one line on stderr. Tracebacks go to the
session log, never to the user's terminal. The process ends with `os._exit`
once output is flushed, because IREE's bindings can print leak warnings or
crash in their own teardown at interpreter exit after a clean run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gputop.core.errors import (
    EXIT_OK,
    EXIT_RUNTIME,
    EXIT_SIGINT,
    EXIT_SIGPIPE,
    EXIT_SIGTERM,
    GputopError,
    UsageError,
)

PROGRESS_EVERY_S = 10.0  # headless runs: a line while a long import, compile or load goes on
OPEN_SNAPSHOTS = 300  # `gputop open` replays the session's last 30 s or so, enough for every pane


def _add_run_options(parser: argparse.ArgumentParser, *, tui: bool, counted: bool = True) -> None:
    parser.add_argument(
        "target",
        nargs="?",
        default="demo:mlp",
        help="a .mlir, .onnx or .vmfb file, an OpenCL run spec (.toml), or a demo: demo:mlp (default), "
        "demo:conv, demo:pipeline, demo:opencl-chain",
    )
    parser.add_argument(
        "--device", "-d", help="local-task (cpu), local-sync, vulkan[:N], cuda[:N], hip[:N]; default: best"
    )
    parser.add_argument(
        "--devices",
        metavar="D1,D2",
        help="multi-device run: one named target device each, device_a, device_b, ... in this order",
    )
    if not tui and counted:  # the TUI and gputop serve call until stopped
        parser.add_argument(
            "--iterations",
            "-n",
            type=int,
            default=10,
            help="steady calls after the first call (default 10; 0: first call only)",
        )
    parser.add_argument("--function", "-f", help="function to call (default: the module's first export)")
    parser.add_argument(
        "--input",
        "-i",
        action="append",
        default=[],
        metavar="VALUE",
        help="an input in iree-run-module syntax: 2x3xf32=1, 4xf32=1,2,3,4 or @x.npy (repeat per input)",
    )
    parser.add_argument(
        "--params",
        action="append",
        default=[],
        metavar="FILE",
        type=Path,
        help="parameter file (.irpa, .safetensors, .gguf), scope 'model'; repeatable",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed for random inputs (default 0)")
    parser.add_argument(
        "--compile-flag",
        action="append",
        default=[],
        metavar="FLAG",
        help="extra iree-compile flag, e.g. --compile-flag=--iree-opt-level=O3; repeatable",
    )
    parser.add_argument(
        "--target-flags",
        metavar="FLAGS",
        help="replace the device's target flags, e.g. '--iree-hal-target-device=cuda --iree-cuda-target=sm_80'",
    )
    parser.add_argument(
        "--check",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="reference for an output (.npy or ONNX .pb), one per output in order; exit 6 if it differs",
    )
    parser.add_argument("--rtol", type=float, default=1e-4, help="check tolerance relative to max|reference|")
    parser.add_argument("--atol", type=float, default=1e-5, help="absolute check tolerance")
    parser.add_argument("--no-cache", action="store_true", help="compile even if a cached module exists")
    parser.add_argument("--session-dir", type=Path, help="where logs and artefacts of this run go")
    parser.add_argument(
        "--sample-interval", type=float, default=0.1, help="memory sampling period in seconds (default 0.1)"
    )
    parser.add_argument(
        "--renderdoc",
        choices=("auto", "on", "off"),
        default="auto",
        help="load RenderDoc for Vulkan runs: auto (when it can capture), on (fail if it cannot), off",
    )
    parser.add_argument(
        "--profile-calls", type=int, default=10, help="calls in a profile pass asked for with p (default 10)"
    )
    if tui:
        parser.add_argument(
            "--profile-every", type=float, metavar="SECONDS", help="keep profiling every SECONDS, merging passes"
        )
        _add_metrics_options(parser, required=False)


def _add_metrics_options(parser: argparse.ArgumentParser, *, required: bool) -> None:
    from gputop.core.metrics import DEFAULT_PORT

    parser.add_argument(
        "--metrics-port",
        type=int,
        metavar="N",
        default=DEFAULT_PORT if required else None,
        help=f"serve Prometheus metrics at http://HOST:N/metrics (default {DEFAULT_PORT}; 0: any free port)"
        if required
        else "also serve Prometheus metrics at http://HOST:N/metrics while the TUI runs",
    )
    parser.add_argument(
        "--metrics-addr", default="0.0.0.0", metavar="ADDR", help="address to listen on (default 0.0.0.0: all)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gputop",
        description="Watch IREE modules run on GPUs and CPUs: phases, call times, memory, diagnostics.",
        epilog="'gputop [TARGET]' starts the live TUI; 'gputop run TARGET' prints a report; 'gputop sessions' "
        "lists past runs; 'gputop serve TARGET' exports Prometheus metrics. Exit codes: 0 ok, 2 usage, 3 compile, "
        "4 device, 5 runtime, 6 check failed, 130/143 interrupted.",
    )
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="run a module headless and print a report")
    _add_run_options(run, tui=False)
    run.add_argument("--json", metavar="PATH", help="also write the report as JSON to PATH ('-' for stdout)")
    run.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    run.add_argument(
        "--capture",
        type=int,
        nargs="?",
        const=1,
        default=0,
        metavar="N",
        help="RenderDoc capture of N calls after the first (Vulkan); verified and listed under captures",
    )
    run.add_argument(
        "--profile",
        action="store_true",
        help="after the steady calls, profile as many calls for per-dispatch device times",
    )
    affinity = sub.add_parser(
        "affinity", help="on which device every argument and result of a multi-device module lives"
    )
    affinity.add_argument("target", help="a .mlir file or demo:pipeline / demo:hidden-transfer")
    affinity.add_argument("--devices", required=True, help="D1,D2[,...]: one named target device each (device_a, ...)")
    affinity.add_argument("--json", metavar="PATH", help="write the records as JSON to PATH ('-' for stdout)")
    capture = sub.add_parser("capture-info", help="verify a RenderDoc capture and count its dispatches")
    capture.add_argument("file", type=Path)
    capture.add_argument("--json", metavar="PATH", help="write the record as JSON to PATH ('-' for stdout)")
    info = sub.add_parser("profile-info", help="print the kernel table of an .ireeprof profile bundle")
    info.add_argument("file", type=Path)
    info.add_argument("--json", metavar="PATH", help="write the table as JSON to PATH ('-' for stdout)")
    serve = sub.add_parser("serve", help="run headless until stopped, with Prometheus metrics at /metrics")
    _add_run_options(serve, tui=False, counted=False)
    _add_metrics_options(serve, required=True)
    serve.add_argument(
        "--profile-every",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="profile every SECONDS for per-kernel metrics (default 30; 0: never)",
    )
    serve.add_argument(
        "--record-every",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="session record: one sample per SECONDS plus every change (default 5; 0: every sample)",
    )
    serve.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    web = sub.add_parser(
        "web",
        help="serve the TUI to web browsers (textual-serve); options after TARGET go to the TUI",
        description="Serve the gputop TUI to browsers: every visitor gets a live gputop of its own.",
    )
    web.add_argument("--host", default="localhost", help="host name or address to serve on (default localhost)")
    web.add_argument("--port", type=int, default=8000, help="port to serve on (default 8000)")
    web.add_argument("--public-url", help="URL browsers reach the server at, behind a proxy")
    web.add_argument("tui_args", nargs=argparse.REMAINDER, metavar="TARGET [OPTIONS]", help="what the TUI runs")
    sessions = sub.add_parser("sessions", help="list past sessions: time, target, device, state, duration")
    sessions.add_argument("--json", action="store_true", help="print the rows as JSON")
    report = sub.add_parser("report", help="print a finished or interrupted session's report")
    report.add_argument("session", metavar="SESSION", help="its directory or its id (see gputop sessions)")
    report.add_argument("--json", metavar="PATH", help="write the report as JSON to PATH ('-' for stdout)")
    opened = sub.add_parser("open", help="show a past session read-only in the TUI")
    opened.add_argument("session", metavar="SESSION", help="its directory or its id (see gputop sessions)")
    devices = sub.add_parser("devices", help="list every device gputop can use, and why others are missing")
    devices.add_argument("--json", action="store_true", help="print the rows as JSON")
    return parser


def build_tui_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gputop",
        description="Start the live TUI on TARGET (default demo:mlp). Other commands: gputop run, gputop devices.",
    )
    _add_run_options(parser, tui=True)
    return parser


def _config_from(args: argparse.Namespace, iterations: int | None) -> Any:
    from gputop.core.session import RunConfig

    if iterations is not None and iterations < 0:
        raise UsageError("--iterations must be 0 (first call only) or more")
    if args.sample_interval <= 0:
        raise UsageError("--sample-interval must be positive")
    if args.profile_calls < 1:
        raise UsageError("--profile-calls must be at least 1")
    if getattr(args, "profile_every", None) is not None and args.profile_every <= 0:
        raise UsageError("--profile-every must be positive")
    return RunConfig(
        target=args.target,
        device=args.device,
        iterations=iterations,
        function=args.function,
        inputs=tuple(args.input),
        params=tuple(args.params),
        seed=args.seed,
        sample_interval_s=args.sample_interval,
        extra_compile_flags=tuple(args.compile_flag),
        target_flags=tuple(args.target_flags.split()) if args.target_flags else None,
        session_dir=args.session_dir,
        use_cache=not args.no_cache,
        checks=tuple(args.check),
        rtol=args.rtol,
        atol=args.atol,
        profile=bool(getattr(args, "profile", False)),
        profile_calls=args.profile_calls,
        profile_every_s=getattr(args, "profile_every", None),
        devices=_device_list(args.devices) if args.devices else (),
        renderdoc=args.renderdoc,
        capture_calls=max(0, getattr(args, "capture", 0) or 0),
    )


def command_devices(args: argparse.Namespace) -> int:
    from gputop.core.devices import list_devices
    from gputop.core.records import to_json
    from gputop.tui.report_text import devices_table

    rows = [to_json(r) for r in list_devices()]
    for row in rows:
        for key in ("timestamp",):
            row.pop(key, None)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(devices_table(rows))
    return EXIT_OK


def _device_list(text: str) -> tuple[str, ...]:
    devices = tuple(part.strip() for part in text.split(",") if part.strip())
    if len(devices) < 2:
        raise UsageError("--devices takes two or more devices, e.g. local:0,local:1 or cuda:0,cuda:1")
    return devices


def command_affinity(args: argparse.Namespace) -> int:
    from gputop.core.affinity import affinity_flags, analyse, target_flags_for_spec
    from gputop.core.demos import demo_for, is_demo
    from gputop.core.paths import new_session_dir
    from gputop.core.records import to_json
    from gputop.core.targets import device_names
    from gputop.tui.report_text import affinity_table

    devices = _device_list(args.devices)
    flags = affinity_flags(list(devices), [target_flags_for_spec(d) for d in devices])
    if is_demo(args.target):
        demo = demo_for(args.target)
        source_path, source_bytes = Path(f"{demo.name}.mlir"), demo.source()
    else:
        source_path, source_bytes = Path(args.target), None
        if source_path.suffix != ".mlir":
            raise UsageError(f"{args.target}: affinity analysis needs the .mlir source")
    out_dir = new_session_dir(label="affinity")
    records, transfers = analyse(source_path, flags, out_dir, source_bytes=source_bytes)
    names = dict(zip(device_names(len(devices)), devices, strict=True))
    data = {
        "target": args.target,
        "devices": names,
        "flags": list(flags),
        "exports": to_json(records),
        "transfers": to_json(transfers),
    }
    if args.json:
        _write_json(data, args.json)
    if args.json != "-":
        if records:
            print(affinity_table(data["exports"], data["transfers"], names))
        else:
            print(f"{args.target}: no argument or result crosses a device boundary (nothing imported or exported)")
    return EXIT_OK


def command_capture_info(args: argparse.Namespace) -> int:
    from gputop.core.records import to_json
    from gputop.core.renderdoc import capture_info

    info = capture_info(args.file)
    if args.json:
        _write_json(to_json(info), args.json)
    if args.json != "-":
        print(f"{info.path}: {info.api} capture, {info.bytes} bytes, {info.dispatches} dispatches")
        for name in info.dispatch_names:
            print(f"  {name}")
    return EXIT_OK


def command_serve(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from gputop.core.metrics import MetricsServer
    from gputop.core.record import versions as package_versions
    from gputop.core.session import Session

    config = _config_from(args, None)
    if args.profile_every < 0:
        raise UsageError("--profile-every must be 0 (never) or positive")
    if args.record_every < 0:
        raise UsageError("--record-every must be 0 (every sample) or positive")
    config = replace(config, profile_every_s=args.profile_every or None, record_every_s=args.record_every)
    _check_target(config.target)
    sessions: list[Session] = []
    server = MetricsServer(
        lambda: sessions[0].snapshot if sessions else None,
        args.metrics_port,
        args.metrics_addr,
        versions=package_versions(),
    )
    url = server.start()  # before the session: a port in use fails fast, leaving no session behind
    session = Session(config)
    sessions.append(session)
    print(f"gputop: serving metrics at {url} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    stop_code = _drive(session, progress=not args.quiet, first_profile=bool(args.profile_every))
    server.stop()
    return _ending(session, stop_code)


def _drive(session: Any, *, progress: bool, first_profile: bool = False) -> int:
    """Run `session` to its end or a signal, echoing its events; returns the signal's exit code or 0."""
    from gputop.core.records import BUSY_STATES

    seen = [0]
    profiled = [not first_profile]

    def on_snapshot(snapshot: Any) -> None:
        for event in snapshot.events:
            if event.seq > seen[0]:
                seen[0] = event.seq
                if progress and event.level != "error":
                    print(f"gputop: {event.message}", file=sys.stderr, flush=True)
        if not profiled[0] and snapshot.state == "running":
            profiled[0] = True  # kernel metrics from the start, not only after the first period
            session.request_profile()

    session.subscribe(on_snapshot)
    stop_code = [0]

    def on_signal(signum: int, _frame: Any) -> None:
        if stop_code[0]:  # a second signal: the user means it (samples are on disk line by line)
            print("gputop: interrupted again, leaving now", file=sys.stderr, flush=True)
            os._exit(stop_code[0])
        stop_code[0] = EXIT_SIGINT if signum == signal.SIGINT else EXIT_SIGTERM
        session.stop(exit_code=stop_code[0])

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        session.start()
        next_note = 0.0
        while not session.wait(0.1):
            snapshot = session.snapshot
            if progress and snapshot.state in BUSY_STATES and snapshot.state_since:
                # Long imports and compiles say they are alive, every PROGRESS_EVERY_S seconds.
                elapsed = time.time() - snapshot.state_since
                if elapsed >= PROGRESS_EVERY_S and elapsed >= next_note:
                    print(f"gputop: still {snapshot.state} ({elapsed:.0f} s)", file=sys.stderr, flush=True)
                    next_note = elapsed + PROGRESS_EVERY_S
                elif elapsed < next_note - PROGRESS_EVERY_S:
                    next_note = 0.0  # a new busy state began
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return stop_code[0]


def _ending(session: Any, stop_code: int) -> int:
    """The last line and exit code of a headless run: interrupted, failed, check failed, or ok."""
    if stop_code:
        print("gputop: interrupted", file=sys.stderr)
        return stop_code
    if session.error is not None:
        print(f"gputop: error: {session.error}", file=sys.stderr)
        return int(session.error.exit_code)
    check = session.outcome.check
    if check is not None and not check.passed:
        print("gputop: error: outputs do not match the reference", file=sys.stderr)
    return int(session.exit_code())


def command_web(args: argparse.Namespace) -> int:
    import shlex

    tui_args = list(args.tui_args)
    if tui_args and tui_args[0] == "--":
        tui_args = tui_args[1:]
    config = _config_from(build_tui_parser().parse_args(tui_args), None)  # bad TUI options fail here, once
    _check_target(config.target)
    try:
        from textual_serve.server import Server
    except ImportError:
        raise UsageError("gputop web needs textual-serve (pip install textual-serve; make run installs it)") from None
    if not 0 < args.port <= 65535:
        raise UsageError(f"--port {args.port}: not a port number (1-65535)")
    _check_port_free(args.host, args.port)
    command = shlex.join([sys.executable, "-m", "gputop.tui", *tui_args])
    server = Server(command, host=args.host, port=args.port, title="gputop", public_url=args.public_url)
    server.serve()
    return EXIT_OK


def _check_port_free(host: str, port: int) -> None:
    """A port in use is one line before the web server starts, not its traceback after."""
    import socket

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise UsageError(f"--port {port} on {host}: {exc.strerror}") from None


def command_sessions(args: argparse.Namespace) -> int:
    from gputop.core.records import to_json
    from gputop.core.sessions import list_sessions
    from gputop.tui.report_text import sessions_table

    entries = list_sessions()
    if args.json:
        print(json.dumps(to_json(entries), indent=2))
    elif entries:
        print(sessions_table(to_json(entries)))
    else:
        print("no sessions yet: 'gputop run TARGET' or 'gputop' records one")
    return EXIT_OK


def command_report(args: argparse.Namespace) -> int:
    from gputop.core.sessions import read_report, resolve_session
    from gputop.tui.report_text import run_report

    report = read_report(resolve_session(args.session))
    _write_json(report, args.json)
    if args.json != "-":
        print(run_report(report))
    return EXIT_OK


def command_open(args: argparse.Namespace) -> int:
    from gputop.core.sessions import read_tail, resolve_session
    from gputop.tui.app import run_replay

    folder = resolve_session(args.session)
    snapshots = read_tail(folder, OPEN_SNAPSHOTS)
    if not snapshots:
        raise UsageError(f"{folder}: the session has no samples to show")
    return run_replay(snapshots)


def command_profile_info(args: argparse.Namespace) -> int:
    from gputop.core.profiles import read_profile
    from gputop.core.records import to_json

    summary = read_profile(args.file)
    data = to_json(summary)
    if args.json:
        _write_json(data, args.json)
    if args.json != "-":
        width = max(len(k.name) for k in summary.kernels)
        print(f"{args.file}: {summary.calls} calls, {summary.call_kernel_ms:.3f} ms kernel time per call")
        print(f"{'kernel'.ljust(width)}  {'count':>6}  {'avg us':>10}  {'p50 us':>10}  {'max us':>10}  share")
        for k in summary.kernels:
            print(
                f"{k.name.ljust(width)}  {k.count:>6}  {k.avg_us:>10.1f}  {k.p50_us:>10.1f}"
                f"  {k.max_us:>10.1f}  {k.share * 100:5.1f}%"
            )
    return EXIT_OK


def command_run(args: argparse.Namespace) -> int:
    from gputop.core.report import build_report
    from gputop.core.session import Session
    from gputop.tui.report_text import run_report

    config = _config_from(args, args.iterations)
    _check_target(config.target)
    session = Session(config)
    stop_code = _drive(session, progress=not args.quiet)
    report = session.report or build_report(session)
    _write_json(report, args.json)
    text_stream = sys.stderr if args.json == "-" else sys.stdout
    print(run_report(report), file=text_stream, flush=True)
    return _ending(session, stop_code)


def _check_target(target: str) -> None:
    from gputop.core.demos import demo_for, is_demo, is_opencl_target

    if is_demo(target):
        if not is_opencl_target(target):
            demo_for(target)
        return
    path = Path(target)
    if path.suffix not in (".mlir", ".mlirbc", ".vmfb", ".toml", ".onnx"):
        if not path.exists():
            raise UsageError(
                f"{target}: no such file (targets are .mlir, .onnx, .vmfb, an OpenCL .toml spec or demo:NAME)"
            )
        raise UsageError(f"{target}: expected a .mlir, .onnx or .vmfb file, an OpenCL .toml run spec or a demo:NAME")
    if not path.exists():
        raise UsageError(f"{target}: no such file")


def _write_json(report: dict[str, Any], where: str | None) -> None:
    if not where:
        return
    text = json.dumps(report, indent=2)
    if where == "-":
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
        return
    try:
        Path(where).write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {where}: {exc.strerror}") from None


def command_tui(argv: list[str]) -> int:
    args = build_tui_parser().parse_args(argv)
    config = _config_from(args, None)
    _check_target(config.target)
    from gputop.tui.app import run_app

    metrics = (args.metrics_port, args.metrics_addr) if args.metrics_port is not None else None
    return run_app(config, metrics)


# Every `gputop COMMAND`; anything else on the command line is the TUI's.
SUBCOMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": command_run,
    "devices": command_devices,
    "profile-info": command_profile_info,
    "affinity": command_affinity,
    "capture-info": command_capture_info,
    "sessions": command_sessions,
    "report": command_report,
    "open": command_open,
    "serve": command_serve,
    "web": command_web,
}


def run_cli(argv: list[str] | None = None) -> int:
    """Run gputop with `argv`; return the exit code (no os._exit: safe in-process)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in SUBCOMMANDS:
            args = build_parser().parse_args(argv)
            return int(SUBCOMMANDS[args.command](args))
        if argv and argv[0] in ("-h", "--help"):
            build_parser().print_help()
            print("\nTUI options:\n" + build_tui_parser().format_help().split("\n", 2)[2])
            return EXIT_OK
        return command_tui(argv)
    except GputopError as exc:
        print(f"gputop: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("gputop: interrupted", file=sys.stderr)
        return EXIT_SIGINT
    except BrokenPipeError:
        return reader_left()
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code) if isinstance(exc.code, int) else EXIT_OK
    except Exception as exc:
        log = Path(os.environ.get("TMPDIR", "/tmp")) / "gputop-crash.log"
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(traceback.format_exc())
        print(f"gputop: internal error: {exc} (traceback in {log})", file=sys.stderr)
        return EXIT_RUNTIME


def reader_left() -> int:
    """stdout's reader closed the pipe: nothing more can be said there, and it is no error of ours."""
    # Python would try to flush the dead pipe once more at exit and complain; point stdout at /dev/null.
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_SIGPIPE


def main() -> None:
    """Console entry point: run, flush, and leave without IREE's exit-time noise."""
    code = run_cli()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = reader_left()
    with contextlib.suppress(OSError):
        sys.stderr.flush()
    os._exit(code)
