"""One watched process of a user's program, as a gputop session: its watcher's events become snapshots.

The watcher inside the process (`inject/gputop_agent/`) reports what the
program does with `iree.runtime`; this turns each report into the run's state
(phases, loads, per-function calls, memory, held results, diagnoses) and the
session folder, control channel and neighbour watch come from `RunParts`, as
for a run gputop makes itself. So every face (the TUI, attach, web,
Prometheus, `report`, `compare`, `open`) reads it unchanged.

Nothing here runs in the program: events arrive on the connection's reading
thread, memory (the process's RSS, NVML, the allocator statistics the watcher
sent last) is sampled on the engine's own watcher thread, and a failure in
either is one Log line, never the program's concern. A request the program
cannot honour (pause: gputop does not own its calls) is refused in one line.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gputop.core.errors import EXIT_RUNTIME
from gputop.core.program.agent_link import AgentConnection
from gputop.core.program.diagnose import (
    GrowthPoint,
    find_growth,
    growth_hint,
    host_memory_hints,
    loaded_twice_hints,
    slow_phase_hints,
)
from gputop.core.program.events import device_from_event, load_from_event, load_line, with_nvml_gpu
from gputop.core.program.memory import ProgramMemory, pools_from
from gputop.core.program.profile import (
    PROFILE_CALLS,
    PROFILE_WARMUP_CALLS,
    cupti_paths,
    profile_from_event,
    why_not,
)
from gputop.core.records.program import HeldResults, MemoryGrowth, ProgramLoad, ProgramView
from gputop.core.run.parts import RunParts
from gputop.core.snapshot import DeviceInfo, PoolStats, RunSnapshot
from gputop.core.store.report import CUT_SHORT
from gputop.core.units import seconds

__all__ = ["ProgramOutcome", "WatchedProcess"]

# PM sampling reads the work of the process that samples (bench/gpu/pm_strip.sh: a sampler beside another
# process decoded no samples); the watcher inside the program does not sample yet.
PM_NOT_WATCHED = (
    "PM sampling sees only the work of the process that samples, and a watched program's calls run in its own: "
    "gputop run on its .vmfb samples the same module's calls"
)

GROWTH_POINTS = 600  # memory samples kept for the growth diagnosis: five minutes at the watcher's 0.5 s


class ProgramOutcome:
    """How the process ended, as far as gputop saw it."""

    def __init__(self) -> None:
        self.exit_code: int | None = None
        self.ended: str | None = None  # exited | raised | signal
        self.line: str | None = None  # the exception's last line, or the signal's name


class WatchedProcess:
    """The session of one process of the program: fed by its watcher's connection, published as snapshots."""

    def __init__(
        self,
        command: list[str],
        *,
        session_dir: Path | None = None,
        record_every_s: float = 0.0,
        sample_interval_s: float = 0.1,
        owner_pid: int | None = None,
        label: str = "program",
        on_hint: Callable[[str], None] | None = None,
    ) -> None:
        self.command = list(command)
        manifest = {"target": " ".join(command), "kind": "program", "command": list(command)}
        self.parts = RunParts(
            manifest,
            target=" ".join(command),
            label=label,
            session_dir=session_dir,
            record_every_s=record_every_s,
            owner_pid=owner_pid,
        )
        self.session_dir = self.parts.session_dir
        self.state = self.parts.state
        self._sample_interval_s = sample_interval_s
        self._on_hint = on_hint
        self._lock = threading.Lock()
        self._loads: list[ProgramLoad] = []
        self._contexts_s: list[float] = []
        self._first_call_s: float | None = None
        self._teardown_s = 0.0
        self._devices: dict[str, DeviceInfo] = {}
        self._pools: dict[str, tuple[PoolStats, ...]] = {}
        self._held: HeldResults | None = None
        self._growth: MemoryGrowth | None = None
        self._growth_points: deque[GrowthPoint] = deque(maxlen=GROWTH_POINTS)
        self._hints: list[str] = []
        self._hint_subjects: list[str] = []  # what each hint is about, so newer figures replace it
        self._agent: AgentConnection | None = None
        self._hello: dict[str, Any] = {}
        self._sampler: ProgramMemory | None = None
        self.pid: int | None = None
        self.outcome = ProgramOutcome()
        self.others = 0  # other processes of the command with sessions of their own
        self._done = threading.Event()
        self.report: dict[str, Any] | None = None
        self._closed_why: str | None = None

    # -- the watcher's stream ----------------------------------------------------------
    def attach(self, agent: AgentConnection, earlier: list[dict[str, Any]] | None = None) -> None:
        """Take a process's stream (already being read): `earlier` events first, then each as it comes."""
        hello = agent.hello or {}
        with self._lock:
            self._agent = agent
            self._hello = hello
            self.pid = agent.pid
        self.state.set_state("loading")
        python = hello.get("python") or "?"
        iree = hello.get("iree") or "?"
        self.state.event("info", f"program: pid {agent.pid} uses iree.runtime {iree} (Python {python})")
        agent.on_event = self._on_event
        agent.on_closed = self._on_closed
        for event in earlier or ():
            self._on_event(event)
        self._publish_view()

    def _on_event(self, event: dict[str, Any]) -> None:
        try:
            handler = _HANDLERS.get(str(event.get("kind")))
            if handler is not None:
                handler(self, event)
        except Exception:  # one report gputop cannot read: the rest of the stream goes on
            log = self.parts.log_traceback()
            where = f" (details in {log})" if log is not None else ""
            self.state.event("warning", f"program: a {event.get('kind')} report could not be read{where}")

    def _on_closed(self, why: str | None) -> None:
        with self._lock:
            self._agent = None
            self._closed_why = why
        self._publish_view()

    def _on_phase(self, event: dict[str, Any]) -> None:
        name = str(event.get("name"))
        spent = float(event.get("seconds") or 0.0)
        if name == "device":
            self._add_device(event, spent)
        elif name == "module":
            self._add_load("module", event, spent)
        elif name == "parameters":
            self._add_load("parameters", event, spent)
        elif name == "context":
            with self._lock:
                self._contexts_s.append(spent)
                total = sum(self._contexts_s)
            modules = ", ".join(str(m) for m in event.get("modules") or ())
            self.state.phase(context_s=total)
            self.state.event(
                "info", f"program: context created in {seconds(spent)}" + (f" ({modules})" if modules else "")
            )
        elif name == "first_call":
            with self._lock:
                first = self._first_call_s is None
                if first:
                    self._first_call_s = spent
            if first:
                self.state.phase(first_call_s=spent)
            self.state.event("info", f"program: first call of {event.get('function')} took {seconds(spent)}")
        elif name == "context_destroyed":
            with self._lock:
                self._teardown_s += spent
                teardown = self._teardown_s
            self.state.phase(teardown_s=teardown)
        elif name == "instance":
            self.state.event("info", f"program: IREE instance made in {seconds(spent)}")
        self._publish_view()

    def _add_device(self, event: dict[str, Any], spent: float) -> None:
        with self._lock:
            info = with_nvml_gpu(device_from_event(event, list(self._devices.values())))
            self._devices[info.uri or info.id] = info
            devices = list(self._devices.values())
        self.state.set_devices(devices)
        self.state.event("info", f"program: device {info.uri} created in {seconds(spent)}")
        self._restart_sampler(devices)
        if self.parts.watch is None:  # who else uses its first device and the host, from then on
            self.parts.start_watch(info, [self.pid] if self.pid is not None else [])
            self.parts.start_clocks(info, self._sample_interval_s)  # and the clocks its calls ran at
            self.parts.start_pm(info, PM_NOT_WATCHED if info.backend == "cuda" else None, 1.0)

    def _add_load(self, kind: str, event: dict[str, Any], spent: float) -> None:
        load = load_from_event(kind, event, spent)
        if load is None:  # a provider made from loads already counted: no bytes moved
            self.state.event("info", f"program: parameters {event.get('api')} in {seconds(spent)}")
            return
        with self._lock:
            self._loads.append(load)
            loads = list(self._loads)
        if kind == "module":
            self.state.phase(load_s=sum(item.seconds for item in loads if item.kind == "module"))
        else:
            self.state.phase(parameters_s=sum(item.seconds for item in loads if item.kind == "parameters"))
        self.state.event("info", load_line(load))

    def _on_calls(self, event: dict[str, Any]) -> None:
        calls = event.get("calls")
        if isinstance(calls, list) and calls:
            self.state.add_program_calls(calls)
            if self.state.state == "loading":
                self.state.set_state("running")
            self._publish_view()

    def _on_memory(self, event: dict[str, Any]) -> None:
        pools: dict[str, tuple[PoolStats, ...]] = {}
        live_total = 0
        with self._lock:
            by_uri = dict(self._devices)
        for row in event.get("devices") or ():
            info = by_uri.get(str(row.get("device")))
            stats = row.get("statistics") or {}
            if info is None or not isinstance(stats, dict):
                continue
            device_pools = pools_from(info.id, stats)
            pools[info.id] = device_pools
            live_total += sum(p.live_bytes for p in device_pools)
        held_row = event.get("held") or {}
        held = HeldResults(count=int(held_row.get("count") or 0), bytes=int(held_row.get("bytes") or 0))
        calls_total = int(event.get("calls_total") or 0)
        rss = self._sampler.latest_rss if self._sampler is not None else None
        with self._lock:
            self._pools = pools
            self._held = held
            self._growth_points.append(
                GrowthPoint(
                    calls=calls_total,
                    held_bytes=held.bytes,
                    allocator_live_bytes=live_total if pools else None,
                    rss_bytes=rss,
                )
            )
            growth = find_growth(list(self._growth_points))
            changed = growth is not None and growth != self._growth
            # Kept once seen: a program that frees everything at its exit still grew while it ran.
            if growth is not None:
                self._growth = growth
        if changed:  # said once; newer figures replace the line quietly
            for line in growth_hint(growth):
                self._say_hint(line, subject="memory grows")
        self._publish_view()

    def _on_note(self, event: dict[str, Any]) -> None:
        level = event.get("level") if event.get("level") in ("info", "warning", "error") else "warning"
        self.state.event(str(level), f"program: {event.get('message')}")

    def _on_kernels(self, event: dict[str, Any]) -> None:
        """A profile of the program's calls, recorded by CUPTI in its own process: the Kernels pane's table."""
        self.state.set_profiling(False)
        with self._lock:
            device = next((d.id for d in self._devices.values() if d.backend == "cuda"), "cuda:0")
        summary, line = profile_from_event(event, device)
        if summary is not None:
            self.state.set_profile(summary)
        self.state.event("info" if summary is not None else "warning", line)

    def _on_profile_refused(self, event: dict[str, Any]) -> None:
        self.state.set_profiling(False)
        self.state.event("warning", f"profile: {event.get('reason')}")

    def _on_exception(self, event: dict[str, Any]) -> None:
        line = str(event.get("line") or f"{event.get('type')}: {event.get('message')}")
        with self._lock:
            self.outcome.ended = "raised"
            self.outcome.line = line
        self.state.event("error", f"program raised: {line}")
        self._publish_view()

    # -- memory, from the engine's side ----------------------------------------------------
    def _restart_sampler(self, devices: list[DeviceInfo]) -> None:
        """RSS of the process, NVML for its GPUs, and the allocator pools its watcher sent last."""
        old, self._sampler = self._sampler, None
        if old is not None:
            old.stop()
        if self.pid is None:
            return
        sampler = ProgramMemory(devices, self._read_pools, self.state.on_memory, self._sample_interval_s, self.pid)
        sampler.start()
        self._sampler = sampler

    def _read_pools(self) -> list[tuple[str, tuple[PoolStats, ...]]]:
        with self._lock:
            return list(self._pools.items())

    # -- what the run shows ------------------------------------------------------------------
    def view(self) -> ProgramView:
        """The program as it stands: the run's `program` record."""
        with self._lock:
            outcome = self.outcome
            return ProgramView(
                command=tuple(self.command),
                pid=self.pid,
                python=self._hello.get("python"),
                iree=self._hello.get("iree"),
                exit_code=outcome.exit_code,
                ended=outcome.ended if outcome.exit_code is not None else None,
                ended_line=outcome.line,
                loads=tuple(self._loads),
                contexts=len(self._contexts_s),
                held=self._held,
                growth=self._growth,
                hints=tuple(self._hints),
                others=self.others,
                connected=self._agent is not None,
            )

    def _publish_view(self) -> None:
        # The run's calls are the busiest function's, as last published: its p50 is the steady call the phase
        # diagnoses measure against (read from the snapshot, not computed again).
        calls = self.state.snapshot.calls
        self._diagnose(calls.p50_ms, calls.count)
        self.state.set_program(self.view())

    def _diagnose(self, steady_ms: float | None, calls: int) -> None:
        """The load and phase diagnoses, each said once, as soon as it holds."""
        with self._lock:
            loads = list(self._loads)
            contexts = list(self._contexts_s)
            first = self._first_call_s
        for line in [
            *host_memory_hints(loads),
            *loaded_twice_hints(loads),
            *slow_phase_hints(contexts, first, steady_ms, calls),
        ]:
            self._say_hint(line)

    def _say_hint(self, line: str, subject: str | None = None) -> None:
        """A diagnosis: said once in the Log; a later line on the same subject (newer figures) replaces it quietly.

        The subject is what the line says before its first colon, unless given.
        """
        subject = subject or line.split(":", 1)[0]
        with self._lock:
            if subject in self._hint_subjects:
                self._hints[self._hint_subjects.index(subject)] = line
                return
            self._hint_subjects.append(subject)
            self._hints.append(line)
        self.state.event("warning", line)
        if self._on_hint is not None:
            self._on_hint(line)

    # -- the end -------------------------------------------------------------------------------
    def wait_for_stream(self, timeout: float) -> None:
        """Until the process's watcher has said goodbye (or its stream broke), at most `timeout` seconds."""
        agent = self._agent
        if agent is not None:
            agent.join(timeout)

    def ended(
        self, returncode: int | None, *, exit_code: int, signal: str | None, stopped_by: str | None = None
    ) -> None:
        """The process is gone: say how, stop sampling, publish the last view, write the record.

        `stopped_by`: gputop ended it (the TUI's `q`, a signal gputop passed on), said in the Log.
        """
        agent = self._agent
        if agent is not None:
            agent.join(timeout=2.0)  # its last batch of calls and its bye, before the record closes
        with self._lock:
            outcome = self.outcome
            outcome.exit_code = exit_code
            if signal is not None:
                outcome.ended, outcome.line = "signal", signal
            elif outcome.ended is None:
                outcome.ended = "exited"
            why = self._closed_why
        if stopped_by is not None:
            self.state.event("info", f"program ended by gputop ({stopped_by}): {signal or f'exit {exit_code}'}")
        elif signal is not None:
            self.state.event("error", f"program killed by {signal}" + (f" ({why})" if why else ""))
        elif outcome.ended == "exited":
            self.state.event("info", f"program exited with {exit_code}")
        if self._sampler is not None:
            self._sampler.stop()
        self.parts.stop_watch()
        self.parts.stop_clocks()
        self._publish_view()
        self.state.set_state("finished")
        self.parts.close_control()
        self.state.publish(force=True)
        report = None
        try:
            report = self.current_report()
        except Exception:  # a bug in the report must not lose the samples: keep the traceback
            self.parts.log_traceback()
        self.report = self.parts.close_record(report, state="finished", exit_code=exit_code)
        self._done.set()

    def record_interrupted_now(self, exit_code: int) -> None:
        """gputop is leaving at once (a second signal): the ending from the newest snapshot, now."""
        self.parts.close_control()
        report: dict[str, Any] | None = None
        with contextlib.suppress(Exception):
            report = self.current_report(cut_short=CUT_SHORT)
        self.parts.close_record(report, state="interrupted", exit_code=exit_code, drain_s=1.0)
        self._done.set()

    # -- what a viewer (and the command line) reaches -------------------------------------------
    @property
    def snapshot(self) -> RunSnapshot:
        return self.state.snapshot

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def exit_code(self) -> int:
        """The program's own exit code once it ended; a record that could not be written is gputop's 5."""
        code = self.outcome.exit_code
        if code is None:
            return 0
        if code == 0 and self.parts.record_error is not None:
            return EXIT_RUNTIME
        return code

    @property
    def error(self) -> None:
        return None  # the program's failures are its own exit code and Log lines, never gputop's error

    @property
    def record_error(self) -> str | None:
        return self.parts.record_error

    def current_report(self, cut_short: str | None = None) -> dict[str, Any]:
        return self.parts.report(self.state.state, self.exit_code(), cut_short=cut_short)

    def export_report(self) -> Path:
        return self.parts.export_report(self.current_report())

    def pause_refusal(self) -> str:
        """Why space cannot pause a watched program (the control channel's toggle asks before it pauses)."""
        return "a watched program makes its own calls: gputop cannot pause them (q ends the program)"

    def pause(self) -> None:
        """Nothing to do: the program makes its own calls (`pause_refusal` says so first)."""

    def resume(self) -> None:
        """Nothing to do: see `pause`."""

    def request_profile(self, level: str = "default", calls: int = PROFILE_CALLS) -> str | None:
        """Profile the program's next `calls` calls in its own process (CUDA: CUPTI); why not, or None."""
        if self.state.snapshot.profiling:
            return "a profile of the program's calls is already under way"
        reason = self._ask_agent(
            "profile",
            level=level,
            calls=calls + PROFILE_WARMUP_CALLS,  # the first are CUPTI's warm-up: left out of the table
            cupti_paths=cupti_paths(),
            python=f"{sys.version_info[0]}.{sys.version_info[1]}",
        )
        if reason is None:
            self.state.set_profiling(True)
            self.state.event("info", f"profile: the program's next {calls} calls, in its own process (CUPTI)")
        return reason

    def request_capture(self, calls: int = 1) -> str | None:
        return self._ask_agent("capture", calls=calls)

    def request_pm_sampling(self, on: bool) -> str | None:
        return PM_NOT_WATCHED if on else None

    def request_counters(self) -> str | None:
        return f"Nsight Compute must start the program itself; run ncu --target-processes all {' '.join(self.command)}"

    def keep_samples(self, seconds: float) -> None:
        self.parts.writer.watch(seconds)

    def _ask_agent(self, op: str, **fields: Any) -> str | None:
        agent = self._agent
        if agent is None:
            return "the program's watcher is not connected (it has not imported iree.runtime, or it ended)"
        reason = self.profile_refusal(op)
        if reason is not None:
            return reason
        return None if agent.send({"op": op, **fields}) else "the program's watcher is gone"

    def profile_refusal(self, op: str) -> str | None:
        """Why `op` cannot be done in this program now; None when its watcher can try."""
        with self._lock:
            backends = {d.backend for d in self._devices.values()}
        return why_not(op, backends)


_HANDLERS: dict[str, Callable[[WatchedProcess, dict[str, Any]], None]] = {
    "phase": WatchedProcess._on_phase,
    "calls": WatchedProcess._on_calls,
    "memory": WatchedProcess._on_memory,
    "note": WatchedProcess._on_note,
    "exception": WatchedProcess._on_exception,
    "kernels": WatchedProcess._on_kernels,
    "profile_refused": WatchedProcess._on_profile_refused,
}
