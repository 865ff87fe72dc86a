"""The state of one run, and the only code that changes it: phases, events, memory, calls, publishing.

A run's thread, its memory sampler and its flows all report here; readers on
other threads (the TUI, `gputop run`, metrics scrapes) see only the frozen
`RunSnapshot`s it publishes. One lock guards everything, snapshots go out at
most every `PUBLISH_INTERVAL_S` unless something important changed, and every
published snapshot is queued to the session folder under that same lock, so
`samples.jsonl` holds them in publishing order. The Kernels table it
publishes is the newest profile joined with the newest counters pass
(`counters.with_counters`), joined once when either changes, not per snapshot.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from gputop.core.compare.samples import call_samples, samples_block
from gputop.core.errors import GputopError
from gputop.core.module.compile import CompiledModule
from gputop.core.module.tensors import summarize
from gputop.core.profiling.counters import with_counters
from gputop.core.snapshot import (
    CaptureInfo,
    CompileRecord,
    CountersPass,
    DeviceInfo,
    Diagnostic,
    Event,
    ExportAffinity,
    MemorySample,
    Neighbours,
    OutputCheck,
    ParameterLoad,
    ParameterStages,
    Phases,
    ProfileSummary,
    RunSnapshot,
    RunSummary,
    StageTimings,
    Transfer,
    to_json,
)
from gputop.core.stats import CallTimer
from gputop.core.store.writer import SessionWriter
from gputop.core.units import check_tolerances, unchecked_outputs

__all__ = ["PUBLISH_INTERVAL_S", "RunOutcome", "RunState", "Subscriber"]

Subscriber = Callable[[RunSnapshot], None]
PUBLISH_INTERVAL_S = 0.1  # at most 10 snapshots a second from calls and samples
MEMORY_HISTORY = 120
EVENTS_KEPT = 200
EVENTS_PUBLISHED = 50
ENDED_STATES = ("finished", "stopped", "error")  # written to the manifest by the run's ending, not by set_state


@dataclass(frozen=True)
class RunOutcome:
    """What a run produced besides its snapshots: module, tensors, check, parameters, stage timings."""

    compiled: CompiledModule | None = None
    f64: str | None = None  # float64 in the compiled module: "kept", "demoted" or None (see set_compiled)
    inputs: tuple[np.ndarray, ...] = ()
    outputs: tuple[np.ndarray, ...] = ()
    check: OutputCheck | None = None
    parameter_files: tuple[Path, ...] = ()
    parameter_mode: str | None = None
    stages: StageTimings | None = None
    timestamp: float = field(default_factory=time.time)
    parameter_bytes: int | None = None
    parameter_seconds: float | None = None
    parameter_zero_copy: bool = False
    parameter_stages: ParameterStages | None = None


class RunState:
    """Everything a run knows about itself, behind one lock, published as snapshots."""

    def __init__(
        self, target: str, session_dir: Path, writer: SessionWriter, function: str | None = None, *, segment: int = 0
    ) -> None:
        self._target = target
        self._segment = segment
        self._session_dir = session_dir
        self._writer = writer
        self._lock = threading.RLock()
        self._subscribers: list[Subscriber] = []
        self._state = "idle"
        self._state_since: float | None = None
        self._device: DeviceInfo | None = None
        self._devices: tuple[DeviceInfo, ...] = ()
        self._device_names: tuple[tuple[str, str], ...] = ()
        self._function = function
        self._result_types: tuple[str, ...] = ()
        self._phases = Phases()
        self._timer = CallTimer()
        self._enqueue_timer: CallTimer | None = None  # OpenCL: when the enqueues returned, beside the synced time
        self._memory: MemorySample | None = None
        self._memory_history: deque[int] = deque(maxlen=MEMORY_HISTORY)
        self._peak_live: dict[str, int] = {}
        self._peak_rss = 0
        self._samples = 0
        self._diagnostics: tuple[Diagnostic, ...] = ()
        self._events: deque[Event] = deque(maxlen=EVENTS_KEPT)
        self._seq = 0
        self._errors = 0
        self._error: GputopError | None = None
        self._profile: ProfileSummary | None = None
        self._dispatch_samples: dict[str, Any] | None = None  # the profile passes' per-dispatch times
        self._profiling = False
        self._counters: CountersPass | None = None  # the newest counters pass (ncu)
        self._counters_alone: ProfileSummary | None = None  # its own kernel table, for a run not yet profiled
        self._counting = False
        self._joined: ProfileSummary | None = None  # what snapshots show: the profile joined with the counters
        self._exports: tuple[ExportAffinity, ...] = ()
        self._transfers: tuple[Transfer, ...] = ()
        self._captures: tuple[CaptureInfo, ...] = ()
        self._renderdoc: str | None = None
        self._neighbours: Neighbours | None = None  # the live view: who else used the GPU and host just now
        self._call_neighbours: Neighbours | None = None  # ... over the run's calls: what its report says
        self._outcome = RunOutcome()
        self._parameters: ParameterLoad | None = None
        self._parameters_started = 0.0  # monotonic
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
        with self._lock:
            return self._snapshot

    @property
    def state(self) -> str:
        with self._lock:
            return self._state

    @property
    def devices(self) -> tuple[DeviceInfo, ...]:
        with self._lock:
            return self._devices

    @property
    def function(self) -> str | None:
        with self._lock:
            return self._function

    @property
    def error(self) -> GputopError | None:
        with self._lock:
            return self._error

    @property
    def outcome(self) -> RunOutcome:
        with self._lock:
            return self._outcome

    @property
    def published(self) -> int:
        with self._lock:
            return self._published

    @property
    def profile(self) -> ProfileSummary | None:
        with self._lock:
            return self._profile

    @property
    def renderdoc(self) -> str | None:
        with self._lock:
            return self._renderdoc

    def summary(self, *, state: str, exit_code: int) -> RunSummary:
        """The run's closing facts for its report (`state` may be `interrupted`, which no snapshot says)."""
        with self._lock:
            outcome = self._outcome
            compiled = outcome.compiled
            return RunSummary(
                state=state,
                exit_code=exit_code,
                peak_live_bytes=tuple(self._peak_live.items()),
                host_rss_peak_bytes=self._peak_rss,
                memory_samples=self._samples,
                compile=_compile_record(compiled, outcome.f64) if compiled is not None else None,
                parameter_files=tuple(str(p) for p in outcome.parameter_files),
                parameter_mode=outcome.parameter_mode,
                inputs=summarize(list(outcome.inputs)),
                outputs=summarize(list(outcome.outputs)),
                check=outcome.check,
                stages=outcome.stages,
                session_dir=str(self._session_dir),
                parameter_bytes=outcome.parameter_bytes,
                parameter_seconds=outcome.parameter_seconds,
                parameter_zero_copy=outcome.parameter_zero_copy,
                neighbours=self._call_neighbours,
                parameter_stages=outcome.parameter_stages,
            )

    # -- writers (the run's threads) ----------------------------------------------
    def set_state(self, state: str) -> None:
        with self._lock:
            if state != self._state:
                self._state_since = time.time()
            self._state = state
        self.publish(force=True)
        if state not in ENDED_STATES:  # the ending is written with the report
            self._writer.update(state=state)

    def phase(self, **seconds: float) -> None:
        """Record how long phases took (`compile_s=1.2`)."""
        with self._lock:
            self._phases = replace(self._phases, **seconds)
        self.publish(force=True)

    def event(self, level: str, message: str, log_path: str | None = None) -> None:
        """A line for the log (info, warning, error)."""
        with self._lock:
            self._seq += 1
            self._events.append(Event(self._seq, level, message, log_path))
            if level == "error":
                self._errors += 1
        self.publish(force=True)

    def fail(self, error: GputopError) -> None:
        """The run ends in `error` with this one-line message and exit code."""
        with self._lock:
            self._error = error
        self.event("error", str(error), error.log_path)
        self.set_state("error")

    def set_devices(self, devices: list[DeviceInfo], names: tuple[tuple[str, str], ...] = ()) -> None:
        """The run's devices (the first is the one the header shows) and, multi-device, their target names."""
        with self._lock:
            self._device = devices[0] if devices else None
            self._devices = tuple(devices)
            self._device_names = names
        self._writer.update(device=self._device, devices=list(devices))
        self.publish(force=True)

    def set_function(self, name: str | None, result_types: tuple[str, ...] | None = None) -> None:
        with self._lock:
            self._function = name
            if result_types is not None:
                self._result_types = result_types
        self.publish(force=True)

    def set_result_types(self, result_types: tuple[str, ...]) -> None:
        with self._lock:
            self._result_types = result_types

    def set_diagnostics(self, diagnostics: tuple[Diagnostic, ...]) -> None:
        with self._lock:
            self._diagnostics = diagnostics

    def set_exports(self, exports: tuple[ExportAffinity, ...], transfers: tuple[Transfer, ...]) -> None:
        with self._lock:
            self._exports, self._transfers = exports, transfers

    def set_renderdoc(self, status: str | None) -> None:
        with self._lock:
            self._renderdoc = status

    def set_compiled(self, compiled: CompiledModule, *, f64: str | None = None) -> None:
        """Keep the compiled module; `f64` says whether float64 was kept or demoted to float32."""
        record = _compile_record(compiled, f64)
        with self._lock:
            self._outcome = replace(self._outcome, compiled=compiled, f64=f64)
        self._writer.update(compile=record)

    def set_tensors(self, *, inputs: list[np.ndarray] | None = None, outputs: list[np.ndarray] | None = None) -> None:
        with self._lock:
            if inputs is not None:
                self._outcome = replace(self._outcome, inputs=tuple(inputs))
            if outputs is not None:
                self._outcome = replace(self._outcome, outputs=tuple(outputs))

    def set_parameters(self, files: list[Path], mode: str | None) -> None:
        with self._lock:
            self._outcome = replace(self._outcome, parameter_files=tuple(files), parameter_mode=mode)

    def begin_parameters(
        self, mode: str, total_bytes: int, files: int, *, observed: bool, started: float | None = None
    ) -> None:
        """The parameters' load began at `started` (monotonic; now by default); `observed`: chunks are counted."""
        with self._lock:
            self._parameters_started = time.monotonic() if started is None else started
            self._parameters = ParameterLoad(mode, total_bytes, 0, 0.0, observed=observed, files=files)
        self.publish(force=True)

    def on_parameter_progress(self, loaded_bytes: int) -> None:
        """Bytes in place so far, from the loader's threads (published at most every PUBLISH_INTERVAL_S)."""
        with self._lock:
            if self._parameters is None or self._parameters.done:
                return
            self._parameters = replace(self._parameters, loaded_bytes=loaded_bytes)
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
            if self._parameters is None:
                return
            self._parameters = replace(
                self._parameters,
                loaded_bytes=loaded_bytes,
                seconds=seconds,
                done=True,
                mode=mode or self._parameters.mode,
                timestamp=time.time(),
                zero_copy=zero_copy,
                stages=stages,
            )
            self._outcome = replace(
                self._outcome,
                parameter_bytes=loaded_bytes,
                parameter_seconds=seconds,
                parameter_mode=mode or self._outcome.parameter_mode,
                parameter_zero_copy=zero_copy,
                parameter_stages=stages,
            )
        self.publish(force=True)

    def set_stages(self, stages: StageTimings) -> None:
        with self._lock:
            self._outcome = replace(self._outcome, stages=stages)

    def record_check(self, check: OutputCheck | None) -> None:
        """Keep the outcome of an output check and say it in the log, one line."""
        with self._lock:
            self._outcome = replace(self._outcome, check=check)
        if check is not None:
            verdict = "match" if check.passed else "DO NOT match"
            level = "info" if check.passed else "error"
            detail = f"max abs err {check.max_abs_err:.3g}"
            if check.tolerances:
                detail += f", {check_tolerances(to_json(check.tolerances))}"
            first = check.first_mismatch
            if first is not None:
                at = ",".join(map(str, first.index))
                detail += (
                    f"; {check.mismatches} elements differ, first output {first.output} [{at}]: "
                    f"got {first.got}, expected {first.expected}"
                )
            self.event(level, f"outputs {verdict} {check.reference} ({detail})")
            if check.unchecked:
                outputs = len(check.tolerances) + len(check.unchecked)
                self.event("warning", unchecked_outputs(check.unchecked, outputs))

    def time_enqueues(self) -> None:
        """Also time when each call's enqueues returned (OpenCL), shown beside the synced time."""
        with self._lock:
            if self._enqueue_timer is None:
                self._enqueue_timer = CallTimer()

    def add_call(self, seconds: float, *, enqueue_s: float | None = None) -> None:
        """One synced call's wall time (and, with `time_enqueues`, when its enqueues returned)."""
        with self._lock:
            self._timer.add(seconds)
            if enqueue_s is not None and self._enqueue_timer is not None:
                self._enqueue_timer.add(enqueue_s)

    def recent_call_ms(self, n: int) -> list[float]:
        """The run's newest `n` call times (ms), oldest first: what a profile pass is set against."""
        with self._lock:
            return self._timer.recent(n)

    def call_count(self) -> int:
        with self._lock:
            return self._timer.count

    def set_profiling(self, active: bool) -> None:
        with self._lock:
            self._profiling = active
        self.publish(force=True)

    def set_profile(self, profile: ProfileSummary | None) -> None:
        with self._lock:
            self._profile = profile
            self._join()

    def set_counting(self, active: bool) -> None:
        with self._lock:
            self._counting = active
        self.publish(force=True)

    @property
    def counting(self) -> bool:
        with self._lock:
            return self._counting

    def set_counters(self, counters: CountersPass, alone: ProfileSummary | None = None) -> None:
        """The newest counters pass; `alone`, its own kernel table, stands in while the run has no profile.

        A pass that failed (`counters.error`, said in the log) does not replace one that measured: the
        table keeps what was measured, and the report the pass that measured it.
        """
        with self._lock:
            if counters.error is None or self._counters is None or self._counters.error is not None:
                self._counters, self._counters_alone = counters, alone
                self._join()

    def _join(self) -> None:
        """The table snapshots show: the profile (else the counters' own table) with the counters joined by name."""
        self._joined = with_counters(self._profile or self._counters_alone, self._counters)

    def on_neighbours(self, neighbours: Neighbours) -> None:
        """The live view of the GPU's other processes and the host's load (the neighbour watch's thread)."""
        with self._lock:
            self._neighbours = neighbours

    def set_call_neighbours(self, neighbours: Neighbours) -> None:
        """Who else used the GPU and the host over the run's calls: the report's `neighbours`."""
        with self._lock:
            self._call_neighbours = neighbours

    def set_pass_neighbours(self, profile: ProfileSummary, neighbours: Neighbours) -> None:
        """The newest pass's neighbours on its summary, if `profile` (the summary that pass set) is still current."""
        updated: ProfileSummary = replace(profile, neighbours=neighbours)
        with self._lock:
            if self._profile is profile:
                self._profile = updated
                self._join()

    def set_dispatch_samples(self, samples: dict[str, Any] | None) -> None:
        """The per-dispatch times of the profile passes so far (`compare.samples.dispatch_samples`)."""
        with self._lock:
            self._dispatch_samples = samples

    def samples(self) -> dict[str, Any]:
        """The call and dispatch samples a comparison needs: `calls.json`, and the report's `samples`."""
        with self._lock:
            kept, count = self._timer.kept(), self._timer.count
            dispatches = self._dispatch_samples
        return samples_block(call_samples(kept, count) if count else None, dispatches)

    def add_capture(self, capture: CaptureInfo) -> None:
        with self._lock:
            self._captures = (*self._captures, capture)

    def on_memory(self, sample: MemorySample) -> None:
        """A memory sample from the sampler thread: pools, device and host, and the peaks since the start."""
        with self._lock:
            self._memory = sample
            self._samples += 1
            self._peak_rss = max(self._peak_rss, sample.host_rss_bytes)
            total_live = 0
            for dev in sample.devices:
                live = sum(p.live_bytes for p in dev.pools)
                peak = max((p.peak_bytes for p in dev.pools), default=0)
                self._peak_live[dev.device_id] = max(self._peak_live.get(dev.device_id, 0), live, peak)
                total_live += live
            self._memory_history.append(total_live)
        self.publish()

    # -- publishing ---------------------------------------------------------------
    def publish(self, force: bool = False) -> None:
        """Build and hand out a snapshot, at most every PUBLISH_INTERVAL_S unless `force`."""
        now = time.monotonic()
        with self._lock:
            if not force and now - self._last_publish < PUBLISH_INTERVAL_S:
                return
            self._last_publish = now
            self._published += 1
            self._snapshot = self._build_snapshot()
            snapshot = self._snapshot
            # Queued under the lock, so samples.jsonl has them in publishing order.
            self._writer.on_snapshot(snapshot)
            subscribers = list(self._subscribers)
        for callback in subscribers:
            try:
                callback(snapshot)
            except Exception:  # a broken subscriber must not stop the run
                continue

    def _build_snapshot(self) -> RunSnapshot:
        return RunSnapshot(
            state=self._state,
            target=self._target,
            function=self._function,
            device=self._device,
            phases=self._phases,
            calls=self._timer.snapshot(),
            memory=self._memory,
            memory_history=tuple(self._memory_history),
            diagnostics=self._diagnostics,
            events=tuple(self._events)[-EVENTS_PUBLISHED:],
            error=self._error.message if self._error else None,
            error_exit_code=self._error.exit_code if self._error else None,
            result_types=self._result_types,
            device_ids=tuple(d.id for d in self._devices),
            session_dir=str(self._session_dir),
            profile=self._joined,
            profiling=self._profiling,
            enqueue=self._enqueue_timer.snapshot() if self._enqueue_timer is not None else None,
            exports=self._exports,
            transfers=self._transfers,
            device_names=self._device_names,
            captures=self._captures,
            renderdoc=self._renderdoc,
            seq=self._published,
            errors=self._errors,
            state_since=self._state_since,
            parameters=self._live_parameters(),
            segment=self._segment,
            neighbours=self._neighbours,
            counters_pass=self._counters,
            counting=self._counting,
        )

    def _live_parameters(self) -> ParameterLoad | None:
        load = self._parameters
        if load is None or load.done:
            return load
        return replace(load, seconds=time.monotonic() - self._parameters_started, timestamp=time.time())


def _compile_record(compiled: CompiledModule, f64: str | None = None) -> CompileRecord:
    return CompileRecord(
        vmfb=str(compiled.vmfb_path),
        flags=tuple(compiled.flags),
        cache_hit=compiled.cache_hit,
        cache_key=compiled.cache_key,
        log=str(compiled.log_path) if compiled.log_path else None,
        seconds=compiled.compile_s,
        f64=f64,
    )
