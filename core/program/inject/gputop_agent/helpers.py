"""What every part of the agent shares: its connection to gputop, its words on stderr and its injected faults.

Also the two small records the agent keeps of the program's runtime: an attribute
it replaced (`Patch`) and an object it holds while the program does (`Tracked`).
It loads at the program's start (from `sitecustomize`), so it imports only modules
every Python has loaded by then; `socket` loads when the agent connects.
"""

from __future__ import annotations

# Only modules every Python has loaded by the time sitecustomize runs (not even contextlib: the package
# silences SIM105 where it would ask for it); the rest load when iree.runtime does.
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from typing import Any

__all__ = [
    "CONNECT_TIMEOUT_S",
    "EXIT_FLUSH_S",
    "FAULT_ENV",
    "FAULT_POINT",
    "PROTOCOL_VERSION",
    "READ",
    "Patch",
    "Tracked",
    "connect",
    "fault",
    "one_line",
    "say",
]

PROTOCOL_VERSION = 1
READ = "\0read"  # first item of a record of a result read back to the host (a call's is its function's name)
FAULT_ENV = "GPUTOP_WATCH_FAULT"
CONNECT_TIMEOUT_S = 2.0
EXIT_FLUSH_S = 3.0  # at the program's exit, how long what waits may take to reach gputop


def connect(socket_path: str) -> socket.socket:
    import socket

    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.settimeout(CONNECT_TIMEOUT_S)
        connection.connect(socket_path)
        # Never blocking: the agent's thread sends what the socket takes and keeps the rest (stream.py).
        connection.setblocking(False)
    except BaseException:
        connection.close()
        raise
    return connection


def say(message: str) -> None:
    try:
        sys.stderr.write(f"gputop: {message}\n")
        sys.stderr.flush()
    except Exception:
        pass


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _InjectedFault(RuntimeError):  # its name is in the `note` lines a fault causes: kept as it was
    pass


FAULT_POINT = os.environ.get(FAULT_ENV)  # read once: the check sits on paths that run per call


def fault(point: str) -> None:
    if point == FAULT_POINT:
        raise _InjectedFault(f"injected fault at {point}")


class Patch:
    """One attribute the agent replaced, and how to put the original back."""

    def __init__(self, owner: Any, name: str, original: Any, area: str) -> None:
        self.owner = owner
        self.name = name
        self.original = original
        self.area = area

    def restore(self) -> None:
        setattr(self.owner, self.name, self.original)


class Tracked:
    """A runtime object the agent holds strongly only while the program holds it too (see `AgentState.unused`)."""

    def __init__(self, label: str, obj: Any) -> None:
        self.label = label
        self.obj = obj
