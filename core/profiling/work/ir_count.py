"""FLOPs and bytes of every dispatch, counted from the dispatch's own IR.

A kernel's time says little until it is set against the work it did. The
compiler dumps each executable's source beside the module
(`--iree-hal-dump-executable-sources-to`, see `compile.py`): linalg on
tensors, before codegen, with every shape static. This module reads those
sources with the compiler's MLIR Python bindings, turns named linalg ops into
`linalg.generic` (the compiler's own `linalg-generalize-named-ops` pass), and
counts, for each export, the iteration space of every structured op times the
floating-point arithmetic of its body, and the bytes its bindings load and
store. Nothing here is read from a dispatch's name (`name_work.py` does that where
there are no sources). An op it cannot count makes the dispatch's FLOPs
`unknown` (saying which op) rather than a guess.

What counts as a FLOP is what a roofline counts (and Nsight Compute's
`fadd + fmul + 2*ffma`): add, sub, mul, div and rem on floats, FMA as 2, and a
math function (exp, tanh, rsqrt, ...) as 1 by convention; max, min, compare,
select, negate and casts are not FLOPs. Integer arithmetic is not counted.

The counts are cached as `NAME.work.json` beside the `.vmfb` (the compile
cache keys both by source, flags and compiler), so they are computed once; a
precompiled `.vmfb` gets its work from a `NAME.work.json` or `NAME.sources/`
put beside it; with neither, its `ModuleWork` says so (`reason`) and its
kernels' work comes from their names.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputop.core.mlir_ops import children, op_of, walk
from gputop.core.profiling.work.dispatch_work import (
    DispatchWork,
    ModuleWork,
    read_work,
    sources_dir_for,
    work_file_for,
    write_work,
)

__all__ = ["count_executable_text", "count_sources", "module_work"]

# FLOPs per op in a body, per iteration point.
FLOP_OPS = {
    "arith.addf": 1,
    "arith.subf": 1,
    "arith.mulf": 1,
    "arith.divf": 1,
    "arith.remf": 1,
    "math.fma": 2,
}
MATH_FUNCTIONS = {
    "math.exp", "math.exp2", "math.expm1", "math.log", "math.log2", "math.log10", "math.log1p",
    "math.tanh", "math.sinh", "math.cosh", "math.asinh", "math.acosh", "math.atanh",
    "math.sin", "math.cos", "math.tan", "math.asin", "math.acos", "math.atan", "math.atan2",
    "math.sqrt", "math.rsqrt", "math.cbrt", "math.powf", "math.fpowi", "math.erf", "math.erfc",
}  # fmt: skip
# Ops that move or shape data without arithmetic: their bytes are in the loads and stores.
DATA_MOVEMENT = {
    "tensor.empty", "tensor.pad", "tensor.extract_slice", "tensor.insert_slice", "tensor.expand_shape",
    "tensor.collapse_shape", "tensor.concat", "tensor.cast", "tensor.bitcast", "tensor.reshape",
    "tensor.extract", "tensor.insert", "tensor.splat", "tensor.from_elements", "tensor.dim", "tensor.yield",
    "linalg.pack", "linalg.unpack", "iree_linalg_ext.im2col", "linalg.yield",
}  # fmt: skip
BODY_ARITHMETIC = ("arith.", "math.")
IGNORED_DIALECTS = ("arith.", "math.", "hal.", "iree_tensor_ext.", "util.", "func.", "affine.", "flow.")
# Aggregate ops with a documented decomposition: FLOPs per element of the operand.
SOFTMAX_FLOPS_PER_ELEMENT = 4  # max-reduce (0), subtract, exp, sum, divide (linalg.softmax's decomposition)
GENERALIZE = (
    "builtin.module(hal.executable(hal.executable.variant(builtin.module(func.func(linalg-generalize-named-ops)))))"
)


def module_work(vmfb: Path) -> ModuleWork:
    """The work of `vmfb`'s dispatches: from its cached `.work.json`, else counted from its `.sources/`."""
    work_file = work_file_for(vmfb)
    sources = sources_dir_for(vmfb)
    if work_file.is_file():
        cached = read_work(work_file)
        if (cached.reason is None and cached.with_locs) or not sources.is_dir():
            return cached  # counted once; an outdated file with no sources to count again says why
    if not sources.is_dir() or not any(sources.glob("*.mlir")):
        return ModuleWork(
            {},
            source="",
            reason=f"{vmfb.name} has no executable sources beside it (for counts from the IR, run the .mlir or "
            f".onnx, or put {work_file.name} beside it)",
        )
    work = ModuleWork(count_sources(sources), source=f"executable sources {sources}")
    with contextlib.suppress(OSError):  # a read-only folder: counted again next time, correct, only slower
        write_work(work_file, work)
    return work


