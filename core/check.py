"""Checking outputs against references: a demo's NumPy function or files the user gives.

A fast wrong answer is worse than a slow right one, so every demo checks its
own outputs and `--check FILE` compares any module's outputs with reference
tensors (`.npy`, or ONNX `TensorProto` `.pb` when the onnx package is there).
Errors are measured against each output's largest reference magnitude, since
float32 reductions differ from a float64 reference by far more than a fixed
tolerance near zero.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gputop.core.errors import UsageError
from gputop.core.files import require_file
from gputop.core.snapshot import OutputCheck

DEFAULT_RTOL = 1e-4
DEFAULT_ATOL = 1e-5


def load_tensor_file(path: Path, what: str = "reference") -> np.ndarray:
    """A tensor from `.npy` or an ONNX `TensorProto` `.pb` file (for inputs and references)."""
    require_file(path, what)
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
    raise UsageError(f"{what} {path}: use a .npy or .pb file")


def load_reference(path: Path) -> np.ndarray:
    return load_tensor_file(path, "reference")


def compare_outputs(
    outputs: list[np.ndarray],
    expected: list[np.ndarray],
    *,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    reference: str,
) -> OutputCheck:
    """Pass when, for every output, max|got - want| <= rtol * max|want| + atol."""
    if len(outputs) < len(expected):
        raise UsageError(f"{len(expected)} references given but the function returned {len(outputs)} outputs")
    max_abs = 0.0
    max_rel = 0.0
    passed = True
    for index, (got, want) in enumerate(zip(outputs, expected, strict=False)):
        if got.shape != want.shape:
            raise UsageError(
                f"output {index} has shape {'x'.join(map(str, got.shape))}, "
                f"its reference {'x'.join(map(str, want.shape))}"
            )
        want64 = want.astype(np.float64)
        finite = bool(np.isfinite(got).all()) if np.issubdtype(got.dtype, np.floating) else True
        # NaN or Inf in an output is an infinite error, not one that max() silently drops.
        error = float(np.abs(got.astype(np.float64) - want64).max(initial=0.0)) if finite else float("inf")
        scale = float(np.abs(want64).max(initial=0.0))
        max_abs = max(max_abs, error)
        max_rel = max(max_rel, error / scale if scale else error)
        passed = passed and error <= rtol * scale + atol
    return OutputCheck(passed, max_abs, max_rel, reference=reference)
