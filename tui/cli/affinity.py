"""`gputop affinity TARGET --devices D1,D2`: on which device every argument and result of a multi-device module lives.

The compiler's analysis first, then (unless --static) one profiled call per function on the
devices, where they are here, to observe the bytes really moved; printed as a table or JSON.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gputop.tui.bridge import (
    EXIT_OK,
    AffinityAnalysis,
    DeviceUnavailableError,
    Target,
    TargetKind,
    UsageError,
    affinity_flags,
    analyse_module,
    device_names,
    new_session_dir,
    observe_module,
    resolve_device,
    target_flags_for_spec,
    to_json,
)
from gputop.tui.cli.command import Subcommand, write_json
from gputop.tui.cli.options import device_list

__all__ = ["SPEC", "add_arguments", "command_affinity"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", help="a .mlir file or demo:pipeline / demo:hidden-transfer")
    parser.add_argument("--devices", required=True, help="D1,D2[,...]: one named target device each (device_a, ...)")
    parser.add_argument("--json", metavar="PATH", help="write the records as JSON to PATH ('-' for stdout)")
    parser.add_argument(
        "--static",
        action="store_true",
        help="only the compiler's analysis: skip the profiled call that observes the bytes really moved",
    )
    parser.add_argument(
        "--input",
        "-i",
        action="append",
        default=[],
        metavar="VALUE",
        help="an input of the profiled call in iree-run-module syntax (2x3xf32=1, @x.npy; repeat per input; "
        "default random, seed 0); needed where an argument has a dynamic shape",
    )
    parser.add_argument(
        "--compile-flag",
        action="append",
        default=[],
        metavar="FLAG",
        help="extra iree-compile flag, e.g. --compile-flag=--iree-opt-const-eval=false; repeatable",
    )


def command_affinity(args: argparse.Namespace) -> int:
    # imported here: the text (~5 ms) only formats output, and `gputop --help` need not load it
    from gputop.tui.text import affinity_table

    devices = device_list(args.devices)
    flags = affinity_flags(list(devices), [target_flags_for_spec(d) for d in devices]) + tuple(args.compile_flag)
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
        analysis, observation = _observe_affinity(
            analysis, source_path, source_bytes, flags, devices, out_dir, tuple(args.input)
        )
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
        write_json(data, args.json)
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
    devices: tuple[str, ...], out_dir: Path, inputs: tuple[str, ...] = (),
) -> tuple[AffinityAnalysis, dict[str, Any]]:  # fmt: skip
    """The runtime cross-check of `gputop affinity`: one profiled call per function, where the devices are here."""
    try:
        infos = [resolve_device(spec) for spec in devices]
    except DeviceUnavailableError as exc:
        return analysis, {"observed": False, "notes": [f"not observed: {exc}"]}
    analysis, observations, notes = observe_module(
        analysis, source_path=source_path, flags=flags, devices=infos, out_dir=out_dir, source_bytes=source_bytes,
        inputs=inputs,
    )  # fmt: skip
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


SPEC = Subcommand(
    "affinity",
    "on which device every argument and result of a multi-device module lives",
    add_arguments,
    command_affinity,
)