# -- counting --------------------------------------------------------------------------------------------


def count_sources(folder: Path) -> dict[str, DispatchWork]:
    """Every export's work in a folder of dumped executable sources."""
    from iree.compiler import ir

    context = ir.Context()
    works: dict[str, DispatchWork] = {}
    for path in sorted(folder.glob("*.mlir")):
        for work in count_executable_text(path.read_text(encoding="utf-8"), context):
            works[work.name] = work
    return works


def count_executable_text(text: str, context: Any = None) -> list[DispatchWork]:
    """The work of each export of the `hal.executable`s in `text` (their first variant)."""
    from iree.compiler import ir, passmanager

    context = context or ir.Context()
    try:
        module = ir.Module.parse(text, context)
    except Exception as exc:  # the bindings raise MLIRError; a dump from another compiler may not parse
        return [_unknown(name, f"source does not parse ({str(exc).splitlines()[0]})") for name in _export_names(text)]
    # The named ops (matmul, conv_2d_nhwc_hwcf, ...) of each function, in order, before they become generics.
    named: dict[str, list[str]] = {}
    for function in (op for op in walk(module.operation) if op.name == "func.func"):
        named.setdefault(_symbol(function), [op.name for op in walk(function) if _is_structured(op.name)])
    try:
        passmanager.PassManager.parse(GENERALIZE, context).run(module.operation)
    except Exception as exc:
        return [_unknown(name, f"linalg-generalize-named-ops failed ({exc})") for name in _export_names(text)]
    works = []
    for executable in (op for op in walk(module.operation) if op.name == "hal.executable"):
        variant = next((op for op in children(executable) if op.name == "hal.executable.variant"), None)
        if variant is None:
            continue
        exports = [_symbol(op) for op in children(variant) if op.name == "hal.executable.export"]
        functions = {_symbol(op): op for op in walk(variant) if op.name == "func.func"}
        for name in exports:
            function = functions.get(name)
            if function is None:
                works.append(_unknown(name, "no function body in the executable"))
                continue
            works.append(_count_function(name, function, iter(named.get(name, []))))
    return works


def _unknown(name: str, why: str) -> DispatchWork:
    return DispatchWork(name, None, None, None, (), None, False, why)


def _export_names(text: str) -> list[str]:
    return re.findall(r"hal\.executable\.export public @(\S+?) ", text)


@dataclass
class _Tally:
    """A dispatch's counts as its ops are walked; None once something cannot be counted."""

    flops: int | None = 0
    bytes_read: int | None = 0
    bytes_written: int | None = 0
    unknown: str | None = None
    main_flops: int = -1
    dtype: str | None = None
    contraction: bool = False

    def add_flops(self, flops: int | None, why: str | None = None) -> None:
        if flops is None:
            self.flops = None
            self.unknown = self.unknown or why
        elif self.flops is not None:
            self.flops += flops

    def main(self, flops: int | None, dtype: str | None, contraction: bool) -> None:
        """Remember the op with the most FLOPs: its type and kind choose the peak it is measured against."""
        if flops is not None and flops > self.main_flops:
            self.main_flops, self.dtype, self.contraction = flops, dtype, contraction

    def add_bytes(self, field: str, count: int | None) -> None:
        current = getattr(self, field)
        setattr(self, field, None if count is None or current is None else current + count)


