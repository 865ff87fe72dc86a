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
from typing import TYPE_CHECKING, Any

from gputop.core.errors import (
    EXIT_OK,
    EXIT_RUNTIME,
    EXIT_SIGINT,
    EXIT_SIGPIPE,
    EXIT_SIGTERM,
    GputopError,
    Interrupted,
    UsageError,
)
from gputop.core.module.demos import demo_targets
from gputop.core.run.config import RENDERDOC_MODES, RunConfig, Target, TargetKind, config_default
from gputop.core.runners.iree_runner import PARAMETER_MODES

if TYPE_CHECKING:
    from gputop.core.multidevice.affinity import AffinityAnalysis

PROGRESS_EVERY_S = 10.0  # headless runs: a line while a long import, compile or load goes on
PARAMETERS_EVERY_S = 0.5  # headless runs: a line of bytes loaded, GB/s and time left while parameters load
OPEN_SNAPSHOTS = 300  # `gputop open` replays the session's last 30 s or so, enough for every pane


def _add_run_options(parser: argparse.ArgumentParser, *, tui: bool, counted: bool = True) -> None:
    parser.add_argument(
        "target",
        nargs="?",
        default="demo:mlp",
        help="a .mlir, .onnx or .vmfb file, an OpenCL run spec (.toml), or a demo: "
        + ", ".join(f"{name} (default)" if name == "demo:mlp" else name for name in demo_targets()),
    )
    parser.add_argument(
        "--device",
        "-d",
        help="local-task (cpu), local-sync, vulkan[:N], cuda[:N], hip[:N], or opencl[:N] for OpenCL run specs; "
        "default: the best there is (gputop devices lists them)",
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
            default=config_default("iterations"),
            help=f"steady calls after the first call (default {config_default('iterations')}; 0: first call only)",
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
    parser.add_argument(
        "--params-mode",
        choices=PARAMETER_MODES,
        default=config_default("params_mode"),
        help="how parameters reach the device: streamed (gputop's loader: many reads in flight, progress shown), "
        "mmap or file_async (IREE's); auto picks the fastest measured for the device (default)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=config_default("seed"),
        help=f"seed for random inputs (default {config_default('seed')})",
    )
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
    parser.add_argument(
        "--rtol",
        type=float,
        default=config_default("rtol"),
        help="check tolerance relative to max|reference| (default per dtype: f64 1e-7, f32 1e-4, f16 2e-3, "
        "bf16 1.6e-2; integers exact)",
    )
    parser.add_argument(
        "--atol", type=float, default=config_default("atol"), help="absolute check tolerance (default per dtype)"
    )
    parser.add_argument("--no-cache", action="store_true", help="compile even if a cached module exists")
    parser.add_argument("--session-dir", type=Path, help="where logs and artefacts of this run go")
    parser.add_argument(
        "--sample-interval",
        type=float,
        default=config_default("sample_interval_s"),
        help=f"memory sampling period in seconds (default {config_default('sample_interval_s')})",
    )
    parser.add_argument(
        "--renderdoc",
        choices=RENDERDOC_MODES,
        default=config_default("renderdoc"),
        help="load RenderDoc for Vulkan runs: auto (when it can capture), on (fail if it cannot), off",
    )
    if tui or not counted:
        parser.add_argument(
            "--profile-calls",
            type=int,
            default=config_default("profile_calls"),
            help=f"calls in each profile pass{' (the p key, --profile-every)' if tui else ''} "
            f"(default {config_default('profile_calls')})",
        )
    else:
        parser.add_argument(
            "--profile-calls",
            type=int,
            metavar="N",
            help="calls in the --profile pass (default: as many as --iterations)",
        )
    parser.add_argument(
        "--warmup",
        type=float,
        default=config_default("warmup_s"),
        metavar="SECONDS",
        help="before each profile pass, call until the GPU clock is steady, at most SECONDS "
        f"(default {config_default('warmup_s'):g}; 0: off; nothing to wait for without an NVIDIA GPU)",
    )
    if tui:
        parser.add_argument(
            "--profile-every", type=float, metavar="SECONDS", help="keep profiling every SECONDS, merging passes"
        )
        _add_metrics_options(parser, required=False)


def _add_metrics_options(parser: argparse.ArgumentParser, *, required: bool) -> None:
    from gputop.core.serving.access import LOOPBACK, TOKEN_ENV
    from gputop.core.serving.metrics import DEFAULT_PORT

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
        "--metrics-addr",
        default=LOOPBACK,
        metavar="ADDR",
        help=f"address to listen on (default {LOOPBACK}: this machine only; 0.0.0.0: every interface, with a warning)",
    )
    _add_token_option(parser, f"/metrics then wants it as a bearer token (default: ${TOKEN_ENV} when set)")


