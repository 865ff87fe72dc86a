"""`gputop web [TARGET [OPTIONS]]`: one run served to web browsers through textual-serve.

gputop starts one engine (`gputop serve` in a child process, with the TUI's options) or attaches
to a live run, and every visitor gets a viewer of it. Everything that can be refused (options,
the port, an ended session) is refused here, in one line, before the server starts.
"""

from __future__ import annotations

import argparse
import socket
import sys

from gputop.tui.bridge import UsageError, exposure_warning, load_token, new_session_dir, url_host
from gputop.tui.cli.attach import must_be_live
from gputop.tui.cli.command import Subcommand
from gputop.tui.cli.options import add_token_option, config_from
from gputop.tui.cli.tui import build_tui_parser, without_baseline

__all__ = ["SPEC", "add_arguments", "add_own_options", "command_web", "take_web_options"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_own_options(parser)
    parser.add_argument(
        "tui_args",
        nargs=argparse.REMAINDER,
        metavar="TARGET [OPTIONS]",
        help="what the engine runs; web's own options may come after it too",
    )


def add_own_options(parser: argparse.ArgumentParser) -> None:
    """The web server's own options, which the engine does not have."""
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1: this machine only)"
    )
    parser.add_argument("--port", type=int, default=8000, help="port to serve on (default 8000)")
    parser.add_argument("--public-url", help="URL browsers reach the server at, behind a proxy")
    parser.add_argument(
        "--max-viewers", type=int, default=4, metavar="N", help="browsers watching at once (default 4); more see a page"
    )
    add_token_option(parser, "the page wants it (?token=... once, then a cookie) (default: $GPUTOP_TOKEN when set)")
    parser.add_argument("--attach", metavar="SESSION", help="serve a run another gputop process drives, starting none")


def command_web(args: argparse.Namespace) -> int:
    # imported here: gputop.tui.web loads textual-serve and aiohttp, ~0.25 s that only `gputop web` needs;
    # the store's reader (~4 ms) is not for `gputop --help` either
    from gputop.tui.bridge import read_manifest, resolve_session
    from gputop.tui.web import RunServer, serve_run

    tui_args = take_web_options(args, list(args.tui_args))
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
        must_be_live(folder, read_manifest(folder))
        what = f"the run in {folder}"
    else:
        tui = build_tui_parser().parse_args(tui_args)
        config = config_from(tui, None)  # bad options fail here, once, before anything starts
        folder = tui.session_dir or new_session_dir(label=config.target_info.label)
        engine = [sys.executable, "-m", "gputop.tui", "serve", *without_baseline(tui_args)]
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


def take_web_options(args: argparse.Namespace, tui_args: list[str]) -> list[str]:
    """`tui_args` without the web server's own options, which go into `args`: a user writes
    `gputop web demo:mlp --device cuda --port 8123`, and the engine has no --port. `--token` after
    the target guards the page (the engine gets it too); whatever follows a `--` is the engine's."""
    cut = tui_args.index("--") if "--" in tui_args else len(tui_args)
    own = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    add_own_options(own)
    defaults = {action.dest: action.default for action in own._actions}
    own.set_defaults(**dict.fromkeys(defaults))
    try:
        found, rest = own.parse_known_args(tui_args[:cut])
    except argparse.ArgumentError as exc:
        raise UsageError(f"gputop web: {exc}") from None
    for name, default in defaults.items():
        value = getattr(found, name)
        if value is None:
            continue
        before = getattr(args, name)
        if before != default and before != value:
            raise UsageError(f"gputop web: {'--' + name.replace('_', '-')} given twice ({before} and {value})")
        setattr(args, name, value)
    return rest + tui_args[cut + 1 :]


def _check_port_free(host: str, port: int) -> None:
    """A port in use is one line before the web server starts, not its traceback after."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise UsageError(f"--port {port} on {host}: {exc.strerror}") from None


SPEC = Subcommand(
    "web",
    "serve one run to web browsers (textual-serve); options after TARGET go to its engine, but web's own",
    add_arguments,
    command_web,
    description="Serve one run to browsers: gputop starts one engine (or attaches to a live run) and every "
    "visitor gets a viewer of it.",
)
