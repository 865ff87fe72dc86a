"""The options a run takes on the command line, written once, and what the command line makes of them.

Three faces start a run: the TUI (`gputop [TARGET]`), `gputop run` (counted, then a report) and
`gputop serve` (until stopped, with metrics). They share nearly every option, so the options live
here as one table of `Option` specs, each naming the faces it belongs to; `add_run_options` applies
the table to a face's parser. The Prometheus options (TUI and serve) and the token option (those
and `gputop web`) are written once too. `config_from` turns parsed options into the `RunConfig`
that checks them. What every command shares besides (its `Subcommand`, `--json PATH`) is `command`'s;
how argv is put in order before argparse reads it (`--capture [N]` before a target) is `optional_values`'.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gputop.tui.bridge import (
    LOOPBACK,
    PARAMETER_MODES,
    RENDERDOC_MODES,
    TOKEN_ENV,
    RunConfig,
    UsageError,
    config_default,
    demo_targets,
)

__all__ = [
    "RUN_OPTIONS",
    "Face",
    "Option",
    "add_metrics_options",
    "add_run_options",
    "add_token_option",
    "config_from",
    "device_list",
]

Face = Literal["tui", "run", "serve"]  # the TUI; `gputop run` (counted); `gputop serve` (until stopped)


@dataclass(frozen=True)
class Option:
    """One `add_argument` call, and the faces whose parsers get it."""

    flags: tuple[str, ...]
    settings: Mapping[str, Any]
    faces: frozenset[Face]

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(*self.flags, **self.settings)


def option(*flags: str, faces: tuple[Face, ...] = ("tui", "run", "serve"), **settings: Any) -> Option:
    return Option(flags, settings, frozenset(faces))


# Every option of a run, in the order --help lists them.
RUN_OPTIONS: tuple[Option, ...] = (
    option(
        "target",
        nargs="?",
        default="demo:mlp",
        help="a .mlir, .onnx or .vmfb file, an OpenCL run spec (.toml), or a demo: "
        + ", ".join(f"{name} (default)" if name == "demo:mlp" else name for name in demo_targets()),
    ),
    option(
        "--device",
        "-d",
        help="local-task (cpu), local-sync, vulkan[:N], cuda[:N], hip[:N], or opencl[:N] for OpenCL run specs; "
        "default: the best there is (gputop devices lists them)",
    ),
    option(
        "--devices",
        metavar="D1,D2",
        help="multi-device run: one named target device each, device_a, device_b, ... in this order",
    ),
    option(  # the TUI and gputop serve call until stopped
        "--iterations",
        "-n",
        faces=("run",),
        type=int,
        default=config_default("iterations"),
        help=f"steady calls after the first call (default {config_default('iterations')}; 0: first call only)",
    ),
    option("--function", "-f", help="function to call (default: the module's first export)"),
    option(
        "--input",
        "-i",
        action="append",
        default=[],
        metavar="VALUE",
        help="an input in iree-run-module syntax: 2x3xf32=1, 4xf32=1,2,3,4 or @x.npy (repeat per input)",
    ),
    option(
        "--params",
        action="append",
        default=[],
        metavar="FILE",
        type=Path,
        help="parameter file (.irpa, .safetensors, .gguf), scope 'model'; repeatable",
    ),
    option(
        "--params-mode",
        choices=PARAMETER_MODES,
        default=config_default("params_mode"),
        help="how parameters reach the device: streamed (gputop's loader: many reads in flight, progress shown), "
        "mmap or file_async (IREE's); auto picks the fastest measured for the device (default)",
    ),
    option(
        "--seed",
        type=int,
        default=config_default("seed"),
        help=f"seed for random inputs (default {config_default('seed')})",
    ),
    option(
        "--compile-flag",
        action="append",
        default=[],
        metavar="FLAG",
        help="extra iree-compile flag, e.g. --compile-flag=--iree-opt-level=O3; repeatable",
    ),
    option(
        "--target-flags",
        metavar="FLAGS",
        help="replace the device's target flags, e.g. '--iree-hal-target-device=cuda --iree-cuda-target=sm_80'",
    ),
    option(
        "--check",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="reference for an output (.npy or ONNX .pb), one per output in order; exit 6 if it differs",
    ),
    option(
        "--rtol",
        type=float,
        default=config_default("rtol"),
        help="check tolerance relative to max|reference| (default per dtype: f64 1e-7, f32 1e-4, f16 2e-3, "
        "bf16 1.6e-2; integers exact)",
    ),
    option("--atol", type=float, default=config_default("atol"), help="absolute check tolerance (default per dtype)"),
    option("--no-cache", action="store_true", help="compile even if a cached module exists"),
    option("--session-dir", type=Path, help="where logs and artefacts of this run go"),
    option(
        "--sample-interval",
        type=float,
        default=config_default("sample_interval_s"),
        help=f"memory sampling period in seconds (default {config_default('sample_interval_s')})",
    ),
    option(
        "--renderdoc",
        choices=RENDERDOC_MODES,
        default=config_default("renderdoc"),
        help="load RenderDoc for Vulkan runs: auto (when it can capture), on (fail if it cannot), off",
    ),
    option(
        "--profile-calls",
        faces=("tui",),
        type=int,
        default=config_default("profile_calls"),
        help=f"calls in each profile pass (the p key, --profile-every) (default {config_default('profile_calls')})",
    ),
    option(
        "--profile-calls",
        faces=("serve",),
        type=int,
        default=config_default("profile_calls"),
        help=f"calls in each profile pass (default {config_default('profile_calls')})",
    ),
    option(
        "--profile-calls",
        faces=("run",),
        type=int,
        metavar="N",
        help="calls in the --profile pass (default: as many as --iterations)",
    ),
    option(
        "--warmup",
        type=float,
        default=config_default("warmup_s"),
        metavar="SECONDS",
        help="before each profile pass, call until the GPU clock is steady, at most SECONDS "
        f"(default {config_default('warmup_s'):g}; 0: off; nothing to wait for without an NVIDIA GPU)",
    ),
    option(
        "--no-pm-sampling",
        action="store_true",
        help="do not sample the GPU's own counters (SM, tensor and DRAM throughput, SM clock) while the calls run "
        "(CUDA, CUPTI PM sampling; on by default there; the TUI's g turns it on and off)",
    ),
    option(
        "--pm-interval-ms",
        type=float,
        default=config_default("pm_interval_ms"),
        metavar="MS",
        help=f"PM sampling's interval (default {config_default('pm_interval_ms'):g} ms)",
    ),
    option(
        "--profile-every",
        faces=("tui",),
        type=float,
        metavar="SECONDS",
        help="keep profiling every SECONDS, merging passes",
    ),
)


def add_run_options(parser: argparse.ArgumentParser, face: Face) -> None:
    """The options of a run, as `face` takes them (the TUI's include the Prometheus ones)."""
    for spec in RUN_OPTIONS:
        if face in spec.faces:
            spec.add_to(parser)
    if face == "tui":
        add_metrics_options(parser, required=False)


def add_metrics_options(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """--metrics-port/--metrics-addr/--token: `gputop serve` always serves metrics, the TUI when asked."""
    # imported here: prometheus_client costs ~25 ms, and `import gputop.tui.cli` alone need not pay it
    from gputop.tui.bridge import DEFAULT_PORT

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
    add_token_option(parser, f"/metrics then wants it as a bearer token (default: ${TOKEN_ENV} when set)")


def add_token_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--token", type=Path, metavar="FILE", help=f"a file whose first line is the token; {what}")


def config_from(args: argparse.Namespace, iterations: int | None, **more: Any) -> RunConfig:
    """The one thing the command line makes of a run's options: a `RunConfig` (which checks them)."""
    counted = getattr(args, "command", None) == "run"  # `gputop run`: its --profile pass has its own call count
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
        profile=bool(getattr(args, "profile", None)),
        profile_level=getattr(args, "profile", None) or "default",
        counters=bool(getattr(args, "counters", False)),
        profile_calls=config_default("profile_calls") if args.profile_calls is None else args.profile_calls,
        profile_pass_calls=args.profile_calls if counted else None,
        profile_every_s=getattr(args, "profile_every", None),
        devices=device_list(args.devices) if args.devices else (),
        renderdoc=args.renderdoc,
        capture_calls=getattr(args, "capture", 0) or 0,
        warmup_s=args.warmup,
        pm_sampling=not args.no_pm_sampling,
        pm_interval_ms=args.pm_interval_ms,
    )
    return RunConfig(**{**options, **more})


def device_list(text: str) -> tuple[str, ...]:
    """--devices D1,D2: two or more device specs."""
    devices = tuple(part.strip() for part in text.split(",") if part.strip())
    if len(devices) < 2:
        raise UsageError("--devices takes two or more devices, e.g. local:0,local:1 or cuda:0,cuda:1")
    return devices
