"""A session's multi-device GPU flow: calls through IREE's shipped tools.

See `tool_runner` for why two GPU devices cannot share one Python process in
IREE 3.13. The session still owns phases, checks, stats and snapshots.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from gputop.core import demos
from gputop.core.errors import UsageError
from gputop.core.inputs import make_inputs
from gputop.core.memory import MemorySampler
from gputop.core.records import DeviceInfo
from gputop.core.signature import signature_of
from gputop.core.tool_runner import BATCH, ToolModuleRun

if TYPE_CHECKING:
    from gputop.core.session import Session


def run_through_tool(session: Session, devices: list[DeviceInfo], vmfb: Path, demo: demos.Demo | None) -> MemorySampler:
    """Multi-device GPU modules: calls through IREE's shipped tools (see tool_runner)."""
    import iree.runtime as rt

    session._event("info", "multi-device GPU module: calls run through iree-run-module/iree-benchmark-module")
    session._set_state("loading")
    started = time.perf_counter()
    module = rt.VmModule.mmap(rt.VmInstance(), str(vmfb))
    exported = [n for n in module.function_names if not n.startswith("__")]
    name = session.config.function or (demo.function if demo else (exported[0] if exported else ""))
    if name not in exported:
        raise UsageError(f"no function {name!r} in the module (it exports: {', '.join(exported)})")
    signature = signature_of(module.lookup_function(name))
    session._phase(load_s=time.perf_counter() - started)
    with session._lock:
        session._function = name
        session._result_types = tuple(str(t) for t in signature.outputs)
    session.outcome.inputs = make_inputs(signature, list(session.config.inputs), session.config.seed)
    runner = ToolModuleRun(devices, vmfb, name, session._save_inputs())
    sampler = MemorySampler(devices, runner.pool_statistics, session._on_memory, session.config.sample_interval_s)
    sampler.start()
    try:
        started = time.perf_counter()
        outputs = runner.first_call(len(signature.outputs), cancel=session._stop)
        session._phase(first_call_s=time.perf_counter() - started)
        session.outcome.outputs = outputs
        session._record_check(session._check(outputs, session.outcome.inputs, demo))
        session._set_state("running")
        remaining = session.config.iterations
        while (remaining is None or remaining > 0) and not session._stop.is_set():
            if not session._running.is_set():
                session._running.wait(0.1)
                continue
            if session._profile_request.is_set():
                session._profile_request.clear()
                session._event(
                    "warning",
                    "profile: multi-device GPU runs go through the shipped tools; "
                    "profile them with gputop on one device",
                )
            batch = BATCH if remaining is None else min(BATCH, remaining)
            for seconds in runner.call_batch(batch, cancel=session._stop):
                session._timer.add(seconds)
            if remaining is not None:
                remaining -= batch
            session._publish()
        session._set_state("finished" if not session._stop.is_set() else "stopped")
    except BaseException:
        sampler.stop()
        raise
    finally:
        started = time.perf_counter()
        runner.close()
        session._phase(teardown_s=time.perf_counter() - started)
    return sampler
