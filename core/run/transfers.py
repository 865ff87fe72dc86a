"""A multi-device run's runtime cross-check: the bytes one profiled call really moved between devices.

The compiler's analysis (`core/multidevice/affinity.py`) says which copies move each value
between devices. Right after the first call, when the run's inputs exist, this
makes one more call of the run's function through IREE's shipped benchmark
tool with HAL profiling on (`core/multidevice/transfer_check.py`) and puts the bytes the
devices really copied beside the static figures in the run's exports, so the
report and the Exports pane show both. A failed cross-check is a warning; the
run goes on with the static figures alone.
"""

from __future__ import annotations

from gputop.core.errors import GputopError, Interrupted
from gputop.core.module.inputs import tool_input_args
from gputop.core.module.signature import FunctionSignature
from gputop.core.module.targets import device_names
from gputop.core.multidevice.transfer_check import (
    input_shapes,
    observe_transfers,
    unexplained_notes,
    why_not_observable,
)
from gputop.core.run.flow import RunContext
from gputop.core.run.prepare import PreparedModule

__all__ = ["observe_exports"]


def observe_exports(ctx: RunContext, module: PreparedModule, signature: FunctionSignature) -> None:
    """Fill in the observed bytes of the run's function (multi-device modules only)."""
    analysis = module.affinity
    if analysis is None:
        return
    affinity = analysis.function(signature.name)
    if affinity is None:
        return
    state = ctx.state
    why = why_not_observable([d.backend for d in module.devices])
    if why is not None:
        state.log.add("info", f"transfers not observed: {why}")
        return
    try:
        inputs = tool_input_args(signature, state.outcome.value.inputs, ctx.session_dir / "transfers")
        observation = observe_transfers(
            affinity, vmfb=module.vmfb, devices=module.devices, input_args=inputs,
            out_dir=ctx.session_dir / "transfers", cancel=ctx.controls.stop_event,
            shapes=input_shapes(signature, state.outcome.value.inputs),
        )  # fmt: skip
    except Interrupted:
        raise
    except GputopError as exc:
        state.log.add("warning", f"transfers not observed: {exc}", exc.log_path)
        return
    updated = analysis.replace_function(observation.affinity)
    state.devices.set_exports(tuple(updated.records), tuple(updated.transfers))
    names = device_names(len(module.devices))
    copies = observation.copies_seen
    state.log.add(
        "info",
        f"transfers observed: one profiled call copied {sum(c.bytes for c in copies)} bytes in {len(copies)} "
        f"cop{'y' if len(copies) == 1 else 'ies'} on "
        f"{', '.join(sorted({names[c.device_ordinal] for c in copies})) or 'no device'}",
    )
    for transfer in observation.affinity.transfers:
        if transfer.bytes_from_call:
            state.log.add(
                "info",
                f"transfer {transfer.source} -> {transfer.target}: {transfer.bytes} bytes for this call's shapes "
                f"({transfer.bytes_expr})",
            )
        if transfer.observed_bytes is not None and transfer.observed_bytes != transfer.bytes:
            state.log.add(
                "warning",
                f"transfer {transfer.source} -> {transfer.target} of {transfer.bytes} bytes ({transfer.op}): "
                f"the profiled call copied {transfer.observed_bytes}",
            )
    for note in unexplained_notes(observation):
        state.log.add("warning", note)
