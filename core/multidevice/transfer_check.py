"""Bytes that really moved between devices in one profiled call: the runtime cross-check of the affinity analysis.

The stream IR says which copy commands move a value from one device to another
(`core/multidevice/affinity.py`); a profiled call says which copies the devices really ran
(`core/profiling/ireeprof/queue_events.py`: queue copies with their payload bytes, and the copies
recorded into each executed command buffer, with their binding slots). This
runs one call of the module with IREE's shipped `iree-benchmark-module` and
HAL profiling on, matches every copy the compiler planned with a copy that ran
(same device, same length, and the same binding slots where both know them),
and puts what ran beside the static figures: `observed_bytes` on each
transfer, `observed_transfer_bytes` on each record.

A dynamic-shape value's planned size is a formula in the arguments'
dimensions (`core/multidevice/sizes.py`); the call's real input shapes give
its bytes (`bytes_from_call`) before the matching, so its copies pair too.

What no profile can see stays None: an export handed to another device and a
kernel reading another device's memory run no copy command, and IREE 3.13 has
no HAL-native profiling for CUDA. A copy the analysis did not plan is
reported as unexplained, and the records it could belong to stay None.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from gputop.core.errors import GputopError, Interrupted, ProfileError
from gputop.core.module.compile import compile_module
from gputop.core.module.inputs import make_inputs, tool_input_args
from gputop.core.module.signature import FunctionSignature, signature_of
from gputop.core.module.targets import device_names
from gputop.core.multidevice.affinity import AffinityAnalysis, FunctionAffinity
from gputop.core.processes import last_line, run_logged
from gputop.core.profiling.ireeprof.queue_events import Copy, load_queue_log
from gputop.core.profiling.ireeprof.tools import PROFILING_MODES, profiled_calls_command, runtime_tool
from gputop.core.records.devices import DeviceInfo

__all__ = [
    "Observation",
    "input_shapes",
    "match_copies",
    "observe_module",
    "observe_transfers",
    "unexplained_notes",
    "why_not_observable",
]

TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Observation:
    """One function's analysis with what a profiled call showed, and the copies nothing planned."""

    affinity: FunctionAffinity
    copies_seen: tuple[Copy, ...]
    unexplained: tuple[Copy, ...]
    profile_path: str


def why_not_observable(backends: Sequence[str]) -> str | None:
    """Why a profiled call cannot show these devices' copies, or None when it can."""
    for backend in backends:
        if backend == "cuda":
            return "IREE 3.13 has no HAL-native profiling for CUDA (queue events are not recorded)"
        if backend not in PROFILING_MODES:
            return f"IREE HAL-native profiling is not available for {backend}"
    return None


def match_copies(affinity: FunctionAffinity, copies: Sequence[Copy]) -> tuple[FunctionAffinity, tuple[Copy, ...]]:
    """The analysis with observed bytes filled in from the copies one call ran; and the copies left over.

    Device ordinals follow the order of the named devices (device_a = 0).
    A planned copy is matched first on device, length and binding slots, then
    (queue copies carry no slots) on device and length. A transfer whose copy
    ran shows its bytes, one whose copy did not run (another branch) shows 0;
    a record is the sum of its transfers, 0 when it has none and every copy
    that ran is explained, None when any part is invisible to the profile.
    """
    names = {name: index for index, name in enumerate(device_names(26))}
    pool = list(copies)
    matched: dict[int, Copy] = {}
    for exact in (True, False):
        for index, planned in enumerate(affinity.copies):
            if index in matched:
                continue
            for position, seen in enumerate(pool):
                if seen.device_ordinal != names.get(planned.device or "") or seen.bytes != planned.bytes:
                    continue
                slots = (seen.source_slot, seen.target_slot) == (planned.source_slot, planned.target_slot)
                if exact and not (slots and seen.source_slot is not None):
                    continue
                matched[index] = pool.pop(position)
                break
    transfers = tuple(
        replace(t, observed_bytes=None if copy is None else (matched[copy].bytes if copy in matched else 0))
        for t, copy in zip(affinity.transfers, affinity.moved_by, strict=True)
    )
    records = []
    for record, moved in zip(affinity.records, affinity.record_transfers, strict=True):
        parts = [transfers[i].observed_bytes for i in moved]
        if not moved:
            observed: int | None = None if pool else 0
        elif any(p is None for p in parts):
            observed = None
        else:
            observed = sum(p for p in parts if p is not None)
        records.append(replace(record, observed_transfer_bytes=observed))
    return replace(affinity, records=tuple(records), transfers=transfers), tuple(pool)


