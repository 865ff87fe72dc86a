"""A `Session` owns one run: compile, load, call in a loop, sample, tear down.

The session runs its work on a background thread and tells subscribers what
is happening by handing them immutable `RunSnapshot`s. The command line waits
for it to finish; the TUI subscribes and keeps drawing while it runs. Pause,
resume and stop are `threading.Event`s, so control never waits on a call in
flight, and every failure ends as a snapshot in state `error` carrying a
one-line message and gputop's exit code, never as an exception on the thread.
"""

from __future__ import annotations

import contextlib
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from gputop.core import demos, session_capture, session_opencl, session_profile, session_tool
from gputop.core.affinity import affinity_flags, analyse
from gputop.core.check import DEFAULT_ATOL, DEFAULT_RTOL, compare_outputs, load_reference
from gputop.core.compile import CompiledModule, compile_module
from gputop.core.devices import resolve_device
from gputop.core.errors import GputopError, Interrupted, RuntimeFailure, UsageError
from gputop.core.inputs import DEFAULT_SEED, make_inputs
from gputop.core.memory import MemorySampler
from gputop.core.onnx_import import COMPILE_FLAGS as ONNX_COMPILE_FLAGS
from gputop.core.onnx_import import OPSET, graph_signature, import_onnx
from gputop.core.opencl_runner import OpenCLCall, OpenCLRun, StageTimings
from gputop.core.paths import new_session_dir
from gputop.core.profiles import DispatchEvent
from gputop.core.record import SessionRecord
from gputop.core.records import (
    CallStats,
    CaptureInfo,
    DeviceInfo,
    Diagnostic,
    Event,
    ExportAffinity,
    MemorySample,
    OutputCheck,
    Phases,
    ProfileSummary,
    RunSnapshot,
    TensorSummary,
    Transfer,
)
from gputop.core.renderdoc import (
    CaptureVerifier,
    RenderDoc,
)
from gputop.core.stats import CallTimer
from gputop.core.targets import device_names

Subscriber = Callable[[RunSnapshot], None]
PUBLISH_INTERVAL_S = 0.1  # at most 10 snapshots a second from calls and samples
MEMORY_HISTORY = 120


@dataclass(frozen=True)
class RunConfig:
    """What to run and how; `iterations=None` calls until stopped (the TUI)."""

    target: str = "demo:mlp"
    device: str | None = None
    iterations: int | None = 10
    function: str | None = None
    inputs: tuple[str, ...] = ()
    params: tuple[Path, ...] = ()
    seed: int = DEFAULT_SEED
    sample_interval_s: float = 0.1
    extra_compile_flags: tuple[str, ...] = ()
    target_flags: tuple[str, ...] | None = None
    session_dir: Path | None = None
    use_cache: bool = True
    check: bool = True
    checks: tuple[Path, ...] = ()
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    profile: bool = False  # one profile pass after the steady calls (gputop run --profile)
    profile_calls: int = 10  # calls in a pass asked for while running (the TUI's p)
    profile_every_s: float | None = None  # keep profiling periodically, merging passes
    devices: tuple[str, ...] = ()  # --devices D1,D2: one named target device each (device_a, device_b, ...)
    renderdoc: str = "auto"  # auto | on | off: load RenderDoc for Vulkan runs
    capture_calls: int = 0  # gputop run --capture N: capture N calls after the first
    record_every_s: float = 0.0  # samples.jsonl: every snapshot (0), or one per period plus every change


@dataclass
class _Outcome:
    compiled: CompiledModule | None = None
    inputs: list[np.ndarray] = field(default_factory=list)
    outputs: list[np.ndarray] = field(default_factory=list)
    check: OutputCheck | None = None
    parameter_mode: str | None = None
    stages: StageTimings | None = None


