"""RunState: the one object a run's producers report to, behind one lock, and the snapshots it publishes.

A run's thread, its memory sampler, its neighbour watch and its flows all
report here through RunState's methods; readers on other threads (the TUI,
`gputop run`, metrics scrapes) see only the frozen `RunSnapshot`s it
publishes. What it knows is kept in one state part per concern (this
package's other modules), each holding its concern's mutable data and
building its own piece of a snapshot; RunState owns the parts and the one
lock, and is the only code that changes them, always under that lock.

Snapshots go out at most every `PUBLISH_INTERVAL_S` unless something
important changed (`publish(force=True)`), and every published snapshot is
queued to the session folder under that same lock, so `samples.jsonl` holds
them in publishing order.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from gputop.core.errors import GputopError
from gputop.core.module.compile import CompiledModule
from gputop.core.run.state.calls import CallsState
from gputop.core.run.state.captures import CapturesState
from gputop.core.run.state.clocks import ClocksState
from gputop.core.run.state.devices import DevicesState
from gputop.core.run.state.lifecycle import LifecycleState
from gputop.core.run.state.log import LogState
from gputop.core.run.state.memory import MemoryState
from gputop.core.run.state.module import ModuleState
from gputop.core.run.state.neighbours import NeighboursState
from gputop.core.run.state.outcome import OutcomeState, RunOutcome, check_lines, compile_record
from gputop.core.run.state.parameters import ParametersState
from gputop.core.run.state.pm import PmState
from gputop.core.run.state.profile import ProfileState
from gputop.core.run.state.program import ProgramState
from gputop.core.snapshot import (
    CallClocks,
    CaptureInfo,
    CountersPass,
    DeviceInfo,
    Diagnostic,
    ExportAffinity,
    MemorySample,
    ModuleBytes,
    Neighbours,
    OutputCheck,
    ParameterStages,
    ProfileSummary,
    ProgramView,
    RunSnapshot,
    RunSummary,
    StageTimings,
    Transfer,
)
from gputop.core.store.writer import SessionWriter
from gputop.core.watch.call_clocks import ClockSample

__all__ = ["ENDED_STATES", "PUBLISH_INTERVAL_S", "RunState", "Subscriber"]

Subscriber = Callable[[RunSnapshot], None]
PUBLISH_INTERVAL_S = 0.1  # at most 10 snapshots a second from calls and samples
ENDED_STATES = ("finished", "stopped", "error")  # written to the manifest by the run's ending, not by set_state


class RunState:
    """Everything a run knows about itself, behind one lock, published as snapshots.

    Writers may be called from any of the run's threads; each takes the lock,
    changes one or two parts, and, where the change is one a viewer must see
    at once, publishes (`force`). Readers get frozen values only.
    """

    def __init__(
        self, target: str, session_dir: Path, writer: SessionWriter, function: str | None = None, *, segment: int = 0
    ) -> None:
        self._target = target
        self._segment = segment
        self._session_dir = session_dir
        self._writer = writer
        self._lock = threading.RLock()
        self._subscribers: list[Subscriber] = []
        # The parts: each holds one concern's data, changed only under self._lock.
        self._lifecycle = LifecycleState()
        self._log = LogState()
        self._module = ModuleState(function=function)
        self._devices = DevicesState()
        self._calls = CallsState()
        self._memory = MemoryState()
        self._profile = ProfileState()
        self._captures = CapturesState()
        self._parameters = ParametersState()
        self._neighbours = NeighboursState()
        self._clocks = ClocksState()
        self._pm = PmState()
        self._calls.clock_readings = self._clock_readings  # each group of calls gets the clock it ran at
        self._outcome = OutcomeState()
        self._program = ProgramState()
        self._published = 0
        self._last_publish = 0.0
        self._snapshot = self._build_snapshot()
        writer.keep_samples_from(self.samples)
        # A record that stops (a full disk) is an error in the Log too: a TUI's engine has no terminal to say it
        # on, and its stderr (engine.log) is on the same full disk. Error-level: the headless echo skips it,
        # since the writer has said it on stderr already.
        writer.tell_record_stopped(lambda text: self.event("error", text))

    # -- readers (any thread) ---------------------------------------------------
    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call `callback` with every new snapshot; returns an unsubscribe function."""
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    @property
    def snapshot(self) -> RunSnapshot:
        """The newest published snapshot."""
        with self._lock:
            return self._snapshot

    @property
    def state(self) -> str:
        with self._lock:
            return self._lifecycle.state

    @property
    def devices(self) -> tuple[DeviceInfo, ...]:
        with self._lock:
            return self._devices.devices

    @property
    def function(self) -> str | None:
        with self._lock:
            return self._module.function

    @property
    def error(self) -> GputopError | None:
        with self._lock:
            return self._lifecycle.error

    @property
    def outcome(self) -> RunOutcome:
        with self._lock:
            return self._outcome.value

    @property
    def published(self) -> int:
        """How many snapshots have been published (the newest's `seq`)."""
        with self._lock:
            return self._published

    @property
    def profile(self) -> ProfileSummary | None:
        """The newest profile pass as it was set (without the counters joined)."""
        with self._lock:
            return self._profile.profile

    @property
    def renderdoc(self) -> str | None:
        with self._lock:
            return self._captures.renderdoc

    @property
    def counting(self) -> bool:
        with self._lock:
            return self._profile.counting

    def summary(self, *, state: str, exit_code: int) -> RunSummary:
        """The run's closing facts for its report (`state` may be `interrupted`, which no snapshot says)."""
        with self._lock:
            return RunSummary(
                state=state,
                exit_code=exit_code,
                session_dir=str(self._session_dir),
                **self._memory.summary_fields(),
                **self._outcome.summary_fields(),
                **self._neighbours.summary_fields(),
            )

    def samples(self) -> dict[str, Any]:
        """The call and dispatch samples a comparison needs: `calls.json`, and the report's `samples`."""
        with self._lock:
            taken = self._calls.samples()
        return taken.block()

    def recent_call_ms(self, n: int) -> list[float]:
        """The run's newest `n` call times (ms), oldest first: what a profile pass is set against."""
        with self._lock:
            return self._calls.timer.recent(n)

    def call_count(self) -> int:
        with self._lock:
            return self._calls.timer.count

    def clocks_warned(self) -> bool:
        """Whether the log has said the clocks' warning already."""
        with self._lock:
            return self._clocks.warned

    def call_clocks(self) -> CallClocks | None:
        """The GPU's clocks over every call so far (None without a GPU clock or before a reading counted)."""
        with self._lock:
            return self._clocks.summary()

    def clocks_over(self, start_s: float, end_s: float) -> CallClocks | None:
        """The GPU's clocks over the calls between `start_s` and `end_s` (perf_counter seconds, the clock of
        `CallTimer.add`'s `ended_at`), from the newest readings kept; None without any."""
        with self._lock:
            return self._clocks.over(start_s, end_s)

    def clock_samples(self) -> tuple[ClockSample, ...]:
        """The newest clock readings with the perf_counter time each was taken, oldest first."""
        with self._lock:
            return tuple(self._clocks.history)

    # -- writers: lifecycle and log ---------------------------------------------
    def set_state(self, state: str) -> None:
        """Be in `state` (idle, compiling, loading, running, paused, finished, stopped, error); published at once."""
        with self._lock:
            self._lifecycle.enter(state)
        self.publish(force=True)
        if state not in ENDED_STATES:  # the ending is written with the report
            self._writer.update(state=state)

    def phase(self, **seconds: float) -> None:
        """Record how long phases took (`compile_s=1.2`)."""
        with self._lock:
            self._lifecycle.add_phases(**seconds)
        self.publish(force=True)

    def event(self, level: str, message: str, log_path: str | None = None) -> None:
        """A line for the log (info, warning, error)."""
        with self._lock:
            self._log.add(level, message, log_path)
        self.publish(force=True)

    def events(self, lines: list[tuple[str, str]]) -> None:
        """Several lines for the log at once, `(level, message)` each, with one snapshot (a program's output)."""
        if not lines:
            return
        with self._lock:
            for level, message in lines:
                self._log.add(level, message)
        self.publish()

    def fail(self, error: GputopError) -> None:
        """The run ends in `error` with this one-line message and exit code."""
        with self._lock:
            self._lifecycle.error = error
        self.event("error", str(error), error.log_path)
        self.set_state("error")

    # -- writers: what runs, and where ------------------------------------------
    def set_devices(self, devices: list[DeviceInfo], names: tuple[tuple[str, str], ...] = ()) -> None:
        """The run's devices (the first is the one the header shows) and, multi-device, their target names."""
        with self._lock:
            self._devices.devices = tuple(devices)
            self._devices.names = names
            device = self._devices.device
        self._writer.update(device=device, devices=list(devices))
        self.publish(force=True)

    def set_exports(self, exports: tuple[ExportAffinity, ...], transfers: tuple[Transfer, ...]) -> None:
        """Multi-device runs: the affinity of every argument and result, and the transfers between devices."""
        with self._lock:
            self._devices.exports, self._devices.transfers = exports, transfers

    def set_function(self, name: str | None, result_types: tuple[str, ...] | None = None) -> None:
        """The function the run calls (and its result types, where known); published at once."""
        with self._lock:
            self._module.function = name
            if result_types is not None:
                self._module.result_types = result_types
        self.publish(force=True)

    def set_result_types(self, result_types: tuple[str, ...]) -> None:
        with self._lock:
            self._module.result_types = result_types

    def set_diagnostics(self, diagnostics: tuple[Diagnostic, ...]) -> None:
        with self._lock:
            self._module.diagnostics = diagnostics

    def set_compiled(self, compiled: CompiledModule, *, f64: str | None = None) -> None:
        """Keep the compiled module; `f64` says whether float64 was kept or demoted to float32."""
        record = compile_record(compiled, f64)
        with self._lock:
            self._outcome.set_compiled(compiled, f64)
        self._writer.update(compile=record)

    # -- writers: tensors, check and stages --------------------------------------
    def set_tensors(self, *, inputs: list[np.ndarray] | None = None, outputs: list[np.ndarray] | None = None) -> None:
        with self._lock:
            self._outcome.set_tensors(inputs, outputs)

    def record_check(self, check: OutputCheck | None) -> None:
        """Keep the outcome of an output check and say it in the log, one line."""
        with self._lock:
            self._outcome.set_check(check)
        if check is not None:
            for level, line in check_lines(check):
                self.event(level, line)

    def set_stages(self, stages: StageTimings) -> None:
        with self._lock:
            self._outcome.set_stages(stages)

    # -- writers: parameters -----------------------------------------------------
    def set_parameters(self, files: list[Path], mode: str | None) -> None:
        """The parameter files the run loads, and how (`streamed`, `mmap`, `file_async`)."""
        with self._lock:
            self._outcome.set_parameter_files(files, mode)

    def begin_parameters(
        self, mode: str, total_bytes: int, files: int, *, observed: bool, started: float | None = None
    ) -> None:
        """The parameters' load began at `started` (monotonic; now by default); `observed`: chunks are counted."""
        with self._lock:
            self._parameters.begin(mode, total_bytes, files, observed=observed, started=started)
        self.publish(force=True)

    def on_parameter_progress(self, loaded_bytes: int) -> None:
        """Bytes in place so far, from the loader's threads (published at most every PUBLISH_INTERVAL_S)."""
        with self._lock:
            if not self._parameters.progress(loaded_bytes):
                return
        self.publish()

    def end_parameters(
        self,
        loaded_bytes: int,
        seconds: float,
        *,
        mode: str | None = None,
        zero_copy: bool = False,
        stages: ParameterStages | None = None,
    ) -> None:
        """The last byte is in place: the load's totals (and its mode, if a fallback changed it, and the
        streamed loader's stage times) go out."""
        with self._lock:
            if not self._parameters.end(loaded_bytes, seconds, mode=mode, zero_copy=zero_copy, stages=stages):
                return
            self._outcome.parameters_loaded(loaded_bytes, seconds, mode=mode, zero_copy=zero_copy, stages=stages)
        self.publish(force=True)

    # -- writers: calls ----------------------------------------------------------
    def time_enqueues(self) -> None:
        """Also time when each call's enqueues returned (OpenCL), shown beside the synced time."""
        with self._lock:
            self._calls.time_enqueues()

    def add_call(self, seconds: float, *, enqueue_s: float | None = None) -> None:
        """One synced call's wall time (and, with `time_enqueues`, when its enqueues returned)."""
        with self._lock:
            self._calls.add(seconds, enqueue_s)

    def add_calls(self, seconds: list[float], ended_at: list[float]) -> None:
        """Synced calls made back to back: each one's wall time and when it ended (perf_counter seconds)."""
        with self._lock:
            for wall, end in zip(seconds, ended_at, strict=True):
                self._calls.add(wall, None, end)

    def set_dispatch_samples(self, samples: dict[str, Any] | None) -> None:
        """The per-dispatch times of the profile passes so far (`compare.samples.dispatch_samples`)."""
        with self._lock:
            self._calls.dispatch_samples = samples

    # -- writers: profile and counters passes -------------------------------------
    def set_profiling(self, active: bool) -> None:
        """Whether a profile pass is under way; published at once."""
        with self._lock:
            self._profile.profiling = active
        self.publish(force=True)

    def set_profile(self, profile: ProfileSummary | None) -> None:
        """The newest profile pass (merged over the run's passes); the Kernels table is joined again."""
        with self._lock:
            self._profile.set_profile(profile)

    def set_pass_neighbours(self, profile: ProfileSummary, neighbours: Neighbours) -> None:
        """The newest pass's neighbours on its summary, if `profile` (the summary that pass set) is still current."""
        updated: ProfileSummary = replace(profile, neighbours=neighbours)
        with self._lock:
            self._profile.replace_profile(profile, updated)

    def set_counting(self, active: bool) -> None:
        """Whether a counters pass is under way; published at once."""
        with self._lock:
            self._profile.counting = active
        self.publish(force=True)

    def set_counters(self, counters: CountersPass, alone: ProfileSummary | None = None) -> None:
        """The newest counters pass; `alone`, its own kernel table, stands in while the run has no profile.

        A pass that failed (`counters.error`, said in the log) does not replace one that measured: the
        table keeps what was measured, and the report the pass that measured it.
        """
        with self._lock:
            self._profile.set_counters(counters, alone)

    # -- writers: watchers and captures ----------------------------------------------
    def on_memory(self, sample: MemorySample) -> None:
        """A memory sample from the sampler thread: pools, device and host, and the peaks since the start."""
        with self._lock:
            self._memory.add(sample)
        self.publish()

    def set_module_bytes(self, module_bytes: tuple[ModuleBytes, ...]) -> None:
        """The module's weights per device, once its context exists (the Memory pane's weights row)."""
        with self._lock:
            self._memory.module_bytes = module_bytes
        self.publish(force=True)

    def on_neighbours(self, neighbours: Neighbours) -> None:
        """The live view of the GPU's other processes and the host's load (the neighbour watch's thread)."""
        with self._lock:
            self._neighbours.live = neighbours

    def set_clock_source(self, gpu: str | None, reason: str | None) -> None:
        """Whose clocks the run reads ("NVIDIA H200 (nvml:0)"), or why it reads none."""
        with self._lock:
            self._clocks.set_source(gpu, reason)

    def on_clock(self, sample: ClockSample) -> None:
        """A clock reading from the clock watch's thread; it counts for the calls when calls ended since the last.
        The first time the clocks over the calls earn a warning, the log says it in full (the Run pane in short)."""
        with self._lock:
            self._clocks.add(sample, self._calls.timer.count)
            summary = self._clocks.summary()
            warning = summary.warning if summary is not None and not self._clocks.warned else None
            if warning:
                self._clocks.warned = True
        if warning:
            self.event("warning", f"clocks: {warning}")
        self.publish()

    # -- the PM sampling strip (profiling.pm_watch's thread, and the engine) -------------------
    def pm_ready(self, info: dict[str, Any]) -> None:
        """PM sampling has started (or started again after a pause) with these metrics."""
        with self._lock:
            again = self._pm.state == "paused"
            self._pm.ready(info, time.perf_counter())
        if again:
            self.event("info", "pm sampling: on again")
        self.publish(force=True)

    def pm_samples(self, rows: np.ndarray, overflow: bool, decode_s: float) -> None:
        """Decoded samples: kept for the strip, and the calls they now cover get their own averages."""
        with self._lock:
            self._pm.add(rows, overflow, decode_s)
            first, starts, ends = self._calls.timer.windows_from(self._pm.aligned_through)
            if first > self._pm.aligned_through:  # calls the window no longer holds: passed over
                self._pm.aligned_through = first
            self._pm.align(first, starts, ends)
        self.publish()

    def pm_not_sampling(self, state: str, reason: str) -> None:
        """PM sampling is not running: `state` (refused, paused, off, ended) and why; a change goes to the log."""
        with self._lock:
            changed = (self._pm.state, self._pm.reason) != (state, reason)
            self._pm.set_reason(state, reason)
            device = self._devices.devices[0] if self._devices.devices else None
        # The key's own viewer says "PM sampling off": the log keeps refusals and pauses, which no key asked for.
        if changed and state in ("refused", "paused") and device is not None and device.kind == "gpu":
            self.event("warning" if state == "refused" else "info", f"pm sampling: {reason}")
        self.publish(force=True)

    def pm_state(self) -> tuple[str, str | None]:
        with self._lock:
            return self._pm.state, self._pm.reason

    def set_call_neighbours(self, neighbours: Neighbours) -> None:
        """Who else used the GPU and the host over the run's calls: the report's `neighbours`."""
        with self._lock:
            self._neighbours.over_calls = neighbours

    def set_renderdoc(self, status: str | None) -> None:
        """RenderDoc's status: "RenderDoc 1.6.0 loaded", or why capture is unavailable."""
        with self._lock:
            self._captures.renderdoc = status

    def add_capture(self, capture: CaptureInfo) -> None:
        with self._lock:
            self._captures.add(capture)

    # -- publishing ---------------------------------------------------------------
    def set_program(self, view: ProgramView) -> None:
        """A watched program's view (its functions' rows are the program part's own, filled in here)."""
        with self._lock:
            self._program.view = view
        self.publish()

    def add_program_calls(self, calls: list[object]) -> int:
        """A batch of a watched program's calls; the busiest function's timer becomes the run's `calls`."""
        with self._lock:
            taken = self._program.add_calls(calls)
            busiest = self._program.busiest()
            if busiest is not None:
                self._module.function, self._calls.timer = busiest
        self.publish()
        return taken

    def add_program_reads(self, reads: list[object]) -> None:
        """A batch of a watched program's reads of its results back to the host."""
        with self._lock:
            self._program.add_reads(reads)

    def publish(self, force: bool = False) -> None:
        """Build and hand out a snapshot, at most every PUBLISH_INTERVAL_S unless `force`."""
        now = time.monotonic()
        with self._lock:
            if not force and now - self._last_publish < PUBLISH_INTERVAL_S:
                return
            self._last_publish = now
            self._published += 1
            self._snapshot = self._build_snapshot(exact=force)
            snapshot = self._snapshot
            # Queued under the lock, so samples.jsonl has them in publishing order.
            self._writer.on_snapshot(snapshot)
            subscribers = list(self._subscribers)
        for callback in subscribers:
            try:
                callback(snapshot)
            except Exception:  # a broken subscriber must not stop the run
                continue

    def _clock_readings(self) -> list[tuple[float, float]]:
        """The newest clock readings as (perf_counter seconds, SM MHz), for the calls' groups (under the lock)."""
        return [(at_s, reading.sm_mhz) for at_s, reading in self._clocks.history]

    def _build_snapshot(self, exact: bool = False) -> RunSnapshot:
        """The parts' pieces, each built by its part, with what only RunState knows: the run and the count.
        `exact` (a forced snapshot: a state change, the calls' end) looks for the calls' groups again now."""
        return RunSnapshot(
            target=self._target,
            session_dir=str(self._session_dir),
            segment=self._segment,
            seq=self._published,
            **self._lifecycle.fields(),
            **self._log.fields(),
            **self._module.fields(),
            **self._devices.fields(),
            **self._calls.fields(exact=exact),
            **self._memory.fields(),
            **self._profile.fields(),
            **self._captures.fields(),
            **self._parameters.fields(),
            **self._neighbours.fields(),
            **self._clocks.fields(),
            **self._pm.fields(time.perf_counter()),
            **self._program.fields(),
            **self._outcome.fields(),
        )
