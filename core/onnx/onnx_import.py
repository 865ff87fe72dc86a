"""ONNX models in: imported to MLIR with the importer that ships with IREE, cached.

Users arrive with models, not hand-written MLIR. `iree-import-onnx` turns an
`.onnx` file into MLIR that the normal compile path takes; old models are
upgraded to opset 17 first (IREE does not import opset-9 BatchNormalization).
Imports run in a child process (`onnx_convert`: cancellable, logged, node names
kept as MLIR locations) and are cached by content like compiles, so the second
run of a large model costs nothing here. What the importer cannot take (a
foreign domain, an element type it lacks) is refused before it runs, naming
the node; float64 models are flagged so that the compile keeps f64. Weights
kept outside the model, or too large to inline, go to a parameter archive that
the run loads through IREE's parameter path.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputop.core.errors import CompileError, UsageError
from gputop.core.module.compile import read_source
from gputop.core.module.signature import FunctionSignature, TensorType
from gputop.core.module.targets import known_bad_target
from gputop.core.onnx.onnx_convert import ERROR_PREFIX
from gputop.core.onnx.onnx_model import (
    explain_failure,
    failing_node,
    interface,
    interface_change,
    keeps_f64,
    name_nodes,
    nodes_at,
    random_ops,
    refuse_unimportable,
    uses_f64,
)
from gputop.core.paths import cache_dir
from gputop.core.processes import last_line, run_logged

__all__ = [
    "COMPILE_FLAGS",
    "CONVERT_VERSION",
    "DEBUGINFO_FLAG",
    "EXTERNALIZE_BYTES",
    "EXTERNALIZE_MIN_ELEMENTS",
    "ONNX_TO_MLIR",
    "OPSET",
    "ImportedModel",
    "check_model",
    "explain_compile_failure",
    "graph_signature",
    "import_failure",
    "import_onnx",
    "imported_interface",
    "interface_changed",
    "random_ops_in",
    "weights_layout",
]

OPSET = 17
CONVERT_VERSION = 3  # part of the cache key: MLIR from an older converter lacks node locations


def check_model(path: Path, data: bytes) -> Any:
    """The `onnx.ModelProto` in `data`, or a one-line error when it is not a model."""
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
    return model


# Imported models compile without compile-time evaluation of constant expressions: the importer
# turns initializers and ConstantOfShape weights into MLIR, and folding them at compile time (a
# BatchNorm into its conv, say) inlines every weight as dense data: the onnx package's light
# ResNet-50 becomes a 100 MB module after minutes of compiling, against 90 KB in seconds with
# the folding done once at load by the hoisted initializers. Per-call work is the same.
COMPILE_FLAGS = ("--iree-opt-const-eval=false",)
# Imported models also compile with each op's location printed: the dumped dispatch sources then
# say which ONNX node each op comes from (`loc("conv_1")`), so an error located in one names the node.
DEBUGINFO_FLAG = "--mlir-print-debuginfo"
# Models whose weights live in external files, or whose initializers are this large, have their
# weights moved to a parameter archive (.irpa) loaded by the fast parameter path, not inlined.
EXTERNALIZE_BYTES = 64 * 2**20
EXTERNALIZE_MIN_ELEMENTS = 1024  # smaller tensors (biases, shapes) stay inline


@dataclass(frozen=True)
class ImportedModel:
    """An ONNX model as MLIR, with its weights archive when they were moved out."""

    mlir: Path
    parameters: Path | None
    seconds: float
    cache_hit: bool
    f64: str | None = None  # "kept": the interface or weights are double (compile keeps f64); "demoted"; None


def weights_layout(model: Any) -> tuple[bool, int]:
    """(any initializer stored in an external file, bytes of the initializers stored inside)."""
    from onnx import TensorProto

    external = any(init.data_location == TensorProto.EXTERNAL for init in model.graph.initializer)
    inline = sum(len(init.raw_data) for init in model.graph.initializer)
    return external, inline


def _external_files(path: Path, model: Any) -> list[Path]:
    files = set()
    for init in model.graph.initializer:
        for entry in init.external_data:
            if entry.key == "location":
                files.add(path.parent / entry.value)
    return sorted(files)


def import_onnx(path: Path, out_dir: Path | None = None, cancel: threading.Event | None = None) -> ImportedModel:
    """The model as MLIR (and a parameter archive for external or large weights), cached by content."""
    data = read_source(path)
    model = check_model(path, data)
    refusal = refuse_unimportable(name_nodes(model))
    if refusal is not None:
        raise CompileError(f"{path.name}: {refusal}")
    f64 = "kept" if keeps_f64(model) else "demoted" if uses_f64(model) else None
    external, inline_bytes = weights_layout(model)
    externalize = external or inline_bytes > EXTERNALIZE_BYTES
    digest = hashlib.sha256(data)
    digest.update(f"opset{OPSET} externalize{externalize} convert{CONVERT_VERSION}".encode())
    digest.update(importlib.metadata.version("iree-base-compiler").encode())
    for weights in _external_files(path, model):
        # Weight files can be gigabytes: their name, size and time stand for their content.
        try:
            info = weights.stat()
        except OSError:
            raise UsageError(f"{path}: its weights file {weights.name} is missing") from None
        digest.update(f"{weights.name}:{info.st_size}:{info.st_mtime_ns}".encode())
    key = digest.hexdigest()[:32]
    target = cache_dir() / "onnx" / f"{key}.mlir"
    archive = target.with_suffix(".irpa") if externalize else None
    shape_file = target.with_suffix(".interface.json")
    if target.exists() and target.stat().st_size and shape_file.exists() and (archive is None or archive.exists()):
        return ImportedModel(target, archive, 0.0, True, f64)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial.mlir")
    command = [sys.executable, "-m", "gputop.core.onnx.onnx_convert", str(path), str(partial), "--opset", str(OPSET)]
    command += ["--interface", str(shape_file.with_suffix(".partial.json"))]
    if archive is not None:
        command += [
            "--params-to", str(archive.with_suffix(".partial.irpa")),
            "--params-threshold", str(EXTERNALIZE_MIN_ELEMENTS), "--params-scope", "model",
        ]  # fmt: skip
    log = (out_dir or target.parent) / f"import-{path.stem}.log"
    started = time.perf_counter()
    text, returncode = run_logged(command, log, cancel, what="ONNX import")
    if returncode != 0 or not partial.exists():
        raise CompileError(f"{path.name}: {import_failure(text, returncode)}", log_path=str(log))
    if archive is not None:
        archive.with_suffix(".partial.irpa").replace(archive)
    shape_file.with_suffix(".partial.json").replace(shape_file)
    partial.replace(target)
    return ImportedModel(target, archive, time.perf_counter() - started, False, f64)


def import_failure(text: str, returncode: int) -> str:
    """The child's own one-line verdict, or what killed it."""
    said = next((line for line in reversed(text.splitlines()) if line.startswith(ERROR_PREFIX)), None)
    if said is not None:
        return said.removeprefix(ERROR_PREFIX)
    if returncode < 0 or returncode >= 128:
        signal = -returncode if returncode < 0 else returncode - 128
        return f"the ONNX importer crashed (signal {signal})"
    return f"the ONNX importer failed (exit {returncode}): {last_line(text) or 'no output'}"