def _add_token_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--token", type=Path, metavar="FILE", help=f"a file whose first line is the token; {what}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gputop",
        description="Watch IREE modules run on GPUs and CPUs: phases, call times, memory, diagnostics.",
        epilog="'gputop [TARGET]' starts the live TUI; 'gputop run TARGET' prints a report; 'gputop sessions' "
        "lists past runs; 'gputop attach SESSION' follows a live one; 'gputop serve TARGET' exports Prometheus "
        "metrics. Exit codes: 0 ok, 2 usage, 3 compile, 4 device, 5 runtime, 6 check failed, 130/143/129 "
        "interrupted.",
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
    affinity.add_argument(
        "--static",
        action="store_true",
        help="only the compiler's analysis: skip the profiled call that observes the bytes really moved",
    )
    capture = sub.add_parser(
        "capture-info", help="a RenderDoc capture's dispatches, and their GPU times where it replays here"
    )
    capture.add_argument("file", type=Path)
    capture.add_argument("--json", metavar="PATH", help="write the record as JSON to PATH ('-' for stdout)")
    capture.add_argument("--no-replay", action="store_true", help="read what the capture holds; do not replay it")
    capture.add_argument("--passes", type=int, default=5, help="replays to take the median GPU time over (default 5)")
    capture.add_argument(
        "--replay-timeout",
        type=float,
        default=120.0,
        metavar="S",
        help="kill a replay that has not finished after S seconds (default 120)",
    )
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
        help="serve one run to web browsers (textual-serve); options after TARGET go to its engine",
        description="Serve one run to browsers: gputop starts one engine (or attaches to a live run) and every "
        "visitor gets a viewer of it.",
    )
    web.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1: this machine only)")
    web.add_argument("--port", type=int, default=8000, help="port to serve on (default 8000)")
    web.add_argument("--public-url", help="URL browsers reach the server at, behind a proxy")
    web.add_argument(
        "--max-viewers", type=int, default=4, metavar="N", help="browsers watching at once (default 4); more see a page"
    )
    _add_token_option(web, "the page wants it (?token=... once, then a cookie) (default: $GPUTOP_TOKEN when set)")
    web.add_argument("--attach", metavar="SESSION", help="serve a run another gputop process drives, starting none")
    web.add_argument("tui_args", nargs=argparse.REMAINDER, metavar="TARGET [OPTIONS]", help="what the engine runs")
    sessions = sub.add_parser("sessions", help="list past sessions: time, target, device, state, duration")
    sessions.add_argument("--json", action="store_true", help="print the rows as JSON")
    report = sub.add_parser("report", help="print a finished or interrupted session's report")
    report.add_argument("session", metavar="SESSION", help="its directory or its id (see gputop sessions)")
    report.add_argument("--json", metavar="PATH", help="write the report as JSON to PATH ('-' for stdout)")
    opened = sub.add_parser("open", help="show a past session read-only in the TUI")
    opened.add_argument("session", metavar="SESSION", help="its directory or its id (see gputop sessions)")
    attach = sub.add_parser(
        "attach", help="follow a run another gputop process drives, live in the TUI (its keys reach that run)"
    )
    attach.add_argument("session", metavar="SESSION", help="its directory or its id (see gputop sessions)")
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


def counted_run(args: argparse.Namespace) -> bool:
    """`gputop run`: a counted run, whose --profile pass has its own call count."""
    return getattr(args, "command", None) == "run"


def _config_from(args: argparse.Namespace, iterations: int | None, **more: Any) -> RunConfig:
    """The one thing the command line makes of a run's options: a `RunConfig` (which checks them)."""
    options: dict[str, Any] = dict(
        target=args.target,
        device=args.device,
        iterations=iterations,
        function=args.function,
        inputs=tuple(args.input),
        params=tuple(args.params),
        params_mode=args.params_mode,
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
        profile_calls=config_default("profile_calls") if args.profile_calls is None else args.profile_calls,
        profile_pass_calls=args.profile_calls if counted_run(args) else None,
        profile_every_s=getattr(args, "profile_every", None),
        devices=_device_list(args.devices) if args.devices else (),
        renderdoc=args.renderdoc,
        capture_calls=getattr(args, "capture", 0) or 0,
        warmup_s=args.warmup,
    )
    return RunConfig(**{**options, **more})


