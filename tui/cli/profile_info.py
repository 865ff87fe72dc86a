"""`gputop profile-info FILE`: the kernel table of an .ireeprof profile bundle, as text or JSON.

A reader for profiles recorded earlier (by `gputop run --profile` or the TUI's p key), with no
device and no run involved.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gputop.tui.bridge import EXIT_OK, read_profile, to_json
from gputop.tui.cli.command import Subcommand, write_json

__all__ = ["SPEC", "add_arguments", "command_profile_info"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path)
    parser.add_argument("--json", metavar="PATH", help="write the table as JSON to PATH ('-' for stdout)")


def command_profile_info(args: argparse.Namespace) -> int:
    summary = read_profile(args.file)
    data = to_json(summary)
    if args.json:
        write_json(data, args.json)
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


SPEC = Subcommand(
    "profile-info", "print the kernel table of an .ireeprof profile bundle", add_arguments, command_profile_info
)
