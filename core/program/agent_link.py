"""The engine's end of the watchers' reports: a Unix socket each watched Python process connects to.

Each process of the user's command that imports `iree.runtime` connects once
and sends JSON lines (protocol v1, written down in `inject/gputop_agent/__init__.py`):
a `hello` naming its pid, then phases, batches of calls, memory and notes, and
`bye` at its exit. Every connection is read on a thread of its own here, in
gputop's engine process, so nothing of the reading, parsing or recording runs
in the program. A line that is not JSON, or a stream cut off mid-line (the
process was killed), ends that connection's reading, not the run. Requests
back to the watcher (`{"op": ...}`) go down the same socket.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gputop.core.serving.control_socket import peer_credentials

__all__ = ["LINE_LIMIT", "AgentConnection", "AgentListener"]

LINE_LIMIT = 16 * 1024 * 1024  # one batch of calls; a longer line is not the watcher's
SOCKET_NAME = "agent.sock"


class AgentConnection:
    """One watched process's stream: its events to `on_event`, in order, then `on_closed` once."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn = conn
        self._send_lock = threading.Lock()
        self.on_event: Callable[[dict[str, Any]], None] | None = None
        self.on_closed: Callable[[str | None], None] | None = None  # why it was cut off; None after a bye
        self.pid: int | None = None  # from its hello
        self.hello: dict[str, Any] | None = None
        self._thread: threading.Thread | None = None
        self._saw_bye = False
        self._buffer = b""

    def read_hello(self, timeout: float = 5.0) -> dict[str, Any] | None:
        """The first line, which names the process; None when it is not a watcher's hello."""
        self._conn.settimeout(timeout)
        try:
            line = self._readline()
        except OSError:
            return None
        finally:
            self._conn.settimeout(None)
        event = _parse(line) if line else None
        if event is None or event.get("kind") != "hello" or not isinstance(event.get("pid"), int):
            return None
        self.hello = event
        self.pid = int(event["pid"])
        return event

    def start(self) -> None:
        """Read the rest on a thread of its own; call once `on_event` and `on_closed` are set."""
        self._thread = threading.Thread(target=self._read_all, name=f"gputop-agent-{self.pid}", daemon=True)
        self._thread.start()

    def send(self, request: dict[str, Any]) -> bool:
        """A request to the watcher; False when it cannot be sent (the process is gone)."""
        data = (json.dumps(request) + "\n").encode()
        with self._send_lock:
            try:
                self._conn.sendall(data)
            except OSError:
                return False
        return True

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._conn.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._conn.close()

    def _readline(self) -> bytes:
        while b"\n" not in self._buffer:
            chunk = self._conn.recv(65536)
            if not chunk:
                rest, self._buffer = self._buffer, b""
                return rest  # a line cut off (or nothing): the caller sees it fail to parse
            self._buffer += chunk
            if len(self._buffer) > LINE_LIMIT:
                raise OSError("a line over the limit")
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line + b"\n"

    def _read_all(self) -> None:
        why: str | None = "the process ended without saying goodbye"
        try:
            while True:
                line = self._readline()
                if not line:
                    break
                event = _parse(line)
                if event is None:
                    why = "the watcher sent a line gputop cannot read"
                    break
                if event.get("kind") == "bye":
                    self._saw_bye = True
                if self.on_event is not None:
                    self.on_event(event)
        except OSError as exc:
            why = f"the watcher's stream broke: {exc}"
        finally:
            self.close()
            if self.on_closed is not None:
                self.on_closed(None if self._saw_bye else why)


def _parse(line: bytes) -> dict[str, Any] | None:
    if not line.endswith(b"\n"):
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) and isinstance(event.get("kind"), str) else None


class AgentListener:
    """Accepts the watchers' connections on a socket in a private folder of its own (short enough for sun_path)."""

    def __init__(self, on_connection: Callable[[AgentConnection], None], path: Path | None = None) -> None:
        """`path`: where to listen (`gputop.watch()` names it); by default a new private folder's socket."""
        self._on_connection = on_connection
        self._folder = path.parent if path is not None else Path(tempfile.mkdtemp(prefix="gputop-watch-"))
        self.path = path if path is not None else self._folder / SOCKET_NAME
        self._server: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()

    def start(self) -> None:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(self.path))
        os.chmod(self.path, 0o600)  # the user's own processes only
        server.listen(64)
        self._server = server
        self._thread = threading.Thread(target=self._accept, name="gputop-agent-listener", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        server = self._server
        while server is not None and not self._closed.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=self._greet, args=(conn,), name="gputop-agent-hello", daemon=True).start()

    def _greet(self, conn: socket.socket) -> None:
        agent = AgentConnection(conn)
        if agent.read_hello() is None or _peer_uid(conn) not in (None, os.getuid()):
            agent.close()
            return
        self._on_connection(agent)

    def close(self) -> None:
        self._closed.set()
        server, self._server = self._server, None
        if server is not None:
            with contextlib.suppress(OSError):
                server.close()
        with contextlib.suppress(OSError):
            self.path.unlink()
        with contextlib.suppress(OSError):
            self._folder.rmdir()


def _peer_uid(conn: socket.socket) -> int | None:
    """The connecting process's uid, None where the platform does not say (no SO_PEERCRED)."""
    try:
        return peer_credentials(conn)[1]
    except (OSError, AttributeError):
        return None