def command_devices(args: argparse.Namespace) -> int:
    from gputop.core.module.devices import list_devices
    from gputop.core.snapshot import to_json
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
    from gputop.core.module.devices import target_flags_for_spec
    from gputop.core.module.targets import device_names
    from gputop.core.multidevice.affinity import affinity_flags, analyse_module
    from gputop.core.paths import new_session_dir
    from gputop.core.snapshot import to_json
    from gputop.tui.report_text import affinity_table

    devices = _device_list(args.devices)
    flags = affinity_flags(list(devices), [target_flags_for_spec(d) for d in devices])
    target = Target.parse(args.target, must_exist=False)
    if target.demo is not None:
        source_path, source_bytes = Path(f"{target.demo.name}.mlir"), target.demo.source()
    elif target.kind is TargetKind.MLIR and target.path is not None and target.path.suffix == ".mlir":
        source_path, source_bytes = target.path, None
    else:
        raise UsageError(f"{args.target}: affinity analysis needs the .mlir source")
    out_dir = new_session_dir(label="affinity")
    analysis = analyse_module(source_path, flags, out_dir, source_bytes=source_bytes)
    observation: dict[str, Any] = {"observed": False, "notes": ["not observed: --static"]}
    if not args.static and analysis.functions:
        analysis, observation = _observe_affinity(analysis, source_path, source_bytes, flags, devices, out_dir)
    records, transfers = analysis.records, analysis.transfers
    names = dict(zip(device_names(len(devices)), devices, strict=True))
    data = {
        "target": args.target,
        "devices": names,
        "flags": list(flags),
        "exports": to_json(records),
        "transfers": to_json(transfers),
        "observation": observation,
    }
    if args.json:
        _write_json(data, args.json)
    if args.json != "-":
        if records:
            print(affinity_table(data["exports"], data["transfers"], names))
            for note in observation["notes"]:
                print(note)
        else:
            print(f"{args.target}: no argument or result crosses a device boundary (nothing imported or exported)")
    return EXIT_OK


def _observe_affinity(
    analysis: AffinityAnalysis, source_path: Path, source_bytes: bytes | None, flags: tuple[str, ...],
    devices: tuple[str, ...], out_dir: Path,
) -> tuple[AffinityAnalysis, dict[str, Any]]:  # fmt: skip
    """The runtime cross-check of `gputop affinity`: one profiled call per function, where the devices are here."""
    from gputop.core.errors import DeviceUnavailableError
    from gputop.core.module.devices import resolve_device
    from gputop.core.multidevice.transfer_check import observe_module

    try:
        infos = [resolve_device(spec) for spec in devices]
    except DeviceUnavailableError as exc:
        return analysis, {"observed": False, "notes": [f"not observed: {exc}"]}
    analysis, observations, notes = observe_module(
        analysis, source_path=source_path, flags=flags, devices=infos, out_dir=out_dir, source_bytes=source_bytes
    )
    return analysis, {
        "observed": bool(observations),
        "source": "one call per function, profiled by iree-benchmark-module (HAL queue events and command buffers)",
        "profiles": {o.affinity.function: o.profile_path for o in observations},
        "unexplained_copies": [
            {"function": o.affinity.function, "device_ordinal": c.device_ordinal, "bytes": c.bytes}
            for o in observations
            for c in o.unexplained
        ],
        "notes": notes,
    }


def command_capture_info(args: argparse.Namespace) -> int:
    from gputop.core.renderdoc.captures import capture_info
    from gputop.core.snapshot import to_json
    from gputop.tui.report_text import capture_text

    if args.passes < 1 or args.replay_timeout <= 0:
        raise UsageError("--passes must be at least 1 and --replay-timeout positive")

    def on_sigterm(_signum: int, _frame: Any) -> None:
        # Unwind as Ctrl-C does, so the reader and its replay are killed on the way out.
        raise Interrupted("capture-info: terminated", exit_code=EXIT_SIGTERM)

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        info = capture_info(
            args.file, replay=not args.no_replay, passes=args.passes, replay_timeout=args.replay_timeout
        )
    finally:
        signal.signal(signal.SIGTERM, previous)
    data = to_json(info)
    if args.json:
        _write_json(data, args.json)
    if args.json == "-":
        if info.reader_note:  # stdout is the JSON: the one line about what is missing goes beside it
            print(f"gputop: {info.reader_note}", file=sys.stderr)
    else:
        print(capture_text(data))
    return EXIT_OK