def random_ops_in(path: Path) -> list[str]:
    """The random op types of the model at `path` (see onnx_model.random_ops)."""
    import onnx

    return random_ops(onnx.load(str(path), load_external_data=False))


def explain_compile_failure(path: Path, error: CompileError, flags: tuple[str, ...] = ()) -> CompileError:
    """The compile error of an imported model, reworded to name the ONNX node it comes from.

    A crash stays a crash: it names the node where the output locates one, or the graph's one
    computing node, unless the flags name a target known to crash the compiler (then the
    target, not the node, is to blame and the message already says so).
    """
    import onnx

    try:
        model = name_nodes(onnx.load(str(path), load_external_data=False))
    except Exception:  # the model imported a moment ago; if it cannot be read now, keep the compiler's words
        return error
    in_dispatch = _dispatch_source_node(model, error)
    if in_dispatch is not None:
        named = CompileError(f"{path.name}: {in_dispatch}: {error.message}", log_path=error.log_path)
        named.diagnostics, named.output, named.located_at = error.diagnostics, error.output, error.located_at
        return named
    if error.message.startswith("the compiler crashed"):  # a crash stays a crash; the node says where
        node = failing_node(model, error.output, guess=known_bad_target(flags) is None)
        line = f"{error.message} while compiling {node}" if node is not None else None
    else:
        line = explain_failure(model, error.output)
    if line is None:
        return error
    named = CompileError(f"{path.name}: {line}", log_path=error.log_path)
    named.diagnostics, named.output = error.diagnostics, error.output
    return named


