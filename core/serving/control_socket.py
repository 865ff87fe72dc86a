"""A run's local control channel: one-line JSON requests on a Unix socket in its session folder.

A run belongs to one process (a `gputop serve`, a headless `gputop run`, a
TUI), but others may watch it: `gputop attach` and the viewers of `gputop
web` follow its session folder and want to pause it or take a profile pass.
They ask through `control.sock`, which the run's process creates in its
session folder when it starts and removes when it ends. The socket carries
the user's permissions (mode 0600, and the server checks that the peer's uid
is its own): a machine's other users can read a session folder but cannot
drive the run. One request per connection: a JSON object on one line, one
JSON object back on one line (`{"ok": true, ...}` or `{"ok": false,
"reason": "..."}`). What a request does is the run's business: this module
only carries them.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from gputop.core.errors import UsageError

__all__ = ["CONTROL_SOCKET", "ControlServer", "ControlUnavailable", "ask"]

CONTROL_SOCKET = "control.sock"
REQUEST_LIMIT = 64 * 1024  # a request is a verb and a few fields
REPLY_LIMIT = 64 * 1024 * 1024  # a reply may carry a whole report
CLIENT_TIMEOUT_S = 1.0  # a connection that says nothing in this long is dropped (one request at a time)
SUN_PATH_MAX = 107  # sockaddr_un's sun_path, less its terminating NUL

Answer = Callable[[dict[str, Any]], dict[str, Any]]


class ControlUnavailable(UsageError):
    """The run's control channel cannot be reached (it ended, or it is not this user's)."""


@contextlib.contextmanager
def _address(folder: Path) -> Iterator[str]:
    """The socket's address; through /proc/self/fd when the path is longer than a sun_path holds."""
    path = str(folder / CONTROL_SOCKET)
    if len(os.fsencode(path)) <= SUN_PATH_MAX:
        yield path
        return
    fd = os.open(folder, os.O_PATH | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{CONTROL_SOCKET}"
    finally:
        os.close(fd)


def _read_line(conn: socket.socket, limit: int) -> bytes:
    data = bytearray()
    while b"\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > limit:
            raise ValueError(f"more than {limit} bytes")
    return bytes(data.split(b"\n", 1)[0])


class ControlServer:
    """Serves `answer(request) -> reply` on `FOLDER/control.sock` from one daemon thread."""

    def __init__(self, folder: Path, answer: Answer) -> None:
        self.folder = folder
        self.path = folder / CONTROL_SOCKET
        self._answer = answer
        self._listener: socket.socket | None = None
        self._wake_r, self._wake_w = -1, -1
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Bind the socket (replacing a stale one a killed process left) and serve; OSError if it cannot."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            # Linux gives the socket file the mode of the unbound socket's inode: 0600 from the start, no race.
            os.fchmod(listener.fileno(), 0o600)
            with _address(self.folder) as address:
                listener.bind(address)
            listener.listen(8)
        except OSError:
            listener.close()
            raise
        self._listener = listener
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._serve, name="gputop-control", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving and remove the socket (idempotent)."""
        listener, self._listener = self._listener, None
        if listener is None:
            return
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)
        listener.close()
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(FileNotFoundError, OSError):
            os.unlink(self.path)

    def _serve(self) -> None:
        listener = self._listener
        if listener is None:
            return
        with selectors.DefaultSelector() as selector:
            selector.register(listener, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            while True:
                ready = {key.fileobj for key, _ in selector.select()}
                if self._wake_r in ready:
                    return
                try:
                    conn, _ = listener.accept()
                except OSError:
                    continue
                with conn:
                    self._handle(conn)

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(CLIENT_TIMEOUT_S)
        try:
            line = _read_line(conn, REQUEST_LIMIT)  # read first, so that a refusal reaches its asker
            uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[1]
            if uid != os.getuid():
                reply: dict[str, Any] = {"ok": False, "reason": "this run belongs to another user"}
            else:
                request = json.loads(line)
                if not isinstance(request, dict) or not isinstance(request.get("op"), str):
                    reply = {"ok": False, "reason": 'a request is a JSON object with an "op"'}
                else:
                    reply = self._answer(request)
        except (OSError, ValueError) as exc:
            reply = {"ok": False, "reason": f"bad request ({exc})"}
        except Exception as exc:  # the run's answer failed: say so, keep serving
            reply = {"ok": False, "reason": f"internal error: {exc}"}
        with contextlib.suppress(OSError, TypeError, ValueError):
            conn.sendall(json.dumps(reply, default=str).encode() + b"\n")


def ask(folder: Path, op: str, *, timeout: float = 2.0, **fields: Any) -> dict[str, Any]:
    """Send one request to the run whose session folder is `folder`; returns its reply.

    Raises ControlUnavailable (one line) when nothing answers there.
    """
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(timeout)
    try:
        with _address(folder) as address:
            client.connect(address)
        client.sendall(json.dumps({"op": op, **fields}).encode() + b"\n")
        line = _read_line(client, REPLY_LIMIT)
    except FileNotFoundError:
        raise ControlUnavailable(f"{folder}: the run has no control channel (it has ended)") from None
    except ConnectionRefusedError:
        raise ControlUnavailable(f"{folder}: nothing answers on {CONTROL_SOCKET} (the run has ended)") from None
    except PermissionError:
        raise ControlUnavailable(f"{folder}: {CONTROL_SOCKET} belongs to another user") from None
    except (OSError, ValueError) as exc:
        raise ControlUnavailable(f"{folder}: the run did not answer ({exc})") from None
    finally:
        client.close()
    try:
        reply = json.loads(line)
    except ValueError:
        raise ControlUnavailable(f"{folder}: the run's answer was not JSON") from None
    if not isinstance(reply, dict):
        raise ControlUnavailable(f"{folder}: the run's answer was not a JSON object")
    return reply
