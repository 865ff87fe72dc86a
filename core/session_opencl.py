"""A session's OpenCL flow: run spec, context, build, buffers, event-timed calls.

OpenCL runs share the Session's thread, snapshots and call loop with IREE
runs; what differs (phases, the enqueue-vs-synced timing, kernel times from
every call's events, the chain demo's stage timings) lives here.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING

from gputop.core import demos
from gputop.core.check import compare_outputs
from gputop.core.devices import resolve_opencl_device
from gputop.core.memory import MemorySampler
from gputop.core.opencl_runner import OpenCLCall, OpenCLRun
from gputop.core.opencl_spec import expected_output, load_spec
from gputop.core.profiles import summarize_events
from gputop.core.records import ProfileSummary

if TYPE_CHECKING:
    from gputop.core.session import Session


def start_opencl(session: Session) -> tuple[OpenCLRun, MemorySampler]:
    """Phases of an OpenCL run spec: read, context, build, buffers, first call."""
    target = session.config.target
    path = demos.opencl_demo_spec(target) if demos.is_demo(target) else Path(target)
    session._set_state("loading")
    started = time.perf_counter()
    spec = load_spec(path)
    session._phase(load_s=time.perf_counter() - started)
    device = resolve_opencl_device(session.config.device)
    with session._lock:
        session._device, session._devices = device, [device]
        session._function = " -> ".join(k.name for k in spec.kernels)
        session._result_types = tuple(
            f"{'x'.join(map(str, b.shape))}x{b.dtype}"
            for b in spec.buffers
            if spec.check and b.name == spec.check.output
        )
    session._event("info", f"device {device.id}: {device.name}")
    runner = OpenCLRun(device, spec)
    started = time.perf_counter()
    runner.open()
    session._phase(context_s=time.perf_counter() - started)
    session._set_state("compiling")
    started = time.perf_counter()
    runner.build(session.session_dir / "opencl-build.log")
    session._phase(compile_s=time.perf_counter() - started)
    session._event("info", f"built {spec.source_name} for {device.id}")
    session._set_state("loading")
    started = time.perf_counter()
    runner.create_buffers()
    session._phase(parameters_s=time.perf_counter() - started)
    sampler = MemorySampler([device], runner.pool_statistics, session._on_memory, session.config.sample_interval_s)
    sampler.start()
    started = time.perf_counter()
    first = runner.call()
    session._phase(first_call_s=time.perf_counter() - started)
    session._on_opencl_call(first, time.perf_counter() - started, count=False)
    if spec.check is not None:
        output = runner.read_buffer(spec.check.output)
        session.outcome.outputs = [output]
        check = compare_outputs(
            [output], [expected_output(spec, runner.initial)], rtol=spec.check.rtol, atol=spec.check.atol,
            reference=f"check.expect {spec.check.expect!r}",
        )  # fmt: skip
        session._record_check(check)
    session.outcome.inputs = [runner.initial[b.name] for b in spec.buffers]
    if demos.is_demo(target):
        stages = runner.stage_timings()
        session.outcome.stages = stages
        session._event(
            "info",
            f"A alone {stages.a_synced_ms:.2f} ms, B alone {stages.b_synced_ms:.2f} ms, "
            f"A then B {stages.a_then_b_synced_ms:.2f} ms (synced once); unsynced A 'takes' "
            f"{stages.a_enqueue_only_ms:.3f} ms and B then 'takes' {stages.b_after_unsynced_a_ms:.2f} ms",
        )
    return runner, sampler


def on_opencl_call(session: Session, call: OpenCLCall, synced_s: float, count: bool = True) -> None:
    with session._lock:
        if not count:
            # The first call (program warm-up) stands in until steady calls arrive.
            session._opencl_first = (call, synced_s)
            return
        session._enqueue_timer.add(call.enqueue_s)
        session._opencl_calls.append((call, synced_s))


def opencl_profile(session: Session) -> ProfileSummary | None:
    """Kernel table over the recent OpenCL calls (events come with every call)."""
    calls = list(session._opencl_calls) or ([session._opencl_first] if session._opencl_first else [])
    if not calls:
        return None
    events = [e for call, _ in calls for e in call.events]
    wall = statistics.fmean(s for _, s in calls) * 1e3
    return summarize_events(
        events, calls=len(calls), source="opencl", device_id=session._devices[0].id, call_wall_ms=wall
    )
