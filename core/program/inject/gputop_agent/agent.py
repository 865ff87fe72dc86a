"""The agent: its state, its thread and its wrappers put together, and how it starts, forks and ends.

`hook` makes one `Agent` per process when the program has imported iree.runtime:
`start` wraps the runtime and starts the thread; a forked child gets its own
connection, thread and `hello`; at exit the calls still waiting are sent, then `bye`,
and the runtime is put back as it was.
"""

from __future__ import annotations

import os
import sys
import time

from .helpers import EXIT_FLUSH_S, connect, fault, one_line
from .stream import AgentStream
from .wrappers import RuntimeWrappers

__all__ = ["EXIT_TIMEOUT_S", "Agent"]

EXIT_TIMEOUT_S = 1.0


class Agent(AgentStream, RuntimeWrappers):
    """The connection, the wrappers, and the thread that drains what the wrappers recorded."""

    def start(self) -> None:
        import atexit
        import threading

        try:
            fault("patch")
            self._wrap_runtime()
        except Exception as exc:
            self.stop_recording("the runtime's wrappers", exc, area=None)
        previous = sys.excepthook
        sys.excepthook = self._excepthook(previous)
        atexit.register(self.at_exit)
        register_threading_atexit = getattr(threading, "_register_atexit", None)
        if register_threading_atexit is not None:
            # multiprocessing's forked workers end with os._exit after threading's shutdown, never atexit
            try:  # noqa: SIM105
                register_threading_atexit(self.at_forked_worker_exit)
            except RuntimeError:
                pass
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self.after_fork_in_child)
        self._start_thread()

    def after_fork_in_child(self) -> None:
        """A forked child is a stream of its own: its own connection, thread and hello."""
        import threading

        try:
            if self.connection is not None:
                self.connection.close()  # the parent's connection stays open in the parent
            self.connection = None
            self.pid = os.getpid()
            self.records.clear()
            self.io_lock = threading.Lock()
            self.devices_lock = threading.Lock()
            self.stopping = threading.Event()
            self.calls_total = self.calls_dropped = self.dropped_said = 0
            self.outgoing = bytearray()
            self.called_contexts = set()
            self.first_calls = self.contexts_ended = self.invoker_calls = 0
            self.held_peak = (0, 0, 0)
            self.contexts_made = []
            self.pending_parameters = None
            self.commands = b""
            self.profile = self.profile_ended = None  # the parent's profile, and its CUPTI, stay the parent's
            self.profile_lock = threading.Lock()
            if self.finished or not self.patches:
                self.finished = True
                return
            try:
                self.connection = connect(self.socket_path)
            except Exception as exc:
                self._give_up(f"cannot connect to {self.socket_path} ({one_line(exc)})")
                return
            self._start_thread()
        except Exception as exc:
            self._give_up(f"the forked child could not start its watcher ({one_line(exc)})")

    def at_forked_worker_exit(self) -> None:
        if os.getpid() != self.root_pid:
            self.at_exit()

    def at_exit(self) -> None:
        """Flush the calls, send `bye`, close; then put the runtime back as it was (see `_restore_all`)."""
        if self.finished or os.getpid() != self.pid:
            return
        self.finished = True
        self.stopping.set()
        # Not joined: the thread may sit in select for DRAIN_S. The lock waits for a send in progress, and
        # the connection closes under it, so nothing the thread does later follows the bye.
        locked = self.io_lock.acquire(timeout=EXIT_TIMEOUT_S)
        try:
            if locked and self.connection is not None:
                deadline = time.monotonic() + EXIT_FLUSH_S
                self._end_profile("the program ended before its calls could be profiled")
                self._deliver_profile(wait=False)
                self._flush_locked()
                lines = [self._memory_event()] if self.memory_on else []
                bye = {"kind": "bye", "mono": time.perf_counter(), "calls_total": self.calls_total}
                lines.append({**bye, "calls_dropped": self.calls_dropped})
                self._send_locked(lines)
                self._flush_blocking_locked(deadline)
        except Exception:
            pass
        finally:
            self._close()
            if locked:
                self.io_lock.release()
            self._restore_all()