def _count_function(name: str, function: Any, named: Iterator[str]) -> DispatchWork:
    tally = _Tally()
    ops: list[str] = []
    constants: set[str] = set()
    compute_locs: list[tuple[str, str]] = []
    moved_locs: list[tuple[str, str]] = []
    for op in walk(function):
        kind = op.name
        if _inside_structured(op):
            continue  # a body op: counted per iteration point by its structured op
        if kind.startswith("iree_linalg_ext.") or (_is_structured(kind) and kind != "linalg.generic"):
            compute_locs.append((kind, str(op.location)))
        elif kind in ("iree_tensor_ext.dispatch.tensor.load", "iree_tensor_ext.dispatch.tensor.store"):
            moved_locs.append(("copy", str(op.location)))
        if kind == "iree_tensor_ext.dispatch.tensor.load":
            tally.add_bytes("bytes_read", _tensor_bytes(op.results[0].type))
        elif kind == "iree_tensor_ext.dispatch.tensor.store":
            tally.add_bytes("bytes_written", _tensor_bytes(op.operands[0].type))
        elif kind == "linalg.generic":
            original = next(named, kind)
            label, flops, dtype, contraction, why = _count_generic(op, original)
            ops.append(label)
            if label != "fill":  # a fill is the zero of the matmul beside it, written on its own line in MLIR
                compute_locs.append((original, str(op.location)))
                # A fused elementwise op keeps the location of the op it was fused into; its body's arithmetic
                # keeps each producer's own (a batch norm's subtract and multiply after the conv's add).
                compute_locs.extend(
                    (inner.name, str(inner.location)) for inner in walk(op) if inner.name.startswith(BODY_ARITHMETIC)
                )
            tally.add_flops(flops, why)
            tally.main(flops, dtype, contraction)
            tally.add_bytes("bytes_read", _embedded_constant_bytes(op, constants))
        elif kind == "linalg.softmax":
            next(named, None)
            elements = _static_elements(op.operands[0].type)
            flops = None if elements is None else SOFTMAX_FLOPS_PER_ELEMENT * elements
            ops.append("softmax")
            tally.add_flops(flops, "linalg.softmax: dynamic shape")
            tally.main(flops, _element_name(op.operands[0].type), False)
        elif kind in DATA_MOVEMENT:
            if _is_structured(kind):
                next(named, None)
                ops.append(kind.split(".", 1)[1])
        elif kind.startswith(("arith.", "math.")):
            elements = _static_elements(op.results[0].type) if op.results else None
            if elements:  # arithmetic on whole tensors outside a linalg op (rare here): once per element
                tally.add_flops(elements * _op_flops(kind, op))
        elif not kind.startswith(IGNORED_DIALECTS):
            if _is_structured(kind):
                next(named, None)
            ops.append(kind.split(".", 1)[-1])
            tally.add_flops(None, f"{kind} is not counted")
    return DispatchWork(
        name=name,
        flops=tally.flops,
        bytes_read=tally.bytes_read,
        bytes_written=tally.bytes_written,
        ops=tuple(ops),
        dtype=tally.dtype,
        contraction=tally.contraction,
        unknown=tally.unknown if tally.flops is None else None,
        # A copy's ops are its loads and stores: where it has no compute op, they say what it moves for.
        locs=tuple(dict.fromkeys(compute_locs or moved_locs)),
    )


