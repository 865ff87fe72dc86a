"""The in-process IREE flow: load, parameters, context, inputs, calls, profile passes and captures.

Single-device modules, and multi-device modules on local devices, run through
IREE's Python runtime in this process (`IreeModuleRun`). This flow times each
phase, samples memory while it runs, checks the first call's outputs against
their reference, and hands profile passes and RenderDoc captures the same
runner the steady calls use. A counters pass (CUDA) gets the module and the
inputs the profiling tools get, and runs beside the calls in another process.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from gputop.core.errors import Interrupted, UsageError
from gputop.core.module import demos
from gputop.core.module.check import compare_outputs, load_reference
from gputop.core.module.contents import vmfb_contents
from gputop.core.module.inputs import make_inputs, tool_input_args
from gputop.core.module.results import one_device_exports
from gputop.core.module.signature import FunctionSignature
from gputop.core.onnx.onnx_import import graph_signature, imported_interface, interface_changed, random_ops_in
from gputop.core.params.placement import check_placement, device_room
from gputop.core.records.checks import OutputCheck
from gputop.core.records.memory import ModuleBytes
from gputop.core.run.capture import RenderDocHook, timed
from gputop.core.run.config import TargetKind
from gputop.core.run.counters_pass import CountersRunner
from gputop.core.run.flow import RunContext, end_sampling, timed_teardown
from gputop.core.run.prepare import PreparedModule
from gputop.core.run.profiling import ProfilePasses
from gputop.core.run.transfers import observe_exports
from gputop.core.runners.iree_runner import IreeModuleRun, parameter_mode_for
from gputop.core.units import fixed, gbps, human_bytes
from gputop.core.watch.memory_sampler import MemorySampler

__all__ = ["IreeFlow", "check_outputs", "save_inputs"]

CALL_BATCH_S = 0.02  # calls made back to back before their times go to the state and the controls are looked at
CALL_BATCH_MAX = 10000  # calls in one batch of an open-ended run (a 2 us call would take 20 ms)

COUNTERS_STOP_S = 15.0  # how long a closing flow waits for its counters pass to see the stop


def check_outputs(
    ctx: RunContext, outputs: list[np.ndarray], inputs: list[np.ndarray], demo: demos.Demo | None
) -> OutputCheck | None:
    """Compare with --check files, else with the demo's own reference (random inputs only)."""
    config = ctx.config
    if config.checks:
        expected = [load_reference(path) for path in config.checks]
        names = ", ".join(path.name for path in config.checks)
        check = compare_outputs(outputs, expected, rtol=config.rtol, atol=config.atol, reference=names)
        target = config.target_info
        if not check.passed and target.kind is TargetKind.ONNX and target.path is not None:
            drawn = random_ops_in(target.path)
            if drawn:
                ctx.state.log.add(
                    "warning",
                    f"the model draws random numbers ({', '.join(drawn)}): "
                    "its outputs are not expected to match a fixed reference",
                )
        return check
    if demo is not None and config.check and not config.inputs:
        return compare_outputs(
            outputs,
            demo.reference(inputs),
            rtol=demo.rtol,
            atol=demo.atol,
            reference=f"the NumPy reference of {demo.target}",
            given_by="demo",
        )
    return None


def save_inputs(ctx: RunContext, signature: FunctionSignature) -> list[str]:
    """The run's inputs as `--input=` arguments for IREE's shipped tools: tensors as .npy files, scalars as values."""
    return tool_input_args(signature, ctx.state.outcome.value.inputs, ctx.session_dir / "inputs")