def observe_transfers(
    affinity: FunctionAffinity,
    *,
    vmfb: Path,
    devices: Sequence[DeviceInfo],
    input_args: Sequence[str],
    out_dir: Path,
    cancel: threading.Event | None = None,
    shapes: Sequence[Sequence[int] | None] | None = None,
) -> Observation:
    """One profiled call of `affinity.function`; its copies matched with the analysis.

    `shapes` are the call's argument shapes (None for a scalar), which give
    dynamic sizes their bytes.
    """
    why = why_not_observable([d.backend for d in devices])
    if why is not None:
        raise ProfileError(why)
    out_dir.mkdir(parents=True, exist_ok=True)
    bundle = out_dir / f"transfers-{affinity.function}.ireeprof"
    log = out_dir / f"transfers-{affinity.function}.log"
    # Exactly one call (the command's --benchmark_min_time=1x): the copies seen are one call's.
    command = profiled_calls_command(vmfb, devices, affinity.function, input_args, bundle)
    output, code = run_logged(command, log, cancel, timeout_s=TIMEOUT_S, what="the transfer cross-check")
    if code != 0:
        raise ProfileError(f"the transfer cross-check failed: {last_line(output) or f'exit {code}'}", log_path=str(log))
    copies = load_queue_log(bundle, runtime_tool("iree-profile")).copies()
    if shapes is not None:
        affinity = affinity.with_shapes(shapes)
    observed, unexplained = match_copies(affinity, copies)
    return Observation(observed, copies, unexplained, str(bundle))


def observe_module(
    analysis: AffinityAnalysis,
    *,
    source_path: Path,
    flags: tuple[str, ...],
    devices: Sequence[DeviceInfo],
    out_dir: Path,
    source_bytes: bytes | None = None,
    cancel: threading.Event | None = None,
    inputs: Sequence[str] = (),
) -> tuple[AffinityAnalysis, list[Observation], list[str]]:
    """Every function of a module called once, profiled, with `inputs` or random ones (seed 0); and what stopped it.

    The notes say, one line each, why a function (or the whole module) has
    no observed figures, and which copies ran that the analysis did not plan.
    A failed compile is a note too: the static analysis stands on its own.
    """
    why = why_not_observable([d.backend for d in devices])
    if why is not None:
        return analysis, [], [f"not observed: {why}"]
    import iree.runtime as rt

    try:
        compiled = compile_module(source_path, flags, log_dir=out_dir, cancel=cancel, source_bytes=source_bytes)
    except Interrupted:
        raise
    except GputopError as exc:
        return analysis, [], [f"not observed: {exc.message}; --static gives the compiler's analysis alone"]
    module = rt.VmModule.mmap(rt.VmInstance(), str(compiled.vmfb_path))
    observations: list[Observation] = []
    notes: list[str] = []
    for affinity in analysis.functions:
        try:
            signature = signature_of(module.lookup_function(affinity.function))
            arrays = make_inputs(signature, list(inputs))
            args = tool_input_args(signature, arrays, out_dir / f"inputs-{affinity.function}")
            observation = observe_transfers(
                affinity, vmfb=compiled.vmfb_path, devices=devices, input_args=args, out_dir=out_dir, cancel=cancel,
                shapes=input_shapes(signature, arrays),
            )  # fmt: skip
        except Interrupted:
            raise
        except GputopError as exc:
            notes.append(f"{affinity.function}: not observed: {exc}")
            continue
        observations.append(observation)
        analysis = analysis.replace_function(observation.affinity)
        notes.extend(unexplained_notes(observation))
    return analysis, observations, notes


def input_shapes(signature: FunctionSignature, arrays: Sequence[object]) -> list[tuple[int, ...] | None]:
    """Each argument's shape for a call (None for a scalar or an argument without an array)."""
    shapes: list[tuple[int, ...] | None] = []
    for kind, array in zip(signature.inputs, arrays, strict=False):
        shape = getattr(array, "shape", None)
        shapes.append(None if kind.is_scalar or shape is None else tuple(int(d) for d in shape))
    return shapes


def unexplained_notes(observation: Observation) -> list[str]:
    """One line per copy that ran but that no planned copy explains."""
    names = device_names(26)
    return [
        f"{observation.affinity.function}: a copy of {copy.bytes} bytes ran on {names[copy.device_ordinal]} "
        "that the analysis did not plan"
        for copy in observation.unexplained
    ]
