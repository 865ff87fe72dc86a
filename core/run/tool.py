"""The multi-device GPU flow: calls through IREE's shipped tools, in batches.

See `tool_runner` for why two GPU devices cannot share one Python process in
IREE 3.13. The run still owns phases, checks, call statistics and snapshots;
this flow makes the first call with `iree-run-module` (its outputs are
checked) and steady calls in batches with `iree-benchmark-module`, so the
session's call loop sees up to `BATCH` calls at a time.
"""

from __future__ import annotations

import time

from gputop.core.errors import UsageError
from gputop.core.module.inputs import make_inputs
from gputop.core.module.signature import signature_of
from gputop.core.run.flow import RunContext, Uncapturable, Uncountable, end_sampling, timed_teardown
from gputop.core.run.iree import check_outputs, save_inputs
from gputop.core.run.prepare import PreparedModule
from gputop.core.run.transfers import observe_exports
from gputop.core.runners.tool_runner import BATCH, ToolModuleRun
from gputop.core.watch.memory_sampler import MemorySampler

__all__ = ["ToolFlow"]


class ToolFlow(Uncapturable, Uncountable):
    """A multi-device GPU module, called through iree-run-module and iree-benchmark-module."""

    kind = "tool"

    def __init__(self, ctx: RunContext, module: PreparedModule) -> None:
        self._ctx = ctx
        self._module = module
        self._runner: ToolModuleRun | None = None
        self._sampler: MemorySampler | None = None

    @property
    def runner(self) -> ToolModuleRun:
        if self._runner is None:
            raise RuntimeError("the module is not loaded")
        return self._runner

    def open(self) -> None:
        import iree.runtime as rt

        ctx, module = self._ctx, self._module
        state = ctx.state
        state.log.add("info", "multi-device GPU module: calls run through iree-run-module/iree-benchmark-module")
        state.lifecycle.enter("loading")
        started = time.perf_counter()
        vm_module = rt.VmModule.mmap(rt.VmInstance(), str(module.vmfb))
        exported = [n for n in vm_module.function_names if not n.startswith("__")]
        demo = module.demo
        name = ctx.config.function or (demo.function if demo else (exported[0] if exported else ""))
        if name not in exported:
            raise UsageError(f"no function {name!r} in the module (it exports: {', '.join(exported)})")
        signature = signature_of(vm_module.lookup_function(name))
        state.lifecycle.phase(load_s=time.perf_counter() - started)
        state.module.set_function(name, tuple(str(t) for t in signature.outputs))
        inputs = make_inputs(signature, list(ctx.config.inputs), ctx.config.seed)
        state.outcome.set_tensors(inputs=inputs)
        runner = self._runner = ToolModuleRun(module.devices, module.vmfb, name, save_inputs(ctx, signature))
        self._sampler = MemorySampler(
            module.devices, runner.pool_statistics, state.memory.add, ctx.config.sample_interval_s
        )
        self._sampler.start()
        started = time.perf_counter()
        outputs = runner.first_call(len(signature.outputs), cancel=ctx.controls.stop_event)
        state.lifecycle.phase(first_call_s=time.perf_counter() - started)
        state.outcome.set_tensors(outputs=outputs)
        state.outcome.record_check(check_outputs(ctx, outputs, inputs, demo))
        observe_exports(ctx, module, signature)  # multi-device: the bytes one profiled call really moved

    def calls(self, limit: int) -> int:
        batch = min(BATCH, limit)
        for seconds in self.runner.call_batch(batch, cancel=self._ctx.controls.stop_event):
            self._ctx.state.calls.add(seconds)
        return batch  # made, even if the tool's timing file came back short

    def profile(self, calls: int, level: str = "default") -> None:
        """Never asked for (`why_no_profile`): the calls run in another process."""

    def close(self) -> None:
        end_sampling(self._sampler, self._ctx.state)
        if self._runner is not None:
            timed_teardown(self._runner.close, self._ctx.state)
