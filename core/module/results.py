"""Every exported function's results, read from the loaded module, on the one device a one-device run has.

A multi-device module's exports come from the compiler's affinity analysis of its source
(`multidevice/affinity.py`). A one-device module needs no analysis: each result is produced
and exported on the run's device, with no transfer. What is left to say is which results each
function has, and that comes from the loaded module itself, so a `.vmfb` compiled elsewhere
(no source beside it) reads as an `.mlir` or `.onnx` gputop compiled does: a function's
`iree.abi.declaration` (its reflection) gives its results' types; a function without one (an
imported ONNX model's) still has its VM calling convention (`0r_r`: one ref in, one out),
which counts them, and the first call's outputs give the called function's types.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gputop.core.module.signature import DTYPES, FunctionSignature, signature_of
from gputop.core.records.affinity import ExportAffinity

__all__ = ["FunctionResults", "function_results", "one_device_exports", "output_type"]

_CCONV = re.compile(r"\((\d*)(\w*?)_(\w*)\)")
_VALUE_TYPES = frozenset("rifIF")  # a ref, i32, f32, i64, f64 in the VM's calling convention (v: void)
_ELEMENTS = {dtype: name for name, dtype in reversed(DTYPES.items())}  # float32 -> f32, int8 -> i8 (not si8)


@dataclass(frozen=True)
class FunctionResults:
    """One exported function's results, in order: each one's type as text (`1x100xf32`), None where unknown."""

    function: str
    types: tuple[str | None, ...]


def result_types_of(function: object) -> tuple[str | None, ...]:
    """A `VmFunction`'s result types: from its declaration, else as many unknowns as its calling convention has."""
    signature = signature_of(function)
    if signature.declared:
        return tuple(str(t) for t in signature.outputs)
    cconv = _CCONV.search(repr(function))
    results = cconv.group(3) if cconv else ""
    return tuple(None for kind in results if kind in _VALUE_TYPES)


def function_results(module: object, names: Sequence[str]) -> list[FunctionResults]:
    """The results of each function `names` gives (the module's exports, as the runner lists them)."""
    found: list[FunctionResults] = []
    for name in names:
        function = module.lookup_function(name)  # type: ignore[attr-defined]
        if function is not None:
            found.append(FunctionResults(name, result_types_of(function)))
    return found


def output_type(array: np.ndarray) -> str | None:
    """A result read back from a call, typed as a declaration writes it (`4x8xf32`); None for an odd dtype."""
    element = _ELEMENTS.get(np.dtype(array.dtype))
    if element is None:
        return None
    return "x".join([*(str(d) for d in array.shape), element])


def one_device_exports(
    functions: Sequence[FunctionResults],
    device_id: str,
    called: FunctionSignature | None = None,
    outputs: Sequence[np.ndarray] = (),
) -> tuple[ExportAffinity, ...]:
    """Every result of every function, produced and exported on `device_id` (no transfer on one device).

    The called function's results are typed from `called` (its declaration, or an ONNX model's graph) where it
    gives them, else from the first call's `outputs`; it has as many results as either says.
    """
    records: list[ExportAffinity] = []
    for function in functions:
        types = list(function.types)
        if called is not None and function.function == called.name:
            declared = [str(t) for t in called.outputs]
            seen = [output_type(a) for a in outputs]
            count = max(len(types), len(declared), len(seen))
            types = [
                (declared[i] if i < len(declared) else None)
                or (types[i] if i < len(types) else None)
                or (seen[i] if i < len(seen) else None)
                for i in range(count)
            ]
        for index, kind in enumerate(types):
            records.append(
                ExportAffinity(function.function, "result", index, None, device_id, device_id, 0, None, value_type=kind)
            )
    return tuple(records)
