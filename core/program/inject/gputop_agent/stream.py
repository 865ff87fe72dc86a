"""The agent's thread: it drains what the wrappers recorded into protocol events, sends them, and reads commands.

Every DRAIN_S it turns the records waiting in the deque into events (in the order
things happened), sends them, answers gputop's commands (`ping`, `profile`), and every
MEMORY_S sends a `memory` event. Names, JSON and the socket cost the program's threads
nothing but the GIL, which the thread hands back often (YIELD_EVERY).
"""

from __future__ import annotations

import os
import sys
import time

from .cupti import Cupti, Profile
from .helpers import PROTOCOL_VERSION, READ, fault, one_line
from .state import AgentState

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from types import ModuleType
    from typing import Any

__all__ = [
    "CALLS_PER_MESSAGE",
    "DRAIN_S",
    "FIRST_CALLS_SAID",
    "MAX_BACKLOG",
    "MAX_OUTGOING",
    "MEMORY_S",
    "RECORDS_WAIT_S",
    "YIELD_EVERY",
    "AgentStream",
]

DRAIN_S = 0.25  # a drain holds the GIL: fewer, larger ones stall fewer of the program's calls (bench/watch_overhead.py)
MEMORY_S = 0.5
CALLS_PER_MESSAGE = 128  # one json.dumps holds the GIL; small batches keep the program's thread moving
# The agent's thread hands the GIL back this often while it drains and encodes (time.sleep(0) releases it): a
# call of the program's that ends meanwhile waits for one short stretch, not for the whole drain.
YIELD_EVERY = 64
MAX_BACKLOG = 200_000  # records waiting after a drain (about 25 MB): past it, the oldest are dropped and counted
# Bytes encoded but not yet taken by gputop: the engine reads on a thread of its own, and a program may outpace it
# for a while. Past this, new calls are counted as dropped instead of encoded; the program never waits on gputop.
MAX_OUTGOING = 32 * 1024 * 1024
FIRST_CALLS_SAID = 3  # contexts whose first call is a phase of its own (the engine keeps the first)
RECORDS_WAIT_S = 2.0  # how long a profile's result waits for CUPTI's last records before going out without them