class Session:
    """One run on one or more devices, driven by a background thread."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.session_dir = config.session_dir or new_session_dir(label=_label(config.target))
        self.session_dir.mkdir(parents=True, exist_ok=True)
        self.record = SessionRecord(self.session_dir, config, every_s=config.record_every_s)
        self.report: dict[str, Any] | None = None  # report.json's content, once the run has ended
        self._published = 0
        self._interrupt_code: int | None = None
        self._lock = threading.RLock()
        self._subscribers: list[Subscriber] = []
        self._stop = threading.Event()
        self._running = threading.Event()  # cleared while paused
        self._running.set()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._state = "idle"
        self._device: DeviceInfo | None = None
        self._devices: list[DeviceInfo] = []
        self._function: str | None = config.function
        self._result_types: tuple[str, ...] = ()
        self._phases = Phases()
        self._timer = CallTimer()
        self._memory: MemorySample | None = None
        self._memory_history: deque[int] = deque(maxlen=MEMORY_HISTORY)
        self._peak_live: dict[str, int] = {}
        self._peak_rss = 0
        self._samples = 0
        self._diagnostics: tuple[Diagnostic, ...] = ()
        self._events: deque[Event] = deque(maxlen=200)
        self._seq = 0
        self._errors = 0
        self._imported_parameters: Path | None = None  # an ONNX model's weights, moved to an .irpa
        self._state_since: float | None = None
        self._error: GputopError | None = None
        self._last_publish = 0.0
        self._profile_request = threading.Event()
        self._profile: ProfileSummary | None = None
        self._profiling = False
        self._profile_events: deque[DispatchEvent] = deque(maxlen=100_000)
        self._profile_calls = 0
        self._input_files: list[str] = []
        self._vmfb: Path | None = None
        self._exports: tuple[ExportAffinity, ...] = ()
        self._transfers: tuple[Transfer, ...] = ()
        self._device_names: tuple[tuple[str, str], ...] = ()
        self._renderdoc: RenderDoc | None = None
        self._verifier: CaptureVerifier | None = None
        self._renderdoc_status: str | None = None
        self._capture_request = 0
        self._captures: tuple[CaptureInfo, ...] = ()
        self._enqueue_timer = CallTimer()
        self._opencl_calls: deque[tuple[OpenCLCall, float]] = deque(maxlen=200)
        self._opencl_first: tuple[OpenCLCall, float] | None = None
        self._snapshot = self._build_snapshot()
        self.outcome = _Outcome()

    # -- control ------------------------------------------------------------
    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call `callback` with every new snapshot; returns an unsubscribe function."""
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("a session runs once")
        self._thread = threading.Thread(target=self._run, name="gputop-session", daemon=True)
        self._thread.start()

    def pause(self) -> None:
        if self._state == "running":
            self._running.clear()
            self._set_state("paused")

    def resume(self) -> None:
        if self._state == "paused":
            self._running.set()
            self._set_state("running")

    def request_profile(self) -> None:
        """Take a profile pass between calls, as soon as the call in flight is done."""
        self._profile_request.set()

    @property
    def profile(self) -> ProfileSummary | None:
        return self._profile

    def stop(self, exit_code: int | None = None) -> None:
        """Ask the run to end after the call in flight; teardown still runs.

        `exit_code` (130 or 143) says a signal ended it: the record then says
        `interrupted` with that code instead of `stopped`.
        """
        if exit_code is not None and self._interrupt_code is None:
            self._interrupt_code = exit_code
        self._stop.set()
        self._running.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    @property
    def snapshot(self) -> RunSnapshot:
        with self._lock:
            return self._snapshot

    @property
    def interrupt_code(self) -> int | None:
        return self._interrupt_code

    @property
    def error(self) -> GputopError | None:
        return self._error

    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def peak_live_bytes(self) -> dict[str, int]:
        with self._lock:
            return dict(self._peak_live)

    @property
    def peak_rss_bytes(self) -> int:
        return self._peak_rss

    @property
    def memory_samples(self) -> int:
        return self._samples

    # -- the run ------------------------------------------------------------
    def _run(self) -> None:
        from gputop.core.iree_runner import IreeModuleRun

        runner: IreeModuleRun | OpenCLRun | None = None
        sampler: MemorySampler | None = None
        try:
            if demos.is_opencl_target(self.config.target):
                runner, sampler = self._start_opencl()
                self._set_state("running")
                self._call_loop(runner)
                self._set_state("finished" if not self._stop.is_set() else "stopped")
                return
            demo = demos.demo_for(self.config.target) if demos.is_demo(self.config.target) else None
            self._set_state("compiling")
            self._prepare_renderdoc()
            if self.config.devices:
                devices = _distinct([resolve_device(spec) for spec in self.config.devices])
            else:
                devices = _distinct([resolve_device(self.config.device)] * (demo.devices if demo else 1))
            device = devices[0]
            with self._lock:
                self._device, self._devices = device, devices
                if len(devices) > 1:
                    self._device_names = tuple(zip(device_names(len(devices)), (d.id for d in devices), strict=True))
            self.record.update(device=device, devices=devices)
            for name, info in zip(device_names(len(devices)), devices, strict=True):
                label = f"{name} = " if len(devices) > 1 else ""
                self._event("info", f"device {label}{info.id}: {info.name}")
            vmfb = self._compile(devices, demo)
            self._vmfb = vmfb
            if len(devices) > 1 and not all(d.backend.startswith("local") for d in devices):
                sampler = self._run_through_tool(devices, vmfb, demo)
                return

            self._set_state("loading")
            started = time.perf_counter()
            runner = IreeModuleRun(devices)
            runner.open_devices()
            runner.load_module(vmfb)
            self._phase(load_s=time.perf_counter() - started)

            sampler = MemorySampler(
                devices,
                runner.pool_statistics,
                self._on_memory,
                self.config.sample_interval_s,
            )
            sampler.start()

            started = time.perf_counter()
            runner.load_parameters(self.parameter_files())
            self.outcome.parameter_mode = runner.parameter_mode
            self._phase(parameters_s=time.perf_counter() - started)
            if runner.parameter_mode:
                self._event("info", f"parameters loaded by {runner.parameter_mode}")

            started = time.perf_counter()
            signature = runner.create_context(self.config.function or (demo.function if demo else None))
            self._phase(context_s=time.perf_counter() - started)
            with self._lock:
                self._function = signature.name
                self._result_types = tuple(str(t) for t in signature.outputs)

            if self.config.target.endswith(".onnx") and not signature.declared and not self.config.inputs:
                # Imported models carry no declaration: their graph says what they take.
                signature = graph_signature(Path(self.config.target), signature.name)
                with self._lock:
                    self._result_types = tuple(str(t) for t in signature.outputs)
            inputs = make_inputs(signature, list(self.config.inputs), self.config.seed)
            self.outcome.inputs = inputs
            runner.upload(inputs)
            self._check_stop()

            started = time.perf_counter()
            results = runner.call()
            outputs = runner.read_back(results)
            del results  # device arrays must not outlive the runner's teardown
            self._phase(first_call_s=time.perf_counter() - started)
            self.outcome.outputs = outputs
            self._record_check(self._check(outputs, inputs, demo))
            self._set_state("running")
            if self.config.capture_calls:
                self._capture_request = self.config.capture_calls
            self._call_loop(runner)
            if self.config.profile and not self._stop.is_set():
                self._take_profile(runner, max(self.config.iterations or 1, 1))
            self._set_state("finished" if not self._stop.is_set() else "stopped")
        except GputopError as exc:
            self._fail(exc)
        except Exception as exc:  # anything else is a gputop bug: keep the traceback
            log = self.session_dir / "session.log"
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(traceback.format_exc())
            self._fail(RuntimeFailure(f"internal error: {exc}", log_path=str(log)))
        finally:
            if self._verifier is not None:
                self._verifier.close()
            if sampler is not None:
                sampler.stop()
                with contextlib.suppress(Exception):  # a last sample is nice, not needed
                    self._on_memory(sampler.sample())
            if runner is not None:
                started = time.perf_counter()
                runner.close()
                self._phase(teardown_s=time.perf_counter() - started)
            self._publish(force=True)
            self._finish_record()
            self._done.set()

    def _compile(self, devices: list[DeviceInfo], demo: demos.Demo | None) -> Path:
        target = self.config.target
        device = devices[0]
        if target.endswith(".vmfb"):
            self._phase(compile_s=0.0)
            self._event("info", f"{target}: precompiled module, no compile")
            return Path(target)
        if any(d.compile_target is None for d in devices):
            raise UsageError(f"{device.id} has no IREE compile target")
        if len(devices) > 1:
            flags = affinity_flags([d.id for d in devices], [d.compile_target or () for d in devices])
        else:
            flags = self.config.target_flags or device.compile_target or ()
        flags = tuple(flags) + self.config.extra_compile_flags
        if demo is not None:
            source_path, source_bytes = Path(f"{demo.name}.mlir"), demo.source()
        elif target.endswith(".onnx"):
            self._set_state("importing")
            self._event("info", f"importing {target} (ONNX, opset {OPSET})")
            model = import_onnx(Path(target), self.session_dir, cancel=self._stop)
            self._phase(import_s=model.seconds)
            how = "import cache hit" if model.cache_hit else f"imported in {model.seconds:.2f} s"
            self._event("info", f"{how}: {model.mlir}")
            if model.parameters is not None:
                self._imported_parameters = model.parameters
                self._event("info", f"weights in a parameter archive, loaded by the parameter path: {model.parameters}")
            source_path, source_bytes = model.mlir, None
            if not any("const-eval" in flag for flag in flags):
                flags += ONNX_COMPILE_FLAGS
            self._set_state("compiling")
        else:
            source_path, source_bytes = Path(target), None
            if source_path.suffix not in (".mlir", ".mlirbc"):
                raise UsageError(f"{target}: expected a .mlir, .onnx or .vmfb file or a demo:NAME")
        self._event("info", f"compiling {target} for {device.id}")
        try:
            compiled = compile_module(
                source_path,
                flags,
                log_dir=self.session_dir,
                cancel=self._stop,
                use_cache=self.config.use_cache,
                source_bytes=source_bytes,
            )
        except GputopError as exc:
            with self._lock:
                self._diagnostics = tuple(getattr(exc, "diagnostics", ()))
            raise
        self.outcome.compiled = compiled
        self.record.update(
            compile={
                "vmfb": str(compiled.vmfb_path),
                "cache_key": compiled.cache_key,
                "cache_hit": compiled.cache_hit,
                "flags": list(compiled.flags),
                "log": str(compiled.log_path) if compiled.log_path else None,
                "seconds": compiled.compile_s,
            }
        )
        with self._lock:
            self._diagnostics = compiled.diagnostics
        if len(devices) > 1:
            records, transfers = analyse(
                source_path, flags, self.session_dir / "affinity", source_bytes=source_bytes, cancel=self._stop
            )
            with self._lock:
                self._exports, self._transfers = tuple(records), tuple(transfers)
            for record in records:
                if record.flag == "hidden_transfer":
                    self._event(
                        "warning",
                        f"{record.function} result {record.index} is produced on {record.producer_affinity} but "
                        f"exported on {record.export_affinity}: a hidden transfer of {record.transfer_bytes} bytes",
                    )
        self._phase(compile_s=compiled.compile_s)
        if compiled.workaround:
            self._event("warning", compiled.workaround)
        how = "cache hit" if compiled.cache_hit else f"compiled in {compiled.compile_s:.2f} s"
        self._event("info", f"{how}: {compiled.vmfb_path}")
        return compiled.vmfb_path

    def _check(
        self, outputs: list[np.ndarray], inputs: list[np.ndarray], demo: demos.Demo | None
    ) -> OutputCheck | None:
        """Compare with --check files, else with the demo's own reference (random inputs only)."""
        config = self.config
        if config.checks:
            expected = [load_reference(path) for path in config.checks]
            names = ", ".join(path.name for path in config.checks)
            return compare_outputs(outputs, expected, rtol=config.rtol, atol=config.atol, reference=names)
        if demo is not None and config.check and not config.inputs:
            return compare_outputs(
                outputs,
                demo.reference(inputs),
                rtol=demo.rtol,
                atol=demo.atol,
                reference=f"the NumPy reference of {demo.target}",
            )
        return None

    def _record_check(self, check: OutputCheck | None) -> None:
        """Keep the outcome of an output check and say it in the log, one line."""
        self.outcome.check = check
        if check is not None:
            verdict = "match" if check.passed else "DO NOT match"
            level = "info" if check.passed else "error"
            self._event(level, f"outputs {verdict} {check.reference} (max abs err {check.max_abs_err:.3g})")

    def _call_loop(self, runner: Any) -> None:
        remaining = self.config.iterations
        every = self.config.profile_every_s
        next_profile = time.monotonic() + every if every else None
        while remaining is None or remaining > 0:
            if self._stop.is_set():
                return
            if self._capture_request:
                calls, self._capture_request = self._capture_request, 0
                self._take_capture(runner, calls)
                if remaining is not None:
                    remaining = max(0, remaining - calls)
                continue
            if self._profile_request.is_set() or (next_profile is not None and time.monotonic() >= next_profile):
                self._profile_request.clear()
                self._take_profile(runner, self.config.profile_calls)
                if every:
                    next_profile = time.monotonic() + every
                continue
            if not self._running.is_set():
                # Paused: wake for resume, stop or a profile request.
                self._running.wait(0.1)
                continue
            started = time.perf_counter()
            runner.call()
            self._timer.add(time.perf_counter() - started)
            if isinstance(runner, OpenCLRun) and runner.last_call is not None:
                self._on_opencl_call(runner.last_call, time.perf_counter() - started)
            if remaining is not None:
                remaining -= 1
            self._publish()

    def request_capture(self, calls: int = 1) -> str | None:
        """Capture the next `calls` calls with RenderDoc; returns why not, or None."""
        if self._renderdoc is None:
            return self._renderdoc_status or "RenderDoc is not loaded for this run"
        self._capture_request = max(1, calls)
        return None

    def _prepare_renderdoc(self) -> None:
        return session_capture.prepare_renderdoc(self)

    def _take_capture(self, runner: Any, calls: int) -> None:
        return session_capture.take_capture(self, runner, calls)

    def _take_profile(self, runner: Any, calls: int) -> None:
        return session_profile.take_profile(self, runner, calls)

    def _start_opencl(self) -> tuple[OpenCLRun, MemorySampler]:
        return session_opencl.start_opencl(self)

    def _on_opencl_call(self, call: OpenCLCall, synced_s: float, count: bool = True) -> None:
        return session_opencl.on_opencl_call(self, call, synced_s, count)

    def _opencl_profile(self) -> ProfileSummary | None:
        return session_opencl.opencl_profile(self)

    def _run_through_tool(self, devices: list[DeviceInfo], vmfb: Path, demo: demos.Demo | None) -> MemorySampler:
        return session_tool.run_through_tool(self, devices, vmfb, demo)

    def _save_inputs(self) -> list[str]:
        """The session's inputs as .npy files for the profiling tool (written once)."""
        if not self._input_files:
            folder = self.session_dir / "inputs"
            folder.mkdir(exist_ok=True)
            for index, array in enumerate(self.outcome.inputs):
                path = folder / f"input{index}.npy"
                np.save(path, array)
                self._input_files.append(f"@{path}")
        return self._input_files

    def parameter_files(self) -> list[Path]:
        """--params files, plus the archive an ONNX import moved the model's weights to."""
        extra = [self._imported_parameters] if self._imported_parameters else []
        return [*self.config.params, *extra]

    def exit_code(self) -> int:
        """The code this run ends with: signal, error, failed check, or 0."""
        from gputop.core.errors import EXIT_CHECK

        if self._interrupt_code is not None:
            return self._interrupt_code
        if self._error is not None:
            return self._error.exit_code
        if self.outcome.check is not None and not self.outcome.check.passed:
            return EXIT_CHECK
        return 0

    def _finish_record(self) -> None:
        """Write report.json and the manifest's ending; never lets the run's end fail."""
        from gputop.core.report import build_report

        report: dict[str, Any] | None = None
        try:
            report = build_report(self)
        except Exception:  # a bug in the report must not lose the samples: keep the traceback
            with open(self.session_dir / "session.log", "a", encoding="utf-8") as handle:
                handle.write(traceback.format_exc())
        state = "interrupted" if self._interrupt_code is not None else self.snapshot.state
        with self._lock:
            published = self._published
        self.report = self.record.close(
            report,
            state=state,
            exit_code=self.exit_code(),
            published=published,
            device=self._device,  # OpenCL runs learn their device outside _run's IREE path
            devices=self._devices,
        )

    # -- state and publishing -----------------------------------------------
    def _check_stop(self) -> None:
        if self._stop.is_set():
            raise Interrupted("stopped")

    def _fail(self, exc: GputopError) -> None:
        if isinstance(exc, Interrupted) and self._stop.is_set():
            self._set_state("stopped")
            return
        self._error = exc
        self._event("error", str(exc), exc.log_path)
        self._set_state("error")

    def _phase(self, **values: float) -> None:
        with self._lock:
            self._phases = replace(self._phases, **values)
        self._publish(force=True)

    def _set_state(self, state: str) -> None:
        with self._lock:
            if state != self._state:
                self._state_since = time.time()
            self._state = state
        self._publish(force=True)
        if state not in ("finished", "stopped", "error"):  # the ending is written by _finish_record
            self.record.update(state=state)

    def _event(self, level: str, message: str, log_path: str | None = None) -> None:
        with self._lock:
            self._seq += 1
            self._events.append(Event(self._seq, level, message, log_path))
            if level == "error":
                self._errors += 1
        self._publish(force=True)

    def _on_memory(self, sample: MemorySample) -> None:
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
        self._publish()

    def _build_snapshot(self) -> RunSnapshot:
        return RunSnapshot(
            state=self._state,
            target=self.config.target,
            function=self._function,
            device=self._device,
            phases=self._phases,
            calls=self._timer.snapshot() if self._timer else CallStats(),
            memory=self._memory,
            memory_history=tuple(self._memory_history),
            diagnostics=self._diagnostics,
            events=tuple(self._events)[-50:],
            error=self._error.message if self._error else None,
            error_exit_code=self._error.exit_code if self._error else None,
            result_types=self._result_types,
            device_ids=tuple(d.id for d in self._devices),
            session_dir=str(self.session_dir),
            profile=self._opencl_profile() if self._opencl_first else self._profile,
            profiling=self._profiling,
            enqueue=self._enqueue_timer.snapshot() if self._opencl_first else None,
            exports=self._exports,
            transfers=self._transfers,
            device_names=self._device_names,
            captures=self._captures,
            renderdoc=self._renderdoc_status,
            seq=self._published,
            errors=self._errors,
            state_since=self._state_since,
        )

    def _publish(self, force: bool = False) -> None:
        now = time.monotonic()
        with self._lock:
            if not force and now - self._last_publish < PUBLISH_INTERVAL_S:
                return
            self._last_publish = now
            self._published += 1
            self._snapshot = self._build_snapshot()
            snapshot = self._snapshot
            # Queued under the lock, so samples.jsonl has them in publishing order.
            self.record.on_snapshot(snapshot)
            subscribers = list(self._subscribers)
        for callback in subscribers:
            try:
                callback(snapshot)
            except Exception:  # a broken subscriber must not stop the run
                continue


def _label(target: str) -> str:
    return Path(target.replace(":", "-")).stem or "run"


def _distinct(devices: list[DeviceInfo]) -> list[DeviceInfo]:
    """Give repeated devices (two local-task devices) distinct ids for memory rows."""
    ids = [d.id for d in devices]
    if len(set(ids)) == len(ids):
        return devices
    return [replace(d, id=f"{d.id}#{i}") if ids.count(d.id) > 1 else d for i, d in enumerate(devices)]


def summarize(arrays: list[np.ndarray]) -> list[TensorSummary]:
    """Shape, dtype and a few statistics of each array, for reports."""
    rows = []
    for index, array in enumerate(arrays):
        numeric = array.size > 0 and np.issubdtype(array.dtype, np.number)
        rows.append(
            TensorSummary(
                index=index,
                shape=tuple(int(d) for d in array.shape),
                dtype=str(array.dtype),
                mean=float(array.mean()) if numeric else None,
                min=float(array.min()) if numeric else None,
                max=float(array.max()) if numeric else None,
            )
        )
    return rows
