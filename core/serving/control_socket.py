"""A run's local control channel: one-line JSON requests on a Unix socket in its session folder, and a live stream.

A run belongs to one process (a `gputop serve`, a headless `gputop run`, the
engine a TUI started), but others may watch it: `gputop attach`, the TUI that
started it, and the viewers of `gputop web`. They ask through `control.sock`,
which the run's process creates in its session folder when it starts and
removes when it ends. The socket carries the user's permissions (mode 0600,
and the server checks that the peer's uid is its own): a machine's other
users can read a session folder but cannot drive the run. A request is a JSON
object on one line and gets one JSON object back on one line (`{"ok": true,
...}` or `{"ok": false, "reason": "..."}`); each request is answered on its
own short-lived thread and must arrive whole within `CLIENT_TIMEOUT_S`, so
one slow sender never holds up another viewer. One request is special:
`{"op": "subscribe"}` keeps its connection open, and the run pushes every
published snapshot down it as one JSON line, serialised once, off the run's
call thread (`SnapshotStream`). A viewer that reads slowly, or is stopped,
skips snapshots (it always gets the newest whole line next) and the run never
waits for it. Requests from the run's owner (the process whose pid the server
was given: the TUI that started the engine) carry `"owner": true`, set here
from the peer's credentials, never from the request. What a request does is
the run's business: this module only carries them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from gputop.core.errors import ControlUnavailable

__all__ = [
    "CONTROL_SOCKET",
    "ControlServer",
    "ControlUnavailable",
    "SnapshotStream",
    "StreamReader",
    "ask",
    "peer_credentials",
]

CONTROL_SOCKET = "control.sock"
REQUEST_LIMIT = 64 * 1024  # a request is a verb and a few fields
REPLY_LIMIT = 64 * 1024 * 1024  # a reply may carry a whole report
LINE_LIMIT = 64 * 1024 * 1024  # one streamed snapshot
CLIENT_TIMEOUT_S = 2.0  # a request must arrive whole within this long (each request has its own thread)
BACKLOG = 128  # connections the kernel queues before accept: many viewers saying hello at once still get in
MAX_HANDLERS = 32  # requests answered at once; beyond that one line says busy
MAX_SUBSCRIBERS = 64  # live streams at once
STREAM_RETRY_S = 0.05  # a subscriber whose socket was full is tried again this often
SUN_PATH_MAX = 107  # sockaddr_un's sun_path, less its terminating NUL

Answer = Callable[[dict[str, Any]], dict[str, Any]]


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


def _read_line(conn: socket.socket, limit: int, deadline: float | None = None) -> bytes:
    data = bytearray()
    while b"\n" not in data:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request did not arrive whole in time")
            conn.settimeout(left)
        try:
            chunk = conn.recv(65536)
        except TimeoutError:
            raise TimeoutError("the request did not arrive whole in time") from None
        if not chunk:
            break
        data += chunk
        if len(data) > limit:
            raise ValueError(f"more than {limit} bytes")
    return bytes(data.split(b"\n", 1)[0])


def _send_reply(conn: socket.socket, reply: dict[str, Any]) -> bool:
    try:
        conn.sendall(json.dumps(reply, default=str).encode() + b"\n")
    except (OSError, TypeError, ValueError):
        return False
    return True


@dataclasses.dataclass
class _Subscriber:
    next_line: bytes | None = None  # the newest line not yet begun
    pending: memoryview | None = None  # the rest of the line being sent
    stalled: bool = False  # its socket was full at the last try: it reads nothing now (Ctrl-Z, or slow)


class SnapshotStream:
    """Pushes the newest snapshot line to every subscribed connection, never blocking its caller.

    `offer(line)` comes from the record writer's thread with each snapshot
    already serialised; it keeps the line and wakes one sender thread, which
    writes to every subscriber without blocking. A subscriber whose socket is
    full finishes the line it was sent (lines are never torn) and then gets the
    newest line, skipping those in between; one that hung up is dropped. While
    every subscriber is stalled (its socket full: a viewer under Ctrl-Z), nobody
    `wanting` a line, the engine need not serialise snapshots for them at all.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._subscribers: dict[socket.socket, _Subscriber] = {}
        self._closed = False
        self._thread: threading.Thread | None = None
        self.subscribed_total = 0  # every subscriber there has been

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    @property
    def wanting(self) -> bool:
        """Whether a subscriber can take a line now: not while every one is stalled, nor with none."""
        with self._lock:
            return any(not subscriber.stalled for subscriber in self._subscribers.values())

    def add(self, conn: socket.socket, first: bytes | None) -> bool:
        """Take over `conn` (its reply already sent) and send it `first`, the newest snapshot; False if refused."""
        conn.setblocking(False)
        with self._lock:
            if self._closed or len(self._subscribers) >= MAX_SUBSCRIBERS:
                return False
            self._subscribers[conn] = _Subscriber(next_line=first)
            self.subscribed_total += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._send_loop, name="gputop-stream", daemon=True)
                self._thread.start()
        self._wake.set()
        return True

    def offer(self, line: bytes) -> None:
        """The newest snapshot as one JSON line with its newline; returns at once."""
        with self._lock:
            for subscriber in self._subscribers.values():
                subscriber.next_line = line
        self._wake.set()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conns = list(self._subscribers)
            self._subscribers.clear()
        self._wake.set()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def _send_loop(self) -> None:
        while not self._closed:
            self._wake.wait(STREAM_RETRY_S)
            self._wake.clear()
            with self._lock:
                items = list(self._subscribers.items())
            for conn, subscriber in items:
                if not self._send_some(conn, subscriber):
                    with self._lock:
                        self._subscribers.pop(conn, None)
                    conn.close()

    def _send_some(self, conn: socket.socket, subscriber: _Subscriber) -> bool:
        """Write what this subscriber can take now; False once it has hung up."""
        while True:
            if not subscriber.pending:
                with self._lock:
                    line, subscriber.next_line = subscriber.next_line, None
                if line is None:
                    return True
                subscriber.pending = memoryview(line)
            try:
                sent = conn.send(subscriber.pending)
            except BlockingIOError:
                # Full: the rest of this line goes first next time, then the newest line offered after that
                # (none is made for it meanwhile unless another subscriber wants them: see `wanting`).
                with self._lock:
                    subscriber.stalled, subscriber.next_line = True, None
                return True
            except OSError:
                return False
            subscriber.stalled = False
            subscriber.pending = subscriber.pending[sent:]