class IreeFlow:
    """One IREE module on its devices, in this process."""

    kind = "iree"

    def __init__(self, ctx: RunContext, module: PreparedModule, renderdoc: RenderDocHook) -> None:
        self._ctx = ctx
        self._module = module
        self._renderdoc = renderdoc
        self._runner: IreeModuleRun | None = None
        self._sampler: MemorySampler | None = None
        self._passes = ProfilePasses(ctx, module.devices, module.vmfb, module.origin)
        self._counters = CountersRunner(ctx, module.devices[0], module.vmfb, self._passes.rate_alone)
        self._input_args: list[str] | None = None
        self._fallback_said: str | None = None

    @property
    def runner(self) -> IreeModuleRun:
        if self._runner is None:
            raise RuntimeError("the module is not loaded")
        return self._runner

    def parameter_files(self) -> list[Path]:
        """--params files, plus the archive an ONNX import moved the model's weights to."""
        extra = [self._module.imported_parameters] if self._module.imported_parameters else []
        return [*self._ctx.config.params, *extra]

    def open(self) -> None:
        ctx, module = self._ctx, self._module
        state = ctx.state
        demo = module.demo
        state.lifecycle.enter("loading")
        started = time.perf_counter()
        runner = self._runner = IreeModuleRun(module.devices)
        runner.open_devices()
        runner.load_module(module.vmfb)
        state.lifecycle.phase(load_s=time.perf_counter() - started)

        self._sampler = MemorySampler(
            module.devices, runner.pool_statistics, state.memory.add, ctx.config.sample_interval_s
        )
        self._sampler.start()

        allocated_before = runner.allocated_device_bytes()  # the weights' bytes, where an allocator takes them
        parameters_started = time.perf_counter()
        files = self.parameter_files()
        if files:
            self._prepare_parameters(files)
        parameters_s = time.perf_counter() - parameters_started
        state.lifecycle.phase(parameters_s=parameters_s)

        started = time.perf_counter()
        signature = runner.create_context(ctx.config.function or (demo.function if demo else None))
        context_s = time.perf_counter() - started
        state.lifecycle.phase(context_s=context_s)
        if files:
            self._parameters_loaded(parameters_s, context_s, context_started=started)
        state.memory.set_module_bytes(self._module_bytes(allocated_before))
        state.module.set_function(signature.name, tuple(str(t) for t in signature.outputs))

        target = ctx.config.target_info
        upgrade_note: str | None = None
        if target.kind is TargetKind.ONNX and not signature.declared:
            # Imported models carry no declaration: the graph as imported says what they take (and how many).
            assert target.path is not None
            imported = imported_interface(module.source_path) if module.source_path else None
            signature = graph_signature(
                target.path, signature.name, inputs_given=bool(ctx.config.inputs), imported=imported
            )
            state.module.set_result_types(tuple(str(t) for t in signature.outputs))
            upgrade_note = interface_changed(target.path, imported) if imported else None
            if upgrade_note:
                state.log.add("warning", upgrade_note)
        try:
            inputs = make_inputs(signature, list(ctx.config.inputs), ctx.config.seed)
        except UsageError as exc:
            if upgrade_note is None:
                raise
            raise UsageError(f"{exc.message} ({upgrade_note})") from None
        state.outcome.set_tensors(inputs=inputs)
        runner.upload(inputs)
        if ctx.controls.stopping:
            raise Interrupted("stopped")

        started = time.perf_counter()
        results = runner.call()
        outputs = runner.read_back(results)
        del results  # device arrays must not outlive the runner's teardown
        state.lifecycle.phase(first_call_s=time.perf_counter() - started)
        state.outcome.set_tensors(outputs=outputs)
        if len(module.devices) == 1:  # every result on the run's device; multi-device: the affinity analysis's
            exports = one_device_exports(runner.function_results(), module.devices[0].id, signature, outputs)
            state.devices.set_exports(exports, ())
        state.outcome.record_check(check_outputs(ctx, outputs, inputs, demo))
        observe_exports(ctx, module, signature)  # multi-device: the bytes one profiled call really moved

    def _prepare_parameters(self, files: list[Path]) -> None:
        """Read the archives' indexes, refuse what cannot be placed, and set up the chosen loader."""
        ctx, runner, state = self._ctx, self.runner, self._ctx.state
        started = time.monotonic()
        entries = runner.read_parameters(files)
        device = self._module.devices[0]
        mode = ctx.config.params_mode if ctx.config.params_mode != "auto" else parameter_mode_for(device)
        for warning in check_placement(entries, device, device_room(device, mode)):
            state.log.add("warning", warning)
        runner.load_parameters(
            files,
            mode=ctx.config.params_mode,
            on_progress=lambda done, _requested: state.parameters.progress(done),
            should_stop=lambda: ctx.controls.stopping,
        )
        self._say_fallback()
        state.outcome.set_parameter_files(files, runner.parameter_mode)
        total = sum(e.length for e in entries)
        assert runner.parameter_mode is not None
        state.parameters.begin(
            runner.parameter_mode, total, len(files), observed=runner.parameter_stream is not None, started=started
        )

    def _parameters_loaded(self, parameters_s: float, context_s: float, *, context_started: float) -> None:
        """The load's totals: exact from the streamed loader, with its stage times; for IREE's, context
        creation holds the load."""
        runner, state = self.runner, self._ctx.state
        stream = runner.parameter_stream
        self._say_fallback()  # the streamed loader may have given way while the context was made
        stages = None
        if stream is not None:
            loaded, seconds = stream.bytes_loaded, parameters_s + stream.seconds
            stages = stream.stage_times(context_started, context_started + context_s)
        else:
            loaded, seconds = sum(e.length for e in runner.parameter_entries), parameters_s + context_s
        mode = runner.parameter_mode
        if mode == "mmap" and self._module.devices[0].backend.startswith("local"):
            state.parameters.end(loaded, seconds, mode=mode, zero_copy=True)
            state.log.add("info", f"parameters mapped in place by mmap (zero copy): {human_bytes(loaded, 2)}")
            return
        state.parameters.end(loaded, seconds, mode=mode, stages=stages)
        rate = f", {gbps(loaded / seconds / 1e9)}" if seconds > 0 and loaded else ""
        state.log.add("info", f"parameters loaded by {mode}: {human_bytes(loaded, 2)} in {fixed(seconds, 2)} s{rate}")
        if stages is not None and stages.read_path_note:
            state.log.add("warning", stages.read_path_note)

    def _module_bytes(self, before: dict[str, tuple[int, int]]) -> tuple[ModuleBytes, ...]:
        """Each device's weights (the .vmfb's constants and the parameters), and how its allocator's allocated and
        peak bytes grew while the parameters and the context were made: whether the Memory pane's pools show them."""
        runner, devices = self.runner, self._module.devices
        contents = vmfb_contents(self._module.vmfb)
        parameters = sum(e.length for e in runner.parameter_entries)
        after = runner.allocated_device_bytes()
        rows = []
        for device in devices:
            grew = None
            if device.id in after and device.id in before:
                grew = tuple(now - then for now, then in zip(after[device.id], before[device.id], strict=True))
            rows.append(
                ModuleBytes(
                    device_id=device.id,
                    vmfb_bytes=contents.vmfb_bytes,
                    constant_bytes=contents.constant_bytes,
                    executable_bytes=contents.executable_bytes,
                    parameter_bytes=parameters,
                    loaded_bytes=grew[0] if grew else None,
                    loaded_peak_bytes=grew[1] if grew else None,
                    devices=len(devices),
                    reason=contents.reason,
                )
            )
        return tuple(rows)

    def _say_fallback(self) -> None:
        fallback = self.runner.parameter_fallback
        if fallback and fallback != self._fallback_said:
            self._fallback_said = fallback
            self._ctx.state.log.add("warning", fallback)

    def calls(self, limit: int) -> int:
        """Calls back to back for up to CALL_BATCH_S (and `limit` calls in a counted run), then their times.

        Between two calls only a clock read and an append run, as between the tool's: handing each call to
        the state (its lock, the timer's ring and histogram) between calls put 1.5% on a 0.36 ms call on an
        H200 over a bare loop of the same calls (bench/own_share_parts.py --bare). The call loop still looks
        at its controls (stop, pause, a pass) every CALL_BATCH_S.
        """
        cap = limit if self._ctx.config.iterations is not None else CALL_BATCH_MAX
        steady, clock = self.runner.steady_call, time.perf_counter
        walls: list[float] = []
        ends: list[float] = []
        first = clock()
        try:
            while len(walls) < cap:
                started = clock()
                steady()
                ended = clock()
                walls.append(ended - started)
                ends.append(ended)
                if ended - first >= CALL_BATCH_S:
                    break
        finally:  # a call that failed ends the run: the calls before it still count
            self._ctx.state.calls.add_batch(walls, ends)
        return len(walls)

    def profile(self, calls: int, level: str = "default") -> None:
        runner = self.runner
        self._passes.take(
            calls,
            function=self._ctx.state.module.function or runner.default_function(),
            input_files=self._tool_inputs(),
            call_once=runner.steady_call,
            level=level,
        )

    def count(self) -> None:
        runner = self.runner
        function = self._ctx.state.module.function or runner.default_function()
        self._counters.start(function, self._tool_inputs(), self.parameter_files())

    def counters_refusal(self) -> str | None:
        return self._counters.refusal

    def wait_counters(self, timeout: float | None = None) -> bool:
        return self._counters.wait(timeout)

    def _tool_inputs(self) -> list[str]:
        """The inputs for the profiling tool, written once per run."""
        if self._input_args is None:
            signature = self.runner.signature
            if signature is None:
                raise RuntimeError("the function's signature is not known yet")
            self._input_args = save_inputs(self._ctx, signature)
        return self._input_args

    def capture_ready(self) -> bool:
        return self._renderdoc.ready

    def capture(self, calls: int) -> int:
        return self._renderdoc.capture(timed(self.runner.steady_call), calls)

    def close(self) -> None:
        self._counters.wait(COUNTERS_STOP_S)  # the run is stopping: ncu is being ended with it
        end_sampling(self._sampler, self._ctx.state)
        if self._runner is not None:
            timed_teardown(self._runner.close, self._ctx.state)
