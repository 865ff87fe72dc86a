"""The `gputop` command line: `gputop [TARGET]` (the TUI), `gputop run`, `gputop devices` and the rest.

This package holds one module per command (`run`, `serve`, `web`, `tui`, ...), the options they
share (`options`) and the headless runner (`headless`); here they become one parser and one
entry point. Every path through `run_cli` ends in an exit code from gputop's contract (0 ok,
2 usage, 3 compile, 4 device unavailable, 5 runtime, 6 check failed, 7 regression, 130/143 interrupted) and,
on failure, one line on stderr. Tracebacks go to a crash log in the user's own state or session
folder (`gputop.core.paths.write_crash_log`), never to the user's terminal; where none can be
written, the one line still comes, without a path.
`main` ends the process with `os._exit` once output is flushed, because IREE's bindings can
print leak warnings or crash in their own teardown at interpreter exit after a clean run.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import os
import sys
import traceback
from collections.abc import Callable

from gputop.tui.bridge import (
    EXIT_OK,
    EXIT_RUNTIME,
    EXIT_SIGINT,
    EXIT_SIGPIPE,
    GputopError,
    UsageError,
    versions,
    write_crash_log,
)
from gputop.tui.cli import (
    affinity,
    attach,
    capture_info,
    compare,
    devices,
    fleet,
    profile_info,
    report,
    run,
    serve,
    sessions,
    watch_path,
    web,
)
from gputop.tui.cli.command import Subcommand
from gputop.tui.cli.open import SPEC as OPEN_SPEC
from gputop.tui.cli.optional_values import optional_values_alone
from gputop.tui.cli.program import split_program
from gputop.tui.cli.tui import build_tui_parser, command_tui

__all__ = [
    "ASCII_FALLBACK",
    "COMMANDS",
    "SPECS",
    "SUBCOMMANDS",
    "VersionAction",
    "ascii_fallback",
    "build_parser",
    "build_tui_parser",
    "command_parser",
    "internal_error",
    "main",
    "reader_left",
    "run_cli",
    "version_line",
]

# Every `gputop COMMAND`, in the order `gputop --help` lists them.
COMMANDS: tuple[Subcommand, ...] = (
    run.SPEC,
    affinity.SPEC,
    capture_info.SPEC,
    profile_info.SPEC,
    serve.SPEC,
    web.SPEC,
    sessions.SPEC,
    report.SPEC,
    compare.SPEC,
    OPEN_SPEC,
    attach.SPEC,
    fleet.SPEC,
    devices.SPEC,
    watch_path.SPEC,
)

# The commands that watch a user's program given after `--` (and the TUI, `gputop -- CMD`).
PROGRAM_COMMANDS = ("run", "serve")

# Every `gputop COMMAND`'s function; anything else on the command line is the TUI's.
SUBCOMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {spec.name: spec.command for spec in COMMANDS}
SPECS: dict[str, Subcommand] = {spec.name: spec for spec in COMMANDS}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gputop",
        description="Watch IREE modules run on GPUs and CPUs: phases, call times, memory, diagnostics.",
        epilog="'gputop [TARGET]' starts the live TUI; 'gputop -- python app.py' watches your own program (also "
        "'gputop run -- CMD' and 'gputop serve -- CMD'); 'gputop run TARGET' prints a report; 'gputop sessions' "
        "lists past runs; 'gputop attach SESSION' follows a live one; 'gputop serve TARGET' exports Prometheus "
        "metrics; 'gputop fleet --prometheus URL' shows every run a Prometheus scrapes; 'gputop compare A B' "
        "compares two runs. Exit codes: 0 ok, 2 usage, 3 compile, 4 device, "
        "5 runtime, 6 check failed, 7 regression (--fail-above), 130/143/129 "
        "interrupted.",
    )
    parser.add_argument("--version", action=VersionAction, help="print gputop's version and exit")
    sub = parser.add_subparsers(dest="command")
    for spec in COMMANDS:
        # Every command's --help opens with a line on what it does: its own, else its one-line help.
        description = spec.description or f"{spec.help[0].upper()}{spec.help[1:]}."
        spec.add_arguments(sub.add_parser(spec.name, help=spec.help, description=description))
    return parser


def version_line() -> str:
    """`gputop --version`: gputop's version from its package metadata, and the IREE and Python it runs on."""
    found = versions()
    iree = f"iree-base-compiler {found['iree_compiler'] or '-'}, iree-base-runtime {found['iree_runtime'] or '-'}"
    return f"gputop {found['gputop'] or '(not installed: no package metadata)'} ({iree}, Python {found['python']})"


