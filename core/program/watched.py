"""One watched process of a user's program, as a gputop session: its watcher's events become snapshots.

The watcher inside the process (`inject/gputop_agent/`) reports what the
program does with `iree.runtime`; this turns each report into the run's state
(phases, loads, per-function calls, memory, held results, diagnoses) and the
session folder, control channel and neighbour watch come from `RunParts`, as
for a run gputop makes itself. So every face (the TUI, attach, web,
Prometheus, `report`, `compare`, `open`) reads it unchanged.

Nothing here runs in the program: events arrive on the connection's reading thread, memory (the process's
RSS, NVML, the allocator statistics the watcher sent last) is sampled on the engine's own watcher thread, and a
failure in either is one Log line, never the program's concern. A request the program cannot honour (pause:
gputop does not own its calls) is refused in one line.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gputop.core.errors import EXIT_RUNTIME
from gputop.core.program.agent_link import AgentConnection
from gputop.core.program.diagnose import (
    GrowthPoint,
    Hint,
    argument_upload_hints,
    contexts_per_call_hints,
    growth_hint,
    host_memory_hints,
    loaded_twice_hints,
    slow_phase_hints,
)
from gputop.core.program.events import device_from_event, load_from_event, load_line, with_nvml_gpu
from gputop.core.program.findings import Findings
from gputop.core.program.growth import GrowthTracker
from gputop.core.program.memory import ProgramMemory, pools_in_report
from gputop.core.program.phases import ProgramPhases
from gputop.core.program.profile import (
    PROFILE_CALLS,
    PROFILE_WARMUP_CALLS,
    cupti_paths,
    profile_from_event,
    why_not,
)
from gputop.core.program.stacks import StackSampler, find_py_spy
from gputop.core.program.trace import TraceKeeper
from gputop.core.records.devices import DeviceInfo
from gputop.core.records.memory import PoolStats
from gputop.core.records.program import (
    FunctionCalls,
    HeldResults,
    ProgramLoad,
    ProgramStacks,
    ProgramView,
)
from gputop.core.run.parts import RunParts
from gputop.core.snapshot import RunSnapshot
from gputop.core.store.report import CUT_SHORT
from gputop.core.units import seconds

__all__ = ["ProgramOutcome", "WatchedProcess"]

# PM sampling reads the work of the process that samples (bench/gpu/pm_strip.sh: a sampler beside another
# process decoded no samples); the watcher inside the program does not sample yet.
PM_NOT_WATCHED = (
    "PM sampling sees only the work of the process that samples, and a watched program's calls run in its own: "
    "gputop run on its .vmfb samples the same module's calls"
)

LOAD_LINES = 10  # module and parameter loads said one by one in the Log (a load per request is diagnosed)
CONTEXT_LINES = 3  # contexts said one by one in the Log; the rest are counted (program.contexts) and diagnosed
VIEW_EVERY_S = 0.1  # the program's view and phases go out at most this often from a stream of events


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
        sample_stacks: bool = True,
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
        self._sample_stacks = sample_stacks  # the program's Python, with py-spy from outside (stacks.py)
        self._lock = threading.Lock()
        self._loads: list[ProgramLoad] = []
        self._phases = ProgramPhases()
        self._view_at = 0.0  # when the view went out last (VIEW_EVERY_S)
        self._view_due = False  # a change since, not yet out: the memory sampler's next look sends it
        self._devices: dict[str, DeviceInfo] = {}
        self._pools: dict[str, tuple[PoolStats, ...]] = {}
        self._held: HeldResults | None = None
        self._growth = GrowthTracker()
        self._findings = Findings()
        self._agent: AgentConnection | None = None
        self._hello: dict[str, Any] = {}
        self._sampler: ProgramMemory | None = None
        self.pid: int | None = None
        self.outcome = ProgramOutcome()
        self.others = 0  # other processes of the command with sessions of their own
        self._done = threading.Event()
        self.report: dict[str, Any] | None = None
        self._closed_why: str | None = None
        self.trace = TraceKeeper()  # the newest calls, reads, stacks and kernels: program_trace.json at the end
        self._stacks: StackSampler | None = None
        self._stacks_view: ProgramStacks | None = None
        self._calls_dropped = 0  # calls the watcher counted but could not send
        self._calls_made: int | None = None  # calls the watcher counted in the process (sent + dropped), at its bye

    # -- the watcher's stream ----------------------------------------------------------
    def attach(self, agent: AgentConnection, earlier: list[dict[str, Any]] | None = None) -> None:
        """Take a process's stream (already being read): `earlier` events first, then each as it comes."""
        hello = agent.hello or {}
        with self._lock:
            self._agent = agent
            self._hello = hello
            self.pid = agent.pid
        self.state.lifecycle.enter("loading")
        python = hello.get("python") or "?"
        iree = hello.get("iree") or "?"
        self.state.log.add("info", f"program: pid {agent.pid} uses iree.runtime {iree} (Python {python})")
        agent.on_event = self._on_event
        agent.on_closed = self._on_closed
        if self._sample_stacks and agent.pid is not None:
            self._stacks = StackSampler(agent.pid, self._on_stacks, py_spy=find_py_spy())
            self._stacks.on_round = self.trace.add_round
            self._stacks.start()
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
            self.state.log.add("warning", f"program: a {event.get('kind')} report could not be read{where}")

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
            each = event.get("each")
            times = [float(t) for t in each] if isinstance(each, list) and each else [spent]
            with self._lock:
                before = self._phases.add_contexts(times)
                made = self._phases.contexts
            modules = ", ".join(str(m) for m in event.get("modules") or ())
            for one in times[: max(CONTEXT_LINES - before, 0)]:
                self.state.log.add(
                    "info", f"program: context created in {seconds(one)}" + (f" ({modules})" if modules else "")
                )
            if before <= CONTEXT_LINES < made:
                self.state.log.add("info", "program: more contexts: counted (program.contexts), not said one by one")
        elif name == "first_call":
            with self._lock:
                first = self._phases.first_call(spent)
            if first:
                self.state.lifecycle.phase(first_call_s=spent)
                self.state.log.add("info", f"program: first call of {event.get('function')} took {seconds(spent)}")
        elif name == "context_destroyed":
            with self._lock:
                self._phases.teardown(spent)
        elif name == "instance":
            self.state.log.add("info", f"program: IREE instance made in {seconds(spent)}")
        self._publish_view(now=False)

    def _add_device(self, event: dict[str, Any], spent: float) -> None:
        with self._lock:
            info = with_nvml_gpu(device_from_event(event, list(self._devices.values())))
            self._devices[info.uri or info.id] = info
            devices = list(self._devices.values())
        self.state.devices.set(devices)
        self.state.log.add("info", f"program: device {info.uri} created in {seconds(spent)}")
        self._restart_sampler(devices)
        if self.parts.watch is None:  # who else uses its first device and the host, from then on
            self.parts.start_watch(info, [self.pid] if self.pid is not None else [])
            self.parts.start_clocks(info, self._sample_interval_s)  # and the clocks its calls ran at
            self.parts.start_pm(info, PM_NOT_WATCHED if info.backend == "cuda" else None, 1.0)

    def _add_load(self, kind: str, event: dict[str, Any], spent: float) -> None:
        load = load_from_event(kind, event, spent)
        if load is None:  # a provider made from loads already counted: no bytes moved
            self.state.log.add("info", f"program: parameters {event.get('api')} in {seconds(spent)}")
            return
        phase = "load_s" if kind == "module" else "parameters_s"
        with self._lock:
            self._loads.append(load)
            made = len(self._loads)
            self._phases.due[phase] = sum(item.seconds for item in self._loads if item.kind == kind)
        if made <= LOAD_LINES:
            self.state.log.add("info", load_line(load))
        elif made == LOAD_LINES + 1:
            self.state.log.add("info", "program: more loads: counted (program.loads), not said one by one")

    def _on_calls(self, event: dict[str, Any]) -> None:
        calls = event.get("calls")
        if isinstance(calls, list) and calls:
            self.trace.add_calls(calls)
            self.state.program.add_calls(calls)
            if self.state.lifecycle.state == "loading":
                self.state.lifecycle.enter("running")
            self._publish_view(now=False)

    def _on_stacks(self, stacks: ProgramStacks) -> None:
        """A round of the program's sampled Python (the stack sampler's thread); a refusal is one Log line."""
        with self._lock:
            self._stacks_view = stacks
        if stacks.reason is not None:
            self.state.log.add("warning", f"stacks: {stacks.reason}")
        self._publish_view(now=False)

    def _on_reads(self, event: dict[str, Any]) -> None:
        reads = event.get("reads")
        if isinstance(reads, list) and reads:
            self.trace.add_reads(reads)
            self.state.program.add_reads(reads)

    def _on_dropped(self, event: dict[str, Any]) -> None:
        """The watcher could not send some calls (gputop fell behind): the counts are short by this many."""
        dropped = event.get("calls")
        if not isinstance(dropped, int) or dropped <= 0:
            return
        with self._lock:
            first = self._calls_dropped == 0
            self._calls_dropped = max(self._calls_dropped, dropped)
        if first:
            self.state.log.add(
                "warning",
                "program: gputop fell behind the program's calls and counted some without their times: "
                "the call counts are lower bounds (the report says how many)",
            )
        self._publish_view()

    def _on_memory(self, event: dict[str, Any]) -> None:
        with self._lock:
            by_uri = dict(self._devices)
        pools, live_total = pools_in_report(event.get("devices"), by_uri)
        held_row = event.get("held") or {}
        held = HeldResults(count=int(held_row.get("count") or 0), bytes=int(held_row.get("bytes") or 0))
        calls_total = int(event.get("calls_total") or 0)
        rss = self._sampler.latest_rss if self._sampler is not None else None
        point = GrowthPoint(calls_total, held.bytes, live_total if pools else None, rss)
        with self._lock:
            self._pools = pools
            self._held = held
            changed = self._growth.add(point, event.get("held_peak") or {})
            growth = self._growth.growth
        if changed:  # said once; newer figures replace the line quietly
            for hint in growth_hint(growth):
                self._say_hint(hint)
        self._publish_view()

    def _on_note(self, event: dict[str, Any]) -> None:
        level = event.get("level") if event.get("level") in ("info", "warning", "error") else "warning"
        self.state.log.add(str(level), f"program: {event.get('message')}")

    def _on_bye(self, event: dict[str, Any]) -> None:
        """The watcher's last word: how many calls it sent and how many it could not."""
        sent, dropped = event.get("calls_total"), event.get("calls_dropped")
        with self._lock:
            if isinstance(sent, int):
                self._calls_made = max(self._calls_made or 0, sent + (dropped if isinstance(dropped, int) else 0))
            if isinstance(dropped, int):
                self._calls_dropped = max(self._calls_dropped, dropped)

    def _on_kernels(self, event: dict[str, Any]) -> None:
        """A profile of the program's calls, recorded by CUPTI in its own process: the Kernels pane's table."""
        self.state.profile.set_profiling(False)
        with self._lock:
            device = next((d.id for d in self._devices.values() if d.backend == "cuda"), "cuda:0")
        self.trace.add_kernels(event)
        summary, line = profile_from_event(event, device)
        if summary is not None:
            self.state.profile.set_profile(summary)
        self.state.log.add("info" if summary is not None else "warning", line)

    def _on_profile_refused(self, event: dict[str, Any]) -> None:
        self.state.profile.set_profiling(False)
        self.state.log.add("warning", f"profile: {event.get('reason')}")

    def _on_exception(self, event: dict[str, Any]) -> None:
        line = str(event.get("line") or f"{event.get('type')}: {event.get('message')}")
        with self._lock:
            self.outcome.ended = "raised"
            self.outcome.line = line
        self.state.log.add("error", f"program raised: {line}")
        self._publish_view()

    # -- memory, from the engine's side ----------------------------------------------------
    def _restart_sampler(self, devices: list[DeviceInfo]) -> None:
        """RSS of the process, NVML for its GPUs, and the allocator pools its watcher sent last."""
        old, self._sampler = self._sampler, None
        if old is not None:
            old.stop()
        if self.pid is None:
            return
        sampler = ProgramMemory(devices, self._read_pools, self.state.memory.add, self._sample_interval_s, self.pid)
        sampler.start()
        self._sampler = sampler

    def _read_pools(self) -> list[tuple[str, tuple[PoolStats, ...]]]:
        """The sampler's look (every sample interval): the pools, and the view if a change has waited for it."""
        with self._lock:
            pools = list(self._pools.items())
            due = self._view_due
        if due:
            self._publish_view()
        return pools

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
                contexts=self._phases.contexts,
                held=self._held,
                growth=self._growth.growth,
                hints=tuple(self._findings.lines),
                hint_subjects=tuple(self._findings.subjects),
                others=self.others,
                connected=self._agent is not None,
                calls_made=self._calls_made,
                calls_dropped=self._calls_dropped,
                context_p50_ms=self._phases.context_median_ms(),
                stacks=self._stacks_view,
            )

    def _publish_view(self, now: bool = True) -> None:
        """The view (and phase totals) out; with `now` False at most every VIEW_EVERY_S, the rest marked due.

        A stream of events (a context per request, a batch of calls every few ms) would otherwise build a view,
        diagnose and publish per event; what is due goes out with the memory sampler's next look.
        """
        at = time.monotonic()
        with self._lock:
            if not now and at - self._view_at < VIEW_EVERY_S:
                self._view_due = True
                return
            self._view_at, self._view_due = at, False
            phases = self._phases.take_due()
        if phases:
            self.state.lifecycle.phase(**phases)
        # The run's calls are the busiest function's, as last published: its p50 is the steady call the phase
        # diagnoses measure against (read from the snapshot, not computed again).
        snapshot = self.state.snapshot
        calls = snapshot.calls
        functions = snapshot.program.functions if snapshot.program is not None else ()
        self._diagnose(calls.p50_ms, calls.count, functions)
        self.state.program.set_view(self.view())

    def _diagnose(self, steady_ms: float | None, calls: int, functions: tuple[FunctionCalls, ...]) -> None:
        """The diagnoses, each said once as soon as it holds; newer figures replace its line in place."""
        with self._lock:
            loads = list(self._loads)
            contexts = self._phases.contexts
            context_ms = self._phases.context_median_ms()
            first = self._phases.first_call_s
        all_calls = sum(row.count for row in functions) or calls
        for hint in [
            *host_memory_hints(loads),
            *loaded_twice_hints(loads),
            *contexts_per_call_hints(contexts, all_calls, context_ms, steady_ms),
            *slow_phase_hints(first, steady_ms, calls),
            *argument_upload_hints(functions),
        ]:
            self._say_hint(hint)

    def _say_hint(self, hint: Hint) -> None:
        """A diagnosis: said once in the Log; a later line on the same subject (newer figures) replaces it quietly."""
        with self._lock:
            new = self._findings.take(hint)
        if not new:
            return
        line = hint[1]
        self.state.log.add("warning", line)
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
            self.state.log.add("info", f"program ended by gputop ({stopped_by}): {signal or f'exit {exit_code}'}")
        elif signal is not None:
            self.state.log.add("error", f"program killed by {signal}" + (f" ({why})" if why else ""))
        elif outcome.ended == "exited":
            self.state.log.add("info", f"program exited with {exit_code}")
        if self._sampler is not None:
            self._sampler.stop()
        if self._stacks is not None:
            self._stacks.stop(wait_s=1.0)  # the process is gone: py-spy writes its last round
        self.parts.stop_watch()
        self.parts.stop_clocks()
        self._publish_view()
        self.state.lifecycle.enter("finished")
        self.parts.close_control()
        self.state.publish(force=True)
        report = None
        try:
            report = self.current_report()
        except Exception:  # a bug in the report must not lose the samples: keep the traceback
            self.parts.log_traceback()
        with contextlib.suppress(Exception):  # the trace is extra: its failure must not lose the report
            self.parts.writer.write_program_trace(self.trace.block())
        self.report = self.parts.close_record(report, state="finished", exit_code=exit_code)
        self._done.set()

    def record_interrupted_now(self, exit_code: int) -> None:
        """gputop is leaving at once (a second signal): the ending from the newest snapshot, now."""
        if self._stacks is not None:
            self._stacks.stop()
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
        return self.parts.report(self.state.lifecycle.state, self.exit_code(), cut_short=cut_short)

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
            self.state.profile.set_profiling(True)
            self.state.log.add("info", f"profile: the program's next {calls} calls, in its own process (CUPTI)")
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
    "reads": WatchedProcess._on_reads,
    "dropped": WatchedProcess._on_dropped,
    "bye": WatchedProcess._on_bye,
}
