"""The OpenCL flow: run spec, context, build, buffers, and calls timed by their own events.

OpenCL runs share the session's thread, snapshots and call loop with IREE
runs; what differs lives here: the phases of a run spec, the time for the
enqueues to return beside the synced time, kernel times from every call's
profiling events (so no separate profile pass is needed), and the chain
demo's stage timings.
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from dataclasses import replace

from gputop.core.module.check import compare_outputs
from gputop.core.module.device_discovery import resolve_opencl_device
from gputop.core.profiling.breakdown import build_breakdown
from gputop.core.profiling.dispatches import summarize_events
from gputop.core.run.config import TargetKind
from gputop.core.run.flow import RunContext, Uncapturable, Uncountable, end_sampling, timed_teardown
from gputop.core.run.state import PUBLISH_INTERVAL_S
from gputop.core.runners.opencl_runner import OpenCLCall, OpenCLRun
from gputop.core.runners.opencl_spec import expected_output, load_spec
from gputop.core.watch.memory_sampler import MemorySampler

__all__ = ["OpenCLFlow"]

CALLS_KEPT = 200  # the kernel table covers the newest calls
BREAKDOWN_CALLS = 50  # the call breakdown, the newest of them
BREAKDOWN_SOURCE = "OpenCL event queued/submit/start/end times and the host's enqueue and finish"
BREAKDOWN_FIT = "device clock aligned per call to its first enqueue (error within that enqueue's host time)"


class OpenCLFlow(Uncapturable, Uncountable):
    """An OpenCL run spec on one OpenCL device."""

    kind = "opencl"

    def __init__(self, ctx: RunContext) -> None:
        self._ctx = ctx
        self._runner: OpenCLRun | None = None
        self._sampler: MemorySampler | None = None
        self._calls: deque[tuple[OpenCLCall, float]] = deque(maxlen=CALLS_KEPT)
        self._first: tuple[OpenCLCall, float] | None = None
        self._table_at = 0.0

    @property
    def runner(self) -> OpenCLRun:
        if self._runner is None:
            raise RuntimeError("the run spec is not loaded")
        return self._runner

    def open(self) -> None:
        """Phases of an OpenCL run spec: read, context, build, buffers, first call."""
        ctx = self._ctx
        state = ctx.state
        target = ctx.config.target_info
        assert target.path is not None
        state.lifecycle.enter("loading")
        started = time.perf_counter()
        spec = load_spec(target.path)
        state.lifecycle.phase(load_s=time.perf_counter() - started)
        device = resolve_opencl_device(ctx.config.device)
        state.devices.set([device])
        state.module.set_function(
            " -> ".join(k.name for k in spec.kernels),
            tuple(
                f"{'x'.join(map(str, b.shape))}x{b.dtype}"
                for b in spec.buffers
                if spec.check and b.name == spec.check.output
            ),
        )
        state.calls.time_enqueues()
        state.log.add("info", f"device {device.id}: {device.name}")
        runner = self._runner = OpenCLRun(device, spec)
        started = time.perf_counter()
        runner.open()
        state.lifecycle.phase(context_s=time.perf_counter() - started)
        state.lifecycle.enter("compiling")
        started = time.perf_counter()
        runner.build(ctx.session_dir / "opencl-build.log")
        state.lifecycle.phase(compile_s=time.perf_counter() - started)
        state.log.add("info", f"built {spec.source_name} for {device.id}")
        state.lifecycle.enter("loading")
        started = time.perf_counter()
        runner.create_buffers()
        state.lifecycle.phase(parameters_s=time.perf_counter() - started)
        self._sampler = MemorySampler([device], runner.pool_statistics, state.memory.add, ctx.config.sample_interval_s)
        self._sampler.start()
        started = time.perf_counter()
        first = runner.call()
        state.lifecycle.phase(first_call_s=time.perf_counter() - started)
        # The first call (program warm-up) stands in for the kernel table until steady calls arrive.
        self._first = (first, time.perf_counter() - started)
        self._publish_kernels()
        if spec.check is not None:
            output = runner.read_buffer(spec.check.output)
            state.outcome.set_tensors(outputs=[output])
            check = compare_outputs(
                [output], [expected_output(spec, runner.initial)], rtol=spec.check.rtol, atol=spec.check.atol,
                reference=f"check.expect {spec.check.expect!r}", given_by="spec",
            )  # fmt: skip
            state.outcome.record_check(check)
        state.outcome.set_tensors(inputs=[runner.initial[b.name] for b in spec.buffers])
        if target.kind is TargetKind.OPENCL_DEMO:
            stages = runner.stage_timings()
            state.outcome.set_stages(stages)
            state.log.add(
                "info",
                f"A alone {stages.a_synced_ms:.2f} ms, B alone {stages.b_synced_ms:.2f} ms, "
                f"A then B {stages.a_then_b_synced_ms:.2f} ms (synced once); unsynced A 'takes' "
                f"{stages.a_enqueue_only_ms:.3f} ms and B then 'takes' {stages.b_after_unsynced_a_ms:.2f} ms",
            )

    def calls(self, limit: int) -> int:
        started = time.perf_counter()
        call = self.runner.call()
        synced = time.perf_counter() - started
        self._calls.append((call, synced))
        self._ctx.state.calls.add(synced, enqueue_s=call.enqueue_s)
        if time.monotonic() - self._table_at >= PUBLISH_INTERVAL_S:  # at the rate snapshots go out, not per call
            self._publish_kernels()
        return 1

    def _publish_kernels(self) -> None:
        """The kernel table over the recent calls (their events come with every call)."""
        self._table_at = time.monotonic()
        calls = list(self._calls) or ([self._first] if self._first else [])
        if not calls:
            return
        events = [e for call, _ in calls for e in call.events]
        wall = statistics.fmean(s for _, s in calls) * 1e3
        summary = summarize_events(
            events, calls=len(calls), source="opencl", device_id=self.runner.device_info.id, call_wall_ms=wall
        )
        records = [call.records for call, _ in calls[-BREAKDOWN_CALLS:] if call.records is not None]
        breakdown = build_breakdown(records, source=BREAKDOWN_SOURCE, fit=BREAKDOWN_FIT)
        self._ctx.state.profile.set_profile(replace(summary, call_breakdown=breakdown))

    def profile(self, calls: int, level: str = "default") -> None:
        """Never asked for (`why_no_profile`): every call is already timed by its events."""

    def close(self) -> None:
        if self._calls:
            self._publish_kernels()  # the table covers the last calls too
        end_sampling(self._sampler, self._ctx.state)
        if self._runner is not None:
            timed_teardown(self._runner.close, self._ctx.state)