class VersionAction(argparse.Action):
    """`--version` in `gputop --help`, read from the package metadata only when asked (~0.1 s, not every parse)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=str(kwargs.get("help")))

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(version_line())
        parser.exit()


def command_parser(name: str) -> argparse.ArgumentParser:
    """`gputop NAME`'s own parser, alone (what its options are, for reading its command line)."""
    parser = argparse.ArgumentParser(prog=f"gputop {name}", add_help=False)
    SPECS[name].add_arguments(parser)
    return parser


def run_cli(argv: list[str] | None = None) -> int:
    """Run gputop with `argv`; return the exit code (no os._exit: safe in-process)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        own, program = split_program(argv)  # `-- CMD`: the user's command, whole, never parsed as gputop's
        if own and own[0] in SUBCOMMANDS:
            own = [own[0], *optional_values_alone(command_parser(own[0]), own[1:])]
            args = build_parser().parse_args(own)
            if program is not None and args.command not in PROGRAM_COMMANDS:
                raise UsageError(f"gputop {args.command} takes no -- CMD (gputop -- CMD, run and serve do)")
            args.program = program
            return int(SUBCOMMANDS[args.command](args))
        if argv and argv[0] == "--version":
            print(version_line())
            return EXIT_OK
        if argv and argv[0] in ("-h", "--help"):
            build_parser().print_help()
            # The TUI's own options, whole: its usage text wraps over several lines.
            print("\nThe TUI, gputop [TARGET] [options]:\n" + build_tui_parser().format_help())
            return EXIT_OK
        return command_tui(own, program)
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
        return internal_error(exc)


def internal_error(exc: BaseException) -> int:
    """An error gputop did not expect: its traceback to the crash log, one line to stderr, exit 5."""
    # Nothing here may raise: a second traceback on the user's terminal is what this is for avoiding.
    try:
        log = write_crash_log(traceback.format_exc())
    except Exception:
        log = None
    where = f" (traceback in {log})" if log is not None else " (no crash log could be written)"
    with contextlib.suppress(Exception):
        print(f"gputop: internal error: {exc}{where}", file=sys.stderr)
    return EXIT_RUNTIME


def reader_left() -> int:
    """stdout's reader closed the pipe: nothing more can be said there, and it is no error of ours."""
    # Python would try to flush the dead pipe once more at exit and complain; point stdout at /dev/null.
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_SIGPIPE


# What text output says in ASCII where the terminal or locale cannot show more (TERM=dumb, LC_ALL=C).
ASCII_FALLBACK: dict[str, str] = {
    "\u2502": "|", "\u2551": "|", "\u2500": "-", "\u2550": "=", "\u2014": "-", "\u2013": "-",
    "\u250c": "+", "\u2510": "+", "\u2514": "`-", "\u2518": "+", "\u251c": "|-", "\u2524": "-|",
    "\u252c": "+", "\u2534": "+", "\u253c": "+", "\u00b5": "u", "\u03bc": "u", "\u2026": "...",
    "\u00b1": "+-", "\u00b7": ".", "\u00d7": "x", "\u2192": "->", "\u2190": "<-", "\u2264": "<=",
    "\u2265": ">=", "\u2248": "~", "\u26a0": "!", "\u25cf": "*", "\u2588": "#", "\u2593": "#",
    "\u2592": ":", "\u2591": ".", "\u2581": "_", "\u2582": "_", "\u2583": "-", "\u2584": "-",
    "\u2585": "=", "\u2586": "=", "\u2587": "#", "\u2713": "ok", "\u2717": "x", "\u00b0": "deg",
}  # fmt: skip


def _ascii_errors(error: UnicodeError) -> tuple[str, int]:
    """The codec error handler `gputop-ascii`: each character the stream cannot encode, in ASCII (else `?`)."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object[error.start : error.end]
    return "".join(ASCII_FALLBACK.get(char, "?") for char in text), error.end


codecs.register_error("gputop-ascii", _ascii_errors)


def ascii_fallback(argv: list[str]) -> None:
    """Text output in ASCII where the terminal is `TERM=dumb` or the locale's encoding lacks box characters.

    Only for the commands that print text (`gputop run`, `sessions`, `report`, ...): the TUI draws
    through Textual. JSON is ASCII already (escaped), so it is unchanged.
    """
    if not argv or (argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help")):
        return
    dumb = os.environ.get("TERM") == "dumb"
    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None) or "ascii"
        try:
            "\u2502\u00b5\u2026".encode(encoding)
            fits = True
        except (UnicodeError, LookupError):
            fits = False
        if fits and not dumb:
            continue
        with contextlib.suppress(AttributeError, ValueError, OSError):
            stream.reconfigure(encoding="ascii" if dumb else encoding, errors="gputop-ascii")  # type: ignore[union-attr]


def main() -> None:
    """Console entry point: run, flush, and leave without IREE's exit-time noise."""
    ascii_fallback(sys.argv[1:])
    code = run_cli()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = reader_left()
    with contextlib.suppress(OSError):
        sys.stderr.flush()
    os._exit(code)