def _count_generic(op: Any, original: str) -> tuple[str, int | None, str | None, bool, str | None]:
    """(label, FLOPs, element type, is a contraction, why unknown) of one `linalg.generic`."""
    from iree.compiler import ir

    maps = [attr.value for attr in op.attributes["indexing_maps"]]
    iterators = [str(it) for it in op.attributes["iterator_types"]]
    inputs_count = next(iter(op.attributes["operandSegmentSizes"]))
    operands = list(op.operands)
    ranges: dict[int, int] = {}
    for operand, affine in zip(operands, maps, strict=False):
        shape_type = operand.type
        if not isinstance(shape_type, ir.RankedTensorType) or not shape_type.has_static_shape:
            continue
        for extent, expr in zip(shape_type.shape, affine.results, strict=True):
            if isinstance(expr, ir.AffineDimExpr):  # windowed expressions (d1 + d4) get their range elsewhere
                ranges.setdefault(expr.position, extent)
    n_loops = len(iterators)
    label = _label(op, original, maps, iterators, inputs_count)
    dtype = _main_dtype(operands, inputs_count)
    contraction = label in ("matmul", "batch_matmul", "conv")
    if any(_is_dynamic(o.type) for o in operands):
        return label, None, dtype, contraction, f"{original}: dynamic shape"
    if len(ranges) < n_loops:
        return label, None, dtype, contraction, f"{original}: loop ranges not derivable from its operands"
    points = math.prod(ranges[i] for i in range(n_loops))
    per_point = sum(_op_flops(inner.name, inner) for inner in walk(op))
    return label, points * per_point, dtype, contraction, None


def _label(op: Any, original: str, maps: list[Any], iterators: list[str], inputs_count: int) -> str:
    """What a structured op is, from its named form where it had one, else from its structure."""
    from iree.compiler import ir

    short = original.removeprefix("linalg.")
    if short.startswith("pooling"):
        return "pooling"
    if "conv" in short:
        return "conv"
    if short in ("matmul", "batch_matmul", "fill", "copy", "transpose", "broadcast", "matvec", "vecmat", "mmt4d"):
        return {"matvec": "matmul", "vecmat": "matmul", "mmt4d": "matmul"}.get(short, short)
    reductions = any("reduction" in it for it in iterators)
    inputs = list(op.operands)[:inputs_count]
    tensor_maps = [m for o, m in zip(inputs, maps, strict=False) if isinstance(o.type, ir.RankedTensorType)]
    if reductions and _multiply_accumulate(op, inputs_count):
        if any(not isinstance(e, ir.AffineDimExpr) for m in tensor_maps for e in m.results):
            return "conv"  # an input indexed by a window (oh * stride + kh * dilation)
        batch = [
            i
            for i, it in enumerate(iterators)
            if "parallel" in it and all(any(_uses_dim(e, i) for e in m.results) for m in maps)
        ]
        return "batch_matmul" if batch else "matmul"
    if reductions:
        return "reduction"
    computes = any(inner.name not in ("linalg.yield", "linalg.index") for inner in walk(op))
    if computes:
        return "elementwise"
    if not tensor_maps:
        return "fill"
    return "copy"


PEELED = ("arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.extsi", "arith.extui")


def _multiply_accumulate(op: Any, inputs_count: int) -> bool:
    """Whether the body is `out + a * b` with a and b two different inputs: a matmul's or a convolution's."""
    from iree.compiler import ir

    block = op.regions[0].blocks[0]
    arguments = list(block.arguments)
    yielded = list(block.operations)[-1]
    if yielded.name != "linalg.yield" or not list(yielded.operands):
        return False

    def producer(value: Any) -> Any:
        owner = value.owner
        return None if isinstance(owner, ir.Block) else op_of(owner)

    def argument_index(value: Any) -> int | None:
        while True:
            owner = value.owner
            if isinstance(owner, ir.Block):
                return next((i for i, a in enumerate(arguments) if a == value), None)
            defining = producer(value)
            if defining is None or defining.name not in PEELED:
                return None
            value = defining.operands[0]

    accumulate = producer(next(iter(yielded.operands)))
    if accumulate is None or accumulate.name not in ("arith.addf", "arith.addi"):
        return False
    for accumulator, product in (accumulate.operands, reversed(list(accumulate.operands))):
        if argument_index(accumulator) != len(arguments) - 1:
            continue
        multiply = producer(product)
        if multiply is None or multiply.name not in ("arith.mulf", "arith.muli"):
            continue
        left, right = (argument_index(v) for v in multiply.operands)
        if left is not None and right is not None and left != right and max(left, right) < inputs_count:
            return True
    return False


