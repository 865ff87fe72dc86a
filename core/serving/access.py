"""Who may reach gputop over the network: this machine only, unless the user says otherwise.

gputop serves Prometheus metrics and the TUI in browsers. Both listen on the
loopback address unless `--metrics-addr` / `--host` name another, and anything
else is announced with a warning, because a run's numbers (and, for the web
page, its controls) would then be open to anyone who can reach the port. A
token (`--token FILE`, or the `GPUTOP_TOKEN` environment variable) closes
that door again: `/metrics` then wants it as a bearer token and the web page
as `?token=` once (then a cookie). Comparisons are constant-time.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import socket
from pathlib import Path

from gputop.core.errors import UsageError

__all__ = [
    "LOOPBACK",
    "TOKEN_ENV",
    "bearer_matches",
    "exposure_warning",
    "is_loopback",
    "load_token",
    "url_host",
]

LOOPBACK = "127.0.0.1"
TOKEN_ENV = "GPUTOP_TOKEN"
MIN_TOKEN_CHARS = 16  # shorter ones are guessable; `openssl rand -hex 32` makes a good one


def is_loopback(host: str) -> bool:
    """True when `host` (an address or a name) reaches only this machine; "" and 0.0.0.0 mean every interface."""
    if host in ("", "0.0.0.0", "::"):
        return False
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)


def url_host(host: str) -> str:
    """`host` as it goes into a URL (IPv6 addresses in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def load_token(path: Path | None, *, option: str = "--token") -> str | None:
    """The token from `path` (its first line) or, without one, from $GPUTOP_TOKEN; None when neither is given."""
    if path is None:
        token = os.environ.get(TOKEN_ENV, "").strip()
        where = f"${TOKEN_ENV}"
    else:
        try:
            text = path.read_text(encoding="utf-8", errors="strict")
        except FileNotFoundError:
            raise UsageError(f"{option} {path}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{option} {path}: cannot read it ({exc})") from None
        lines = text.strip().splitlines()
        token = lines[0].strip() if lines else ""
        where = f"{option} {path}"
        if not token:
            raise UsageError(f"{where}: the file is empty")
    if not token:
        return None
    if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
        raise UsageError(f"{where}: a token is one word of {MIN_TOKEN_CHARS} characters or more (openssl rand -hex 32)")
    return token


def bearer_matches(header: str | None, token: str) -> bool:
    """Does an `Authorization` header carry `token` as its bearer token?"""
    if not header:
        return False
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def exposure_warning(what: str, host: str, port: int, token: str | None) -> str | None:
    """The warning to print when `what` listens beyond this machine; None on loopback."""
    if is_loopback(host):
        return None
    where = f"{url_host(host) or '*'}:{port}"
    if token is None:
        return (
            f"{what} listens on {where}, open to anyone who can reach this host: give --token FILE "
            f"(or ${TOKEN_ENV}), or keep it on {LOOPBACK} and use an SSH tunnel"
        )
    return f"{what} listens on {where}, beyond this machine; it asks for the token"