class AgentStream(AgentState):
    """The agent's thread, and the profile requests it arms and answers."""

    def _start_thread(self) -> None:
        import threading

        self.thread = threading.Thread(target=self._run, name="gputop-agent", daemon=True)
        self.thread.start()

    # -- a profile of the program's next calls (CUDA kernels, through CUPTI) --------------------------

    def _arm_profile(self, command: dict[str, Any]) -> str | None:
        """On the agent's thread: arm a profile of the next `calls` calls, or say in one line why not."""
        try:
            with self.profile_lock:
                if self.profile is not None or self.profile_ended is not None:
                    return "a profile of this program's calls is already under way"
            calls = command.get("calls")
            if type(calls) is not int or calls < 1:
                return f"calls must be a whole number of calls, 1 or more (got {calls!r})"
            if "calls" in self.stopped_areas or "*" in self.stopped_areas:
                return "gputop stopped recording this program's calls, so it cannot profile them"
            if "cuda" not in self.device_drivers:
                made = ", ".join(sorted(self.device_drivers))
                return "CUPTI times CUDA kernels; " + (
                    f"this program's devices are {made}" if made else "this program has made no device yet"
                )
            ours = "{}.{}".format(*sys.version_info[:2])
            theirs = command.get("python")
            if theirs is not None and str(theirs) != ours:
                program = _shell_join([os.path.basename(sys.executable) or "python", *sys.argv])
                return (
                    f"CUPTI's Python package is gputop's, built for Python {theirs}; this program runs {ours}: "
                    f"profile it with nsys profile {program}, or run gputop on its .vmfb"
                )
            paths = [str(p) for p in command.get("cupti_paths") or () if isinstance(p, str)]
            cupti, why = Cupti.load(paths)
            if cupti is None:
                return why
            cupti.clear()
            with self.profile_lock:
                if self.profile is not None or self.profile_ended is not None:
                    return "a profile of this program's calls is already under way"
                self.profile = Profile(cupti, calls, str(command.get("level") or "default"), self._profile_over)
            return None
        except Exception as exc:
            return f"the profile could not be armed: {one_line(exc)}"

    def _profile_over(self, profile: Profile) -> None:
        """A profile is over (its Nth call, a failure, or the program's end): the agent's thread sends its result."""
        with self.profile_lock:
            if self.profile is profile:
                self.profile = None
                self.profile_ended = profile

    def _deliver_profile(self, wait: bool) -> None:
        """Queue the ended profile's `kernels` (or `profile_refused`) event.

        `activity_flush_all(1)` hands CUPTI's last buffer over before it returns, as seen
        on the H200; with `wait`, a profile whose records have not come yet waits for them
        (RECORDS_WAIT_S, across drains: never on the program's thread).
        """
        with self.profile_lock:
            profile = self.profile_ended
            if profile is None:
                return
            waiting = profile.error is None and profile.windows and not profile.cupti.has_records()
            if wait and waiting and time.monotonic() < profile.ended_at + RECORDS_WAIT_S:
                return
            self.profile_ended = None
        self.records.append(profile.result())

    # -- the agent's thread -----------------------------------------------------------------------------

    def _run(self) -> None:
        import select

        try:
            with self.io_lock:
                self._send_locked([self._hello()])
            next_memory = next_drain = time.perf_counter()
            while not self.stopping.is_set():
                connection = self.connection
                if connection is None:
                    return
                # Waiting to write only while bytes wait: the engine takes them when it can, never the program.
                writing = [connection] if self.outgoing else []
                wait = max(next_drain - time.perf_counter(), 0.0)
                readable, writable, _ = select.select([connection], writing, [], wait)
                if readable and not self._read_commands(connection):
                    return
                with self.io_lock:
                    if writable:
                        self._pump_locked()
                    # Drained every DRAIN_S only: a wake-up to write is not one to drain (draining on every
                    # one kept this thread, and the GIL, busy while the engine read, and cost the calls' tail).
                    if time.perf_counter() >= next_drain:
                        next_drain = time.perf_counter() + DRAIN_S
                        self._flush_locked()
                if self.profile_ended is not None:
                    self._deliver_profile(wait=True)  # queued: it goes out with the next drain, after its calls
                now = time.perf_counter()
                if self.memory_on and now >= next_memory:
                    next_memory = now + MEMORY_S
                    self._sample_memory()
        except Exception as exc:
            if not self.finished:
                self._give_up(f"sending to gputop failed ({one_line(exc)})")

    def _hello(self) -> dict[str, Any]:
        return {
            "kind": "hello",
            "v": PROTOCOL_VERSION,
            "pid": os.getpid(),
            "ppid": os.getppid(),
            "argv": list(sys.argv),
            "executable": sys.executable,
            "python": "{}.{}.{}".format(*sys.version_info[:3]),
            "iree": _iree_version(self.runtime),
            "cwd": os.getcwd(),
            "wall": time.time(),
            "mono": time.perf_counter(),
        }

    def _read_commands(self, connection: socket.socket) -> bool:
        import json

        try:
            data = connection.recv(65536)
        except (BlockingIOError, InterruptedError):
            return True
        if not data:
            self._give_up("gputop closed the connection")
            return False
        self.commands += data
        *lines, self.commands = self.commands.split(b"\n")
        for line in lines:
            if "commands" in self.stopped_areas:
                break
            try:
                fault("command")
                command = json.loads(line)
            except ValueError:
                continue  # not JSON: ignored, as unknown ops are
            except Exception as exc:
                self.stop_recording("answers to gputop's commands", exc, area="commands")
                continue
            op = command.get("op") if isinstance(command, dict) else None
            if op == "ping":
                with self.io_lock:
                    self._send_locked([{"kind": "pong"}])
            elif op == "profile":
                refusal = self._arm_profile(command)
                if refusal is not None:
                    with self.io_lock:
                        self._send_locked([{"kind": "profile_refused", "reason": refusal}])
        return True

    def _send_locked(self, events: list[dict[str, Any]]) -> None:
        """Encode `events` after what waits to go, and send what the socket takes now (never waiting on it)."""
        import json

        if events and self.connection is not None:
            lines = []
            for event in events:
                lines.append(json.dumps(event, separators=(",", ":"), default=str) + "\n")
                time.sleep(0)  # the GIL back to the program between events (see YIELD_EVERY)
            self.outgoing += "".join(lines).encode()
        self._pump_locked()

    def _pump_locked(self) -> None:
        """Send what the socket takes without blocking; the rest waits in `outgoing` for the next turn.

        A socket error (the engine gone: killed, or closed) raises, and the agent's thread gives up.
        """
        connection = self.connection
        while self.outgoing and connection is not None:
            try:
                sent = connection.send(self.outgoing)
            except (BlockingIOError, InterruptedError):
                return
            if sent <= 0:
                return
            del self.outgoing[:sent]

    def _flush_blocking_locked(self, deadline: float) -> None:
        """At the program's exit: what waits goes out, until `deadline` (the engine reads fast; it has lagged)."""
        import select

        self._pump_locked()
        while self.outgoing and self.connection is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            select.select([], [self.connection], [], left)
            self._pump_locked()

    def _flush_locked(self) -> None:
        events = self._drain()
        if events:
            fault("send")
            self._send_locked(events)

    def _drain(self) -> list[dict[str, Any]]:
        """Turn what the wrappers recorded into protocol events, in the order it happened.

        A call on a context called before takes the short path: the agent thread's cost
        per call bounds how many calls a second it can follow without slowing the
        program's thread (they share the GIL).
        """
        events: list[dict[str, Any]] = []
        calls: list[Any] = []
        reads: list[Any] = []
        popleft = self.records.popleft
        called = self.called_contexts
        waiting = len(self.records)
        if waiting > MAX_BACKLOG:  # the oldest calls go uncounted by name, counted as dropped
            for _ in range(waiting - MAX_BACKLOG):
                record = popleft()
                if type(record) is tuple and record[0] != READ:
                    self.calls_dropped += 1
                elif type(record) is not tuple:
                    self.records.appendleft(record)  # events are kept: they are few and say what happened
                    break
        full = len(self.outgoing) > MAX_OUTGOING
        for taken in range(len(self.records)):  # what is there now: a program calling faster never ends it
            if taken % YIELD_EVERY == YIELD_EVERY - 1:
                time.sleep(0)
            record = popleft()
            if type(record) is tuple:
                if record[0] == READ:
                    if not full:
                        reads.append(record[1:])
                    continue
                if full:  # gputop has not taken what was sent: count the call, do not queue it
                    self.calls_dropped += 1
                    continue
                label, context, start, end = record[:4]
                if context not in called:
                    try:
                        self._first_call(label, context, start, end, events, calls)
                    except Exception as exc:
                        self.stop_recording("calls (a call could not be read)", exc, area="calls")
                        continue
                calls.append(record)  # as recorded: ints encode faster than floats, and the engine divides
                if len(calls) >= CALLS_PER_MESSAGE:
                    self._add_calls(events, calls)
                    calls = []
                continue
            if calls:
                self._add_calls(events, calls)
                calls = []
            try:
                self._event_entry(record, events)
            except Exception as exc:
                self.stop_recording("phases (one could not be read)", exc, area="phases")
        if calls:
            self._add_calls(events, calls)
        if reads:
            events.append({"kind": "reads", "reads": reads})
        events.extend(self._contexts_events())
        if self.pending_parameters is not None:
            events.append(self.pending_parameters)
            self.pending_parameters = None
        if self.calls_dropped != self.dropped_said:
            self.dropped_said = self.calls_dropped
            events.append({"kind": "dropped", "calls": self.calls_dropped})
        return events

    def _add_calls(self, events: list[dict[str, Any]], calls: list[Any]) -> None:
        events.append({"kind": "calls", "calls": calls})
        self.calls_total += len(calls)

    def _first_call(
        self, label: str, context: int, start: int, end: int, events: list[dict[str, Any]], calls: list[Any]
    ) -> None:
        """A context's first call is a phase of its own (its lazy initialisation shows there), for the first
        FIRST_CALLS_SAID contexts: a program that makes a context per request has no first call worth a phase."""
        fault("drain")
        self.called_contexts.add(context)
        self.first_calls += 1
        if self.first_calls > FIRST_CALLS_SAID:
            return
        if calls:
            self._add_calls(events, list(calls))
            calls.clear()
        first = {"kind": "phase", "name": "first_call", "start": start / 1e9, "seconds": (end - start) / 1e9}
        events.append({**first, "function": label, "context": context})

    def _contexts_events(self) -> list[dict[str, Any]]:
        """The drain's contexts made and ended, one event each kind: a context per request is 2,000 a second.

        Contexts made (`op` create) go as one `context` phase whose `seconds` is their sum and `each` every
        one's time, `count` how many; contexts ended as one `context_destroyed` with `count`.
        """
        events = []
        made, self.contexts_made = self.contexts_made, []
        if len(made) == 1:
            events.append(made[0])
        elif made:
            each = [event["seconds"] for event in made]
            events.append(
                {**made[-1], "start": made[0]["start"], "seconds": sum(each), "each": each, "count": len(made)}
            )
        if self.contexts_ended:
            event = {"kind": "phase", "name": "context_destroyed", "start": time.perf_counter(), "seconds": 0.0}
            events.append({**event, "count": self.contexts_ended})
            self.contexts_ended = 0
        return events

    def _event_entry(self, event: dict[str, Any], events: list[dict[str, Any]]) -> None:
        if event.get("name") == "context" and event.get("op") == "create":
            self.called_contexts.discard(event["context"])
            self.contexts_made.append(event)
            return
        if event.get("name") == "context_destroyed":
            self.called_contexts.discard(event.get("context"))
            self.contexts_ended += 1
            return
        pending = self.pending_parameters
        if event.get("name") == "parameters" and event["api"] in ("add_buffer", "add_splat", "add_from_file_handle"):
            # A program that adds a thousand buffers one by one is one slow phase, not a thousand events.
            if pending is not None and (pending["api"], pending["index"]) == (event["api"], event["index"]):
                pending["seconds"] += event["seconds"]
                pending["bytes"] = (pending["bytes"] or 0) + (event["bytes"] or 0)
                pending["tensors"] += event["tensors"]
                pending["calls"] += 1
                for path in event["files"]:
                    if path not in pending["files"]:
                        pending["files"].append(path)
                return
            if pending is not None:
                events.append(pending)
            self.pending_parameters = event
            return
        if pending is not None:
            events.append(pending)
            self.pending_parameters = None
        events.append(event)

    def _sample_memory(self) -> None:
        try:
            fault("memory")
            event = self._memory_event()
            with self.io_lock:
                self._send_locked([event])
        except OSError:
            raise
        except Exception as exc:
            self.memory_on = False
            self.records.append(
                {"kind": "note", "level": "warning", "message": f"gputop stopped recording memory: {one_line(exc)}"}
            )

    def _memory_event(self) -> dict[str, Any]:
        with self.devices_lock:
            self.devices = [d for d in self.devices if not self.unused(d)]
            devices = list(self.devices)
        for key, tracked in list(self.names.items()):
            if self.unused(tracked):
                self.names.pop(key, None)
        # Calls made so far, those not yet drained included, read beside the held results they are held against
        # (what waits in the deque is nearly all calls: the growth's bytes per call come out exact).
        calls_made = self.calls_total + self.calls_dropped + len(self.records)
        counts = self._held_counts()
        return {
            "kind": "memory",
            "mono": time.perf_counter(),
            "calls_total": calls_made,
            "calls_dropped": self.calls_dropped,
            "held": {"count": counts[0], "bytes": counts[1]},
            "held_peak": {"count": self.held_peak[0], "bytes": self.held_peak[1], "calls": self.held_peak[2]},
            "devices": [{"device": d.label, "statistics": dict(d.obj.allocator.statistics)} for d in devices],
        }

    def _held_counts(self) -> tuple[int, int]:
        for _ in range(5):
            try:
                sizes = [entry[1] for entry in list(self.held.values())]
                return len(sizes), sum(sizes)
            except RuntimeError:  # a result died on another thread while we read
                continue
        return 0, 0


def _shell_join(words: list[str]) -> str:
    import shlex

    return " ".join(shlex.quote(w) for w in words)


def _iree_version(runtime: ModuleType) -> str | None:
    """The installed iree-base-runtime's version ("3.13.0"), read from its dist-info folder beside the package."""
    try:
        site = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(runtime.__file__ or ""))))
        for entry in os.listdir(site):
            for prefix in ("iree_base_runtime-", "iree_runtime-"):
                if entry.startswith(prefix) and entry.endswith(".dist-info"):
                    return entry[len(prefix) : -len(".dist-info")]
    except OSError:
        pass
    version = sys.modules.get("iree.runtime.version")
    return getattr(version, "VERSION", None)