def command_serve(args: argparse.Namespace) -> int:
    from gputop.core.run import Session
    from gputop.core.serving.access import exposure_warning, load_token
    from gputop.core.serving.metrics import MetricsServer
    from gputop.core.versions import versions

    if args.profile_every < 0:
        raise UsageError("--profile-every must be 0 (never) or positive")
    config = _config_from(args, None, profile_every_s=args.profile_every or None, record_every_s=args.record_every)
    token = load_token(args.token)
    sessions: list[Session] = []
    server = MetricsServer(
        lambda: sessions[0].snapshot if sessions else None,
        args.metrics_port,
        args.metrics_addr,
        versions=versions(),
        token=token,
    )
    url = server.start()  # before the session: a port in use fails fast, leaving no session behind
    session = Session(config)
    sessions.append(session)
    needs = " (bearer token required)" if token else ""
    print(f"gputop: serving metrics at {url}{needs} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    warning = exposure_warning("metrics", args.metrics_addr, server.port, token)
    if warning:
        print(f"gputop: warning: {warning}", file=sys.stderr, flush=True)
    stop_code = _drive(session, progress=not args.quiet, first_profile=bool(args.profile_every))
    server.stop()
    return _ending(session, stop_code)


def _drive(session: Any, *, progress: bool, first_profile: bool = False) -> int:
    """Run `session` to its end or a signal, echoing its events; returns the signal's exit code or 0."""
    from gputop.core.snapshot import BUSY_STATES
    from gputop.tui.ending import SignalEnding, parent_pid
    from gputop.tui.report_text import parameters_progress

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
    ending = SignalEnding(
        interrupt=lambda code: session.stop(exit_code=code),
        wait=session.wait,
        abandon=session.record_interrupted_now,
        face="gputop",
    )
    # A child of gputop web lives as long as its server: a server killed outright must not leave it running.
    parent = parent_pid()
    ending.install()
    try:
        session.start()
        next_note = 0.0
        next_parameters = time.monotonic() + PARAMETERS_EVERY_S
        while not session.wait(0.1):
            if parent is not None and os.getppid() != parent:
                gone = f"the process that started this run (pid {parent}) is gone; stopping"
                print(f"gputop: {gone}", file=sys.stderr, flush=True)
                session.stop()
                parent = None
            snapshot = session.snapshot
            load = snapshot.parameters
            if progress and load is not None and not load.done and load.observed:
                if time.monotonic() >= next_parameters:
                    print(f"gputop: parameters {parameters_progress(load)}", file=sys.stderr, flush=True)
                    next_parameters = time.monotonic() + PARAMETERS_EVERY_S
                continue
            if progress and snapshot.state in BUSY_STATES and snapshot.state_since:
                # Long imports and compiles say they are alive, every PROGRESS_EVERY_S seconds.
                elapsed = time.time() - snapshot.state_since
                if elapsed >= PROGRESS_EVERY_S and elapsed >= next_note:
                    print(f"gputop: still {snapshot.state} ({elapsed:.0f} s)", file=sys.stderr, flush=True)
                    next_note = elapsed + PROGRESS_EVERY_S
                elif elapsed < next_note - PROGRESS_EVERY_S:
                    next_note = 0.0  # a new busy state began
    finally:
        ending.uninstall()
    return ending.code or 0


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
    from gputop.core.paths import new_session_dir
    from gputop.core.serving.access import exposure_warning, load_token, url_host
    from gputop.core.store.reader import read_manifest, resolve_session
    from gputop.tui.web import RunServer, serve_run

    tui_args = list(args.tui_args)
    if tui_args and tui_args[0] == "--":
        tui_args = tui_args[1:]
    if args.attach and tui_args:
        raise UsageError("gputop web: give a TARGET to run or --attach SESSION, not both")
    if not 0 < args.port <= 65535:
        raise UsageError(f"--port {args.port}: not a port number (1-65535)")
    if args.max_viewers < 1:
        raise UsageError(f"--max-viewers {args.max_viewers}: at least 1")
    token = load_token(args.token)
    engine: list[str] | None = None
    if args.attach:
        folder = resolve_session(args.attach)
        _must_be_live(folder, read_manifest(folder))
        what = f"the run in {folder}"
    else:
        tui = build_tui_parser().parse_args(tui_args)
        config = _config_from(tui, None)  # bad options fail here, once, before anything starts
        folder = tui.session_dir or new_session_dir(label=config.target_info.label)
        engine = [sys.executable, "-m", "gputop.tui", "serve", *tui_args]
        if tui.session_dir is None:
            engine += ["--session-dir", str(folder)]
        if tui.metrics_port is None:
            engine += ["--metrics-port", "0"]  # any free port on 127.0.0.1: serve needs one, nobody is told
        if tui.profile_every is None:
            engine += ["--profile-every", "0"]  # as in the TUI: profile passes when a viewer presses p
        if args.token is not None and tui.token is None:
            engine += ["--token", str(args.token)]
        what = f"{tui.target} (session {folder})"
    _check_port_free(args.host, args.port)
    base = args.public_url or f"http://{url_host(args.host)}:{args.port}"
    needs = "; open it once with ?token=... (the token is required)" if token else ""
    announce = (
        f"gputop: serving {what} to browsers at {base} (at most {args.max_viewers} viewers{needs}; Ctrl-C to stop)"
    )
    warning = exposure_warning("gputop web", args.host, args.port, token)
    if warning:
        announce += f"\ngputop: warning: {warning}"
    server = RunServer(
        folder,
        engine=engine,
        host=args.host,
        port=args.port,
        public_url=args.public_url,
        max_viewers=args.max_viewers,
        token=token,
    )
    return serve_run(server, announce)


def _must_be_live(folder: Path, manifest: dict[str, Any]) -> None:
    from gputop.core.store.follow import ENDED_STATES
    from gputop.core.store.reader import effective_state

    state = effective_state(manifest)
    if state in ENDED_STATES:
        raise UsageError(f"{folder.name}: the run has ended ({state}); 'gputop open {folder.name}' shows it")


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
    from gputop.core.snapshot import to_json
    from gputop.core.store.reader import list_sessions
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
    from gputop.core.store.reader import read_report, resolve_session
    from gputop.tui.report_text import run_report

    report = read_report(resolve_session(args.session))
    _write_json(report, args.json)
    if args.json != "-":
        print(run_report(report))
    return EXIT_OK


def command_open(args: argparse.Namespace) -> int:
    from gputop.core.store.follow import ENDED_STATES
    from gputop.core.store.reader import effective_state, read_manifest, read_tail, resolve_session
    from gputop.tui.app import run_replay

    folder = resolve_session(args.session)
    snapshots = read_tail(folder, OPEN_SNAPSHOTS)
    if not snapshots:
        raise UsageError(f"{folder}: the session has no samples to show")
    manifest = read_manifest(folder)
    if effective_state(manifest) not in ENDED_STATES:
        raise UsageError(
            f"{folder.name} is still running (pid {manifest.get('pid')}): 'gputop attach {folder.name}' follows it live"
        )
    return run_replay(snapshots)


def command_attach(args: argparse.Namespace) -> int:
    from gputop.core.store.reader import read_manifest, resolve_session
    from gputop.tui.app import run_attached

    folder = resolve_session(args.session)
    _must_be_live(folder, read_manifest(folder))
    return run_attached(folder)


def command_profile_info(args: argparse.Namespace) -> int:
    from gputop.core.profiling.profiles import read_profile
    from gputop.core.snapshot import to_json

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
    from gputop.core.run import Session
    from gputop.tui.report_text import run_report

    session = Session(_config_from(args, args.iterations))
    stop_code = _drive(session, progress=not args.quiet)
    report = session.report or session.current_report()
    _write_json(report, args.json)
    text_stream = sys.stderr if args.json == "-" else sys.stdout
    if session.error is not None and not report["calls"].get("count") and report["state"] == "error":
        # Failed before its first steady call: the error line says it all; the record is where to look.
        print(f"session   {report['session_dir']}", file=text_stream, flush=True)
    else:
        print(run_report(report), file=text_stream, flush=True)
    return _ending(session, stop_code)


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
    from gputop.core.serving.access import load_token
    from gputop.tui.app import run_app

    metrics = None
    if args.metrics_port is not None:
        metrics = (args.metrics_port, args.metrics_addr, load_token(args.token))
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
    "attach": command_attach,
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
            # The TUI's own options, whole: its usage text wraps over several lines.
            print("\nThe TUI, gputop [TARGET] [options]:\n" + build_tui_parser().format_help())
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
