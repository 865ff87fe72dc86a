"""Checking outputs against references: a demo's NumPy function or files the user gives.

A fast wrong answer is worse than a slow right one, so every demo checks its
own outputs and `--check FILE` compares any module's outputs with reference
tensors (`.npy`, or ONNX `TensorProto` `.pb` when the onnx package is there).
Errors are measured against each output's largest finite reference magnitude,
since float32 reductions differ from a float64 reference by far more than a
fixed tolerance near zero. Tolerances default per element type, the output's
(a float32 output saved as NumPy's default float64 is still held to float32's
tolerance, an fp16 model to float16's) or the reference's where that one is
coarser, and the check says which it applied. An output with no reference is
named as unchecked, so a forgotten file never reads as a full pass. NaN and ±Inf
must sit where the reference has them (not an infinite error when they do),
integers are compared in the reference's signedness, and a failed check says
how many elements differ and the first few of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from gputop.core.errors import UsageError
from gputop.core.files import require_file
from gputop.core.records.checks import Mismatch, OutputCheck, Tolerance

__all__ = [
    "FIRST_MISMATCHES",
    "TOLERANCES",
    "check_tensor_file",
    "compare_outputs",
    "load_reference",
    "load_tensor_file",
    "tolerance_for",
]

# Tolerances per element type, (rtol, atol): rtol is relative to the output's largest reference
# magnitude, and each is a few units in the last place of the type (bf16 keeps 8 bits, float8
# 3 or 2): a finer one fails correct models. Integers and booleans must match exactly.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-9),
    "float32": (1e-4, 1e-5),
    "float16": (2e-3, 1e-3),
    "bfloat16": (1.6e-2, 1e-2),
    "float8": (0.25, 0.0),
}
DEFAULT_RTOL, DEFAULT_ATOL = TOLERANCES["float32"]
FIRST_MISMATCHES = 5  # elements a failed check names (index, got, expected): enough to see a pattern


def tolerance_for(dtype: np.dtype) -> tuple[float, float]:
    """The default (rtol, atol) for outputs of `dtype`: exact for integers and booleans."""
    name = str(dtype)
    if name.startswith("float8") or name.startswith("float4"):
        return TOLERANCES["float8"]
    if name in TOLERANCES:
        return TOLERANCES[name]
    if np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.complexfloating):
        return TOLERANCES["float32"]
    return (0.0, 0.0)


def applied_tolerance(got: np.dtype, want: np.dtype) -> tuple[str, float, float]:
    """The element type whose tolerance holds an output of type `got` against a reference of type
    `want`, and that (rtol, atol): the output's own, or the reference's where it is coarser (a
    float64 output cannot be checked closer than a float32 reference's rounding)."""
    got_rtol, got_atol = tolerance_for(got)
    want_rtol, want_atol = tolerance_for(want)
    if (want_rtol, want_atol) > (got_rtol, got_atol) and not _integral(want):
        return str(want), want_rtol, want_atol
    return str(got), got_rtol, got_atol


def check_tensor_file(path: Path, what: str = "reference") -> None:
    """What can be known of a tensor file before it is read: it is a readable `.npy` or `.pb` file.

    A run checks its references and input files this way before it starts (a usage error then
    costs no session); `load_tensor_file` checks the same on reading.
    """
    require_file(path, what)
    if path.suffix not in (".npy", ".pb"):
        raise UsageError(f"{what} {path}: use a .npy or .pb file")


def load_tensor_file(path: Path, what: str = "reference") -> np.ndarray:
    """A tensor from `.npy` or an ONNX `TensorProto` `.pb` file (for inputs and references)."""
    check_tensor_file(path, what)
    if path.suffix == ".npy":
        try:
            return np.load(path, allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise UsageError(f"{what} {path}: not a valid .npy file ({exc})") from None
    if path.suffix == ".pb":
        try:
            import onnx
            from onnx import numpy_helper
        except ImportError:
            raise UsageError(f"{what} {path}: reading .pb tensors needs the onnx package") from None
        tensor = onnx.TensorProto()
        try:
            tensor.ParseFromString(path.read_bytes())
        except Exception as exc:
            raise UsageError(f"{what} {path}: not an ONNX TensorProto ({exc})") from None
        return np.asarray(numpy_helper.to_array(tensor))
    raise AssertionError(path.suffix)  # check_tensor_file allows no other suffix


def load_reference(path: Path) -> np.ndarray:
    return load_tensor_file(path, "reference")


def _as_reference_type(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """`got` read as `want`'s integer type: IREE's integers are signless, so a uint8 output
    comes back as int8 (bitwise identical) and must be read as unsigned before comparing."""
    if got.dtype == want.dtype or got.dtype.itemsize != want.dtype.itemsize:
        return got
    if _integral(got.dtype) and _integral(want.dtype):
        return got.view(want.dtype)
    return got


def _integral(dtype: np.dtype) -> bool:
    return bool(np.issubdtype(dtype, np.integer) or dtype == np.bool_)


def _as_float64(array: np.ndarray) -> np.ndarray:
    """Values as float64 (bfloat16 and float8 from ml_dtypes convert too; complex keeps its modulus)."""
    if np.iscomplexobj(array):
        return np.abs(array).astype(np.float64)
    return np.asarray(array).astype(np.float64)


def compare_outputs(
    outputs: list[np.ndarray],
    expected: list[np.ndarray],
    *,
    rtol: float | None = None,
    atol: float | None = None,
    reference: str,
    given_by: str = "given",
) -> OutputCheck:
    """Pass when NaN and ±Inf sit where the reference has them, and every finite value is within
    rtol * max|finite reference| + atol of it (the output's element type's defaults, or the
    reference's when coarser, where rtol or atol is None). Outputs past the references are
    listed as unchecked. `given_by` names who set rtol and atol when both are set (`given` for
    --rtol/--atol, `demo` for a demo's own, `spec` for an OpenCL run spec's)."""
    if len(outputs) < len(expected):
        raise UsageError(f"{len(expected)} references given but the function returned {len(outputs)} outputs")
    max_abs = 0.0
    max_rel = 0.0
    mismatches = 0
    firsts: list[Mismatch] = []
    tolerances: list[Tolerance] = []
    for index, (got_raw, want) in enumerate(zip(outputs, expected, strict=False)):
        if got_raw.shape != want.shape:
            raise UsageError(
                f"output {index} has shape {'x'.join(map(str, got_raw.shape))}, "
                f"its reference {'x'.join(map(str, want.shape))}"
            )
        got = _as_reference_type(got_raw, want)
        kind, default_rtol, default_atol = applied_tolerance(got.dtype, want.dtype)
        out_rtol = default_rtol if rtol is None else rtol
        out_atol = default_atol if atol is None else atol
        tolerances.append(Tolerance(index, given_by if rtol is not None and atol is not None else kind,
                                    out_rtol, out_atol))  # fmt: skip
        got64, want64 = _as_float64(got), _as_float64(want)
        finite = np.isfinite(want64)
        # NaN must meet NaN, and an infinity the same infinity: any other pairing is wrong.
        special_wrong = np.where(
            finite, ~np.isfinite(got64), ~((np.isnan(want64) & np.isnan(got64)) | (want64 == got64))
        )
        both = finite & np.isfinite(got64)
        error = np.where(both, np.abs(got64 - np.where(both, want64, 0.0)), 0.0)
        scale = float(np.abs(np.where(finite, want64, 0.0)).max(initial=0.0))
        bound = out_rtol * scale + out_atol
        wrong = special_wrong | (error > bound)
        count = int(wrong.sum())
        worst = float("inf") if bool(special_wrong.any()) else float(error.max(initial=0.0))
        max_abs = max(max_abs, worst)
        max_rel = max(max_rel, worst / scale if scale else worst)
        if count and len(firsts) < FIRST_MISMATCHES:
            for position in _first_true(wrong.reshape(-1), FIRST_MISMATCHES - len(firsts)):
                at = tuple(int(i) for i in np.unravel_index(position, wrong.shape))
                firsts.append(Mismatch(index, at, _scalar(got[at]), _scalar(want[at])))
        mismatches += count
    return OutputCheck(mismatches == 0, max_abs, max_rel, reference=reference, mismatches=mismatches,
                       first_mismatch=firsts[0] if firsts else None, first_mismatches=tuple(firsts),
                       tolerances=tuple(tolerances),
                       unchecked=tuple(range(len(expected), len(outputs))))  # fmt: skip


def _first_true(flat: np.ndarray, wanted: int, chunk: int = 1 << 20) -> list[int]:
    """The positions of the first `wanted` True values of `flat`, found a chunk at a time: an output
    that is wrong everywhere must not cost an index array as large as itself for a few of them."""
    found: list[int] = []
    for start in range(0, flat.size, chunk):
        hits = np.flatnonzero(flat[start : start + chunk])[: wanted - len(found)]
        found.extend(start + int(hit) for hit in hits)
        if len(found) >= wanted:
            break
    return found


def _scalar(value: Any) -> float | int | bool:
    """One element as a JSON-ready Python number."""
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if np.iscomplexobj(value):
        return float(abs(value))
    return float(value)