class ControlServer:
    """Serves `answer(request) -> reply` on `FOLDER/control.sock`, each request on its own thread, and the stream."""

    def __init__(self, folder: Path, answer: Answer, *, owner_pid: int | None = None) -> None:
        self.folder = folder
        self.path = folder / CONTROL_SOCKET
        self._answer = answer
        self._owner_pid = owner_pid
        self._listener: socket.socket | None = None
        self._wake_r, self._wake_w = -1, -1
        self._thread: threading.Thread | None = None
        self._handlers = threading.BoundedSemaphore(MAX_HANDLERS)
        self.stream = SnapshotStream()
        self._newest_line: bytes | None = None  # what a new subscriber is sent first

    def offer(self, line: bytes) -> None:
        """A published snapshot, serialised, for the stream's subscribers."""
        self._newest_line = line
        self.stream.offer(line)

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
            listener.listen(BACKLOG)
        except OSError:
            listener.close()
            raise
        self._listener = listener
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._serve, name="gputop-control", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving, end the streams and remove the socket (idempotent)."""
        listener, self._listener = self._listener, None
        if listener is None:
            return
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)
        listener.close()
        with contextlib.suppress(FileNotFoundError, OSError):
            os.unlink(self.path)
        self.stream.close()
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)

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
                if not self._handlers.acquire(blocking=False):
                    with conn:  # too many requests at once: say so rather than queue without end
                        conn.settimeout(CLIENT_TIMEOUT_S)
                        _send_reply(conn, {"ok": False, "reason": "busy: too many requests at once; try again"})
                    continue
                threading.Thread(target=self._handle_one, args=(conn,), name="gputop-request", daemon=True).start()

    def _handle_one(self, conn: socket.socket) -> None:
        try:
            if not self._handle(conn):
                conn.close()
        finally:
            self._handlers.release()

    def _handle(self, conn: socket.socket) -> bool:
        """Answer one request; True when `conn` became a stream subscriber (and stays open)."""
        conn.settimeout(CLIENT_TIMEOUT_S)
        try:
            # The whole request within CLIENT_TIMEOUT_S, however slowly it trickles in.
            line = _read_line(conn, REQUEST_LIMIT, deadline=time.monotonic() + CLIENT_TIMEOUT_S)
            pid, uid = peer_credentials(conn)
            if uid != os.getuid():
                reply: dict[str, Any] = {"ok": False, "reason": "this run belongs to another user"}
            else:
                request = json.loads(line)
                if not isinstance(request, dict) or not isinstance(request.get("op"), str):
                    reply = {"ok": False, "reason": 'a request is a JSON object with an "op"'}
                elif request["op"] == "subscribe":
                    return _send_reply(conn, {"ok": True, "pid": os.getpid()}) and self.stream.add(
                        conn, self._newest_line
                    )
                else:
                    request["owner"] = self._owner_pid is not None and pid == self._owner_pid
                    reply = self._answer(request)
        except (OSError, ValueError) as exc:
            reply = {"ok": False, "reason": f"bad request ({exc})"}
        except Exception as exc:  # the run's answer failed: say so, keep serving
            reply = {"ok": False, "reason": f"internal error: {exc}"}
        _send_reply(conn, reply)
        return False


def peer_credentials(conn: socket.socket) -> tuple[int, int]:
    """The pid and uid of the process at the other end of a Unix socket (SO_PEERCRED, set by the kernel)."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", creds)
    return int(pid), int(uid)


