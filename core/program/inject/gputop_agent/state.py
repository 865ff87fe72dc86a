"""The agent's state: the connection, the records waiting for the agent's thread, and what it holds and replaced.

`AgentState` is the base of `agent.Agent`, whose other parts (`stream.AgentStream`, the
thread that sends; `wrappers.RuntimeWrappers`, the runtime's wrappers) read and write
these fields. It also holds the ways the agent stops: one area of recording on a
failure of its own (`stop_recording`), or all of it when the socket is gone (`_give_up`).
"""

from __future__ import annotations

import os
import sys

from .helpers import Patch, Tracked, one_line, say

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    import threading
    import weakref
    from collections import deque
    from types import ModuleType
    from typing import Any

    from .cupti import Profile

__all__ = ["AgentState"]


class AgentState:
    """What the agent holds, and how it stops: the parts its thread, its wrappers and its ends all use."""

    def __init__(self, socket_path: str, connection: socket.socket, runtime: ModuleType) -> None:
        import threading
        from collections import deque

        self.socket_path = socket_path
        self.connection: socket.socket | None = connection
        self.runtime = runtime
        self.root_pid = self.pid = os.getpid()
        self.records: deque[Any] = deque()  # call tuples and event dicts, in the order they happened
        self.io_lock = threading.Lock()
        self.devices_lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None
        self.patches: list[Patch] = []
        self.stopped_areas: set[str] = set()
        self.finished = False
        self.memory_on = True
        self.calls_total = 0  # calls sent to gputop
        self.calls_dropped = 0  # calls counted but not sent: gputop fell behind (said in `dropped` events)
        self.dropped_said = 0
        self.outgoing = bytearray()  # encoded events the socket has not taken yet (see stream._pump_locked)
        self.last_label = ""  # the function called last: whose results a bare DeviceArray read back belongs to
        self.called_contexts: set[int] = set()
        self.first_calls = 0  # contexts called so far (their first calls)
        self.contexts_made: list[dict[str, Any]] = []  # this drain's contexts made: one event for them all
        self.contexts_ended = 0  # and ended
        self.names: dict[int, Tracked] = {}  # id(VmFunction) -> its "module.function" (and it, held)
        self.devices: list[Tracked] = []
        # A FunctionInvoker call under way on a thread: where its invoke leaves its record (see _invoker_wrapper).
        self.outer_call = threading.local()
        # id(weak reference) -> (it, bytes) for each result of a FunctionInvoker call still alive; keyed by
        # the reference's id since a weak reference hashes as its referent, and DeviceArray does not hash
        self.held: dict[int, tuple[weakref.ref[Any], int, str]] = {}
        self.held_bytes = 0  # their bytes, kept as results come and go
        self.invoker_calls = 0  # FunctionInvoker calls whose results were looked at
        self.held_peak = (0, 0, 0)  # the most results held at once: (count, bytes, calls made by then)
        self.drivers: dict[int, str] = {}  # id(HalDriver) -> the uri it was got by
        self.device_drivers: set[str] = set()  # the drivers of every device the program made ("cuda", "vulkan")
        self.driver_seconds: dict[int, float] = {}  # a driver's first load, owed to its first device
        self.file_handles: dict[int, int] = {}  # id(FileHandle) -> the fd it wraps
        self.pending_parameters: dict[str, Any] | None = None
        self.commands = b""
        self.finalizers: list[weakref.finalize] = []
        self.solo_refs = self.refs(Tracked("probe", object()))
        # A profile: armed by the agent's thread, run by the program's thread, its result sent by the agent's.
        # The wrapped invoke reads `profile` once per call; it is None outside a profile.
        self.profile: Profile | None = None
        self.profile_ended: Profile | None = None  # over, its result not sent yet
        self.profile_lock = threading.Lock()

    def _close(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            try:  # noqa: SIM105
                connection.close()
            except OSError:
                pass

    def _restore_all(self) -> None:
        # nanobind reports "leaked" instances at exit when its types still hold Python functions
        # (ours, and through them the objects they reach): the originals go back before teardown.
        for patch in reversed(self.patches):
            try:  # noqa: SIM105
                patch.restore()
            except Exception:
                pass
        self.patches = []
        for finalizer in self.finalizers:
            finalizer.detach()
        self.finalizers = []
        self.names.clear()
        with self.devices_lock:
            self.devices = []
        self.held.clear()
        self.held_bytes = 0

    def _give_up(self, why: str) -> None:
        """The socket is gone: the program runs on unwatched, and stderr says so once."""
        if not self.finished:
            say(f"stopped watching this program: {why}")
        self.finished = True
        self.stopping.set()
        self._end_profile("gputop's connection closed")
        self._close()
        self._restore_all()
        self.records.clear()

    def stop_recording(self, what: str, exc: BaseException, area: str | None) -> None:
        """One of the agent's own steps failed: put the originals of `area` back (all when None), note it once."""
        key = area or "*"
        if key in self.stopped_areas:
            return
        self.stopped_areas.add(key)
        if area in (None, "calls"):
            self._end_profile(f"gputop stopped recording this program's calls ({one_line(exc)})", keep=False)
        stopped = [p for p in self.patches if area is None or p.area == area]
        self.patches = [p for p in self.patches if p not in stopped]
        for patch in stopped:
            try:  # noqa: SIM105
                patch.restore()
            except Exception:
                pass
        self.records.append(
            {"kind": "note", "level": "warning", "message": f"gputop stopped recording {what}: {one_line(exc)}"}
        )

    def _end_profile(self, why: str, keep: bool = True) -> None:
        """End the profile under way now, from any thread; with `keep`, the windows it has are its result."""
        profile = self.profile
        if profile is not None:
            profile.stop(why, keep)

    def unused(self, tracked: Tracked) -> bool:
        """True when only the agent still holds `tracked.obj`.

        The runtime's nanobind types take no weak references, so the agent holds
        devices and functions strongly, and lets go of one within 0.5 s of the
        program letting go of it; `solo_refs` is what `refs` reads for an object
        nothing else holds, measured once on this interpreter by the same code.
        """
        return self.refs(tracked) <= self.solo_refs

    def refs(self, tracked: Tracked) -> int:
        return sys.getrefcount(tracked.obj)
