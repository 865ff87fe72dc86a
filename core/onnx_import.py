"""ONNX models in: imported to MLIR with the importer that ships with IREE, cached.

Users arrive with models, not hand-written MLIR. `iree-import-onnx` turns an
`.onnx` file into MLIR that the normal compile path takes; old models are
upgraded to opset 17 first (IREE does not import opset-9 BatchNormalization).
Imports run in a child process and are cached by content like compiles, so
the second run of a large model costs nothing here.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from gputop.core.compile import read_source
from gputop.core.errors import CompileError, UsageError
from gputop.core.paths import cache_dir
from gputop.core.signature import FunctionSignature, TensorType

OPSET = 17


def check_model(path: Path, data: bytes) -> None:
    """A one-line error unless `data` parses as an ONNX model."""
    try:
        import onnx
    except ImportError:
        raise UsageError("importing .onnx models needs the onnx package (pip install onnx)") from None
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception:
        raise UsageError(f"{path}: not an ONNX model (it does not parse as a ModelProto)") from None
    if not model.graph.node:
        raise UsageError(f"{path}: not an ONNX model (no graph nodes)")


def import_onnx(path: Path, out_dir: Path | None = None) -> tuple[Path, float, bool]:
    """The model as MLIR: (path of the .mlir, seconds spent importing, cache hit)."""
    data = read_source(path)
    check_model(path, data)
    digest = hashlib.sha256(data)
    digest.update(f"opset{OPSET}".encode())
    digest.update(importlib.metadata.version("iree-base-compiler").encode())
    target = cache_dir() / "onnx" / f"{digest.hexdigest()[:32]}.mlir"
    if target.exists() and target.stat().st_size:
        return target, 0.0, True
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial.mlir")
    log = (out_dir or target.parent) / f"import-{path.stem}.log"
    started = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "iree.compiler.tools.import_onnx",
            str(path),
            "--opset-version",
            str(OPSET),
            "-o",
            str(partial),
        ],
        capture_output=True,
        text=True,
    )
    log.write_text(proc.stdout + proc.stderr, encoding="utf-8")
    if proc.returncode != 0 or not partial.exists():
        lines = [line.strip() for line in (proc.stderr or proc.stdout).splitlines() if line.strip()]
        detail = next(
            (line for line in reversed(lines) if "Error" in line or "error" in line), lines[-1] if lines else ""
        )
        raise CompileError(f"{path}: the ONNX importer failed: {detail}", log_path=str(log))
    partial.replace(target)
    return target, time.perf_counter() - started, False


ONNX_TO_MLIR = {
    "float32": "f32",
    "float16": "f16",
    "float64": "f64",
    "int64": "i64",
    "int32": "i32",
    "int16": "i16",
    "int8": "i8",
    "uint8": "ui8",
    "bool": "i1",
}


def graph_signature(path: Path, function: str) -> FunctionSignature:
    """The model's inputs and outputs from its graph (initializer-backed inputs are weights)."""
    import onnx
    from onnx import helper

    model = onnx.load(str(path), load_external_data=False)
    weights = {init.name for init in model.graph.initializer}

    def types(values: Any, are_inputs: bool) -> tuple[TensorType, ...]:
        found = []
        for value in values:
            if value.name in weights:
                continue
            tensor = value.type.tensor_type
            dtype = str(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
            dims: list[int | None] = []
            for dim in tensor.shape.dim:
                if dim.HasField("dim_value") and dim.dim_value > 0:
                    dims.append(int(dim.dim_value))
                elif are_inputs:
                    name = dim.dim_param or "?"
                    raise UsageError(
                        f"{path.name}: input {value.name!r} has a dynamic dimension {name!r}: give it with --input"
                    )
                else:
                    dims.append(None)
            found.append(TensorType(tuple(dims), ONNX_TO_MLIR.get(dtype, dtype)))
        return tuple(found)

    return FunctionSignature(function, types(model.graph.input, True), types(model.graph.output, False))