def _uses_dim(expr: Any, position: int) -> bool:
    from iree.compiler import ir

    return isinstance(expr, ir.AffineDimExpr) and expr.position == position


def _op_flops(name: str, op: Any) -> int:
    if name in FLOP_OPS:
        return FLOP_OPS[name] if _is_float_result(op) else 0
    if name in MATH_FUNCTIONS:
        return 1
    return 0


def _is_float_result(op: Any) -> bool:
    from iree.compiler import ir

    if not op.results:
        return False
    kind = op.results[0].type
    if isinstance(kind, (ir.RankedTensorType, ir.VectorType)):
        kind = kind.element_type
    return _float_width(kind) is not None


def _float_width(kind: Any) -> int | None:
    from iree.compiler import ir

    if isinstance(kind, ir.ComplexType):
        return None
    try:
        return int(ir.FloatType(kind).width)
    except Exception:  # not a float type (the bindings raise ValueError on the cast)
        return None


def _element_bits(kind: Any) -> int | None:
    from iree.compiler import ir

    width = _float_width(kind)
    if width is not None:
        return width
    if isinstance(kind, ir.IntegerType):
        return max(int(kind.width), 8) if int(kind.width) == 1 else int(kind.width)
    if isinstance(kind, ir.IndexType):
        return 64
    if isinstance(kind, ir.ComplexType):
        inner = _element_bits(kind.element_type)
        return None if inner is None else 2 * inner
    return None


def _element_name(kind: Any) -> str | None:
    from iree.compiler import ir

    if isinstance(kind, ir.RankedTensorType):
        kind = kind.element_type
    return str(kind)


def _main_dtype(operands: list[Any], inputs_count: int) -> str | None:
    """The element type the op computes in: its first tensor input's, else its output's."""
    from iree.compiler import ir

    for operand in [*operands[:inputs_count], *operands[inputs_count:]]:
        if isinstance(operand.type, ir.RankedTensorType):
            return str(operand.type.element_type)
    return None


def _is_dynamic(kind: Any) -> bool:
    from iree.compiler import ir

    return isinstance(kind, ir.RankedTensorType) and not kind.has_static_shape


def _static_elements(kind: Any) -> int | None:
    from iree.compiler import ir

    if not isinstance(kind, ir.RankedTensorType) or not kind.has_static_shape:
        return None
    return math.prod(kind.shape)


def _tensor_bytes(kind: Any) -> int | None:
    from iree.compiler import ir

    elements = _static_elements(kind)
    if elements is None:
        return None
    assert isinstance(kind, ir.RankedTensorType)
    bits = _element_bits(kind.element_type)
    return None if bits is None else (elements * bits + 7) // 8


def _embedded_constant_bytes(op: Any, seen: set[str]) -> int:
    """Non-splat constant tensors an op reads: they live in the executable and are read like any input."""
    from iree.compiler import ir

    total = 0
    for operand in op.operands:
        owner = operand.owner
        if isinstance(owner, ir.Block):
            continue
        producer = op_of(owner)
        if producer.name != "arith.constant":
            continue
        value = producer.attributes["value"]
        if not isinstance(value, ir.DenseElementsAttr) or value.is_splat:
            continue
        name = operand.get_name()
        if name not in seen:  # one constant read by two ops is one read of memory, as far as we know
            seen.add(name)
            total += _tensor_bytes(operand.type) or 0
    return total


def _is_structured(name: str) -> bool:
    """Ops that linalg-generalize-named-ops may turn into a generic (kept in order to name them)."""
    return name.startswith("linalg.") and name not in ("linalg.yield", "linalg.index")


def _inside_structured(op: Any) -> bool:
    parent = op.parent
    while parent is not None:
        name = parent.name
        if name.startswith(("linalg.", "iree_linalg_ext.")):
            return True
        if name == "func.func":
            return False
        parent = parent.parent
    return False


def _symbol(op: Any) -> str:
    return str(op.attributes["sym_name"].value)