def _connect(folder: Path, timeout: float) -> socket.socket:
    """A connection to the run's socket, or ControlUnavailable saying why not (one line)."""
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(timeout)
    try:
        with _address(folder) as address:
            client.connect(address)
    except FileNotFoundError:
        client.close()
        raise ControlUnavailable(f"{folder}: the run has no control channel (it has ended)") from None
    except ConnectionRefusedError:
        client.close()
        raise ControlUnavailable(f"{folder}: nothing answers on {CONTROL_SOCKET} (the run has ended)") from None
    except PermissionError:
        client.close()
        raise ControlUnavailable(f"{folder}: {CONTROL_SOCKET} belongs to another user") from None
    except OSError as exc:
        client.close()
        raise ControlUnavailable(f"{folder}: the run did not answer ({exc})") from None
    return client


def _reply_from(folder: Path, line: bytes) -> dict[str, Any]:
    try:
        reply = json.loads(line)
    except ValueError:
        raise ControlUnavailable(f"{folder}: the run's answer was not JSON") from None
    if not isinstance(reply, dict):
        raise ControlUnavailable(f"{folder}: the run's answer was not a JSON object")
    return reply


def ask(folder: Path, op: str, *, timeout: float = 2.0, **fields: Any) -> dict[str, Any]:
    """Send one request to the run whose session folder is `folder`; returns its reply.

    Raises ControlUnavailable (one line) when nothing answers there.
    """
    client = _connect(folder, timeout)
    try:
        client.sendall(json.dumps({"op": op, **fields}).encode() + b"\n")
        line = _read_line(client, REPLY_LIMIT)
    except (OSError, ValueError) as exc:
        raise ControlUnavailable(f"{folder}: the run did not answer ({exc})") from None
    finally:
        client.close()
    return _reply_from(folder, line)


class StreamReader:
    """A viewer's end of the snapshot stream: `lines()` yields each JSON line the run pushes, until it ends.

    Opened with `StreamReader.open(folder)` (ControlUnavailable when nothing
    answers); `close()` from another thread ends `lines()`.
    """

    def __init__(self, folder: Path, client: socket.socket, engine_pid: int | None) -> None:
        self.folder = folder
        self.engine_pid = engine_pid
        self._client = client

    @classmethod
    def open(cls, folder: Path, timeout: float = 2.0) -> StreamReader:
        client = _connect(folder, timeout)
        try:
            client.sendall(b'{"op": "subscribe"}\n')
            reply = _reply_from(folder, _read_line_exact(client))
        except (OSError, ValueError) as exc:
            client.close()
            raise ControlUnavailable(f"{folder}: the run did not answer ({exc})") from None
        if not reply.get("ok"):
            client.close()
            raise ControlUnavailable(f"{folder}: {reply.get('reason') or 'the stream was refused'}")
        client.settimeout(None)
        pid = reply.get("pid")
        return cls(folder, client, pid if isinstance(pid, int) else None)

    def lines(self) -> Iterator[bytes]:
        """Each whole line as it arrives (blocking); ends when the run closes the stream or `close()` is called."""
        buffer = bytearray()
        while True:
            try:
                chunk = self._client.recv(1 << 20)
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            if b"\n" not in chunk:
                if len(buffer) > LINE_LIMIT:
                    return
                continue
            *whole, rest = bytes(buffer).split(b"\n")
            buffer = bytearray(rest)
            yield from (line for line in whole if line.strip())

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._client.shutdown(socket.SHUT_RDWR)
        self._client.close()


def _read_line_exact(conn: socket.socket) -> bytes:
    """The first line only, read a byte at a time so that no streamed line after it is swallowed."""
    data = bytearray()
    while not data.endswith(b"\n"):
        byte = conn.recv(1)
        if not byte:
            break
        data += byte
        if len(data) > REQUEST_LIMIT:
            raise ValueError(f"more than {REQUEST_LIMIT} bytes")
    return bytes(data).rstrip(b"\n")