def _dispatch_source_node(model: Any, error: CompileError) -> str | None:
    """`ONNX node 'x' (Add, opset 17), in one dispatch with 'y' (Mul)` for an error located in a kept
    dispatch source whose ops carry the importer's node locations; None elsewhere."""
    if error.located_at is None or "_dispatch_" not in Path(error.located_at[0]).name:
        return None
    file, line, column = error.located_at
    try:
        source = Path(file).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    at, held = nodes_at(model, source, line, column)
    others = [node for node in held if node != at]
    if at is None and not others:
        return None
    listed = ", ".join(f"{node.name!r} ({node.op_type})" for node in others[:4])
    listed += f" and {len(others) - 4} more" if len(others) > 4 else ""
    if at is None:
        return f"in the dispatch of ONNX nodes {listed}"
    return f"{at}" + (f", in one dispatch with {listed}" if others else "")


ONNX_TO_MLIR = {
    "float32": "f32",
    "float16": "f16",
    "float64": "f64",
    "int64": "i64",
    "int32": "i32",
    "int16": "i16",
    "int8": "i8",
    "uint8": "ui8",
    "uint16": "ui16",
    "uint32": "ui32",
    "uint64": "ui64",
    "bool": "i1",
}


def imported_interface(mlir: Path) -> Path:
    """Where the import wrote the interface of the graph it imported (beside the cached MLIR)."""
    return mlir.with_suffix(".interface.json")


def graph_signature(
    path: Path, function: str, *, inputs_given: bool = False, imported: Path | None = None
) -> FunctionSignature:
    """The model's inputs and outputs from its graph (initializer-backed inputs are weights).

    `imported` is the interface the import wrote (the graph as compiled, after any opset
    upgrade); without it the model's own graph is read. A dynamic input dimension asks for
    `--input`, unless the inputs are given (`inputs_given`): then the given array's size is taken.
    """
    found = _read_interface(imported) if imported is not None else None
    if found is None:
        import onnx

        found = interface(onnx.load(str(path), load_external_data=False))

    def types(rows: list[dict[str, Any]], are_inputs: bool) -> tuple[TensorType, ...]:
        result = []
        for row in rows:
            dims: list[int | None] = []
            for dim in row["dims"]:
                if isinstance(dim, int):
                    dims.append(dim)
                elif are_inputs and not inputs_given:
                    name = dim or "?"
                    raise UsageError(
                        f"{path.name}: input {row['name']!r} has a dynamic dimension {name!r}: give it with --input"
                    )
                else:
                    dims.append(None)
            result.append(TensorType(tuple(dims), ONNX_TO_MLIR.get(row["dtype"], row["dtype"])))
        return tuple(result)

    return FunctionSignature(function, types(found["inputs"], True), types(found["outputs"], False))


def interface_changed(path: Path, imported: Path) -> str | None:
    """How the import's opset upgrade changed the model's inputs, in one line, or None."""
    import onnx

    after = _read_interface(imported)
    if after is None:
        return None
    return interface_change(interface(onnx.load(str(path), load_external_data=False)), after)


def _read_interface(file: Path) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found
