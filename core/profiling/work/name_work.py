"""FLOPs and bytes of a dispatch read from the name IREE gave it, for modules without executable sources.

A `.vmfb` compiled elsewhere, which is what most deployments run, comes
without the executable sources that `ir_count.py` counts. Its dispatch names still
say what the compiler saw. IREE's `AnnotateDispatchesPass` names each dispatch
after its costliest op: the op's kind, its static loop ranges and its
operands' element types (all operands', or one when they agree). Some real
names: `mlp_dispatch_0_matmul_256x1024x1024_f32`,
`..._matmul_like_32x48x64_f32xi4xf32`, `..._batch_matmul_2x32x48x64_bf16xbf16xf32`,
`..._matvec_like_48x64_f16xf16xf32` and
`..._softmax_1000xf32_dispatch_tensor_store`.

For some ops, the definition fixes every operand's shape from those ranges:
matmul (M, N, K), batch matmul, matvec, vecmat and their batched forms, dot,
`matmul_like`, transposes and a softmax stored as it is. For these this module
gives the FLOPs and bytes the IR count gives for a dispatch that is that op
alone: its output starts from zero (a fused fill), its inputs are read from
memory once and its result is written once. The numbers are marked
`source="name"`.

Whatever the name does not say stays unknown, with the reason:
- an elementwise or reduction body's arithmetic, and how many tensors it reads;
- a generic `conv_`: IREE gives poolings the same name (a max pool does no
  FLOP), and the loop ranges carry no layout or strides;
- a named convolution's input size, which depends on strides;
- dynamic sizes (`D`), packed layouts (`unpack_`, `_pack`), and ops the IR
  count does not count either (sort, attention).

Work fused into the dispatch that the name leaves out is not seen: a bias
added after a matmul, or a matmul that accumulates into an input rather than
from zero. `tests/test_name_work.py` checks that these numbers equal the IR
count on every module the suite compiles, and lists where they do not.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from gputop.core.profiling.work.dispatch_work import DispatchWork

__all__ = ["NAME_SOURCE", "dispatch_summary", "work_from_name"]

NAME_SOURCE = "name"

# `{function}_dispatch_{n}_{summary}`; a backend may spell the function's `$async` as `_async`.
DISPATCH = re.compile(r"dispatch_\d+_(?P<summary>\w+)$")
TYPE = r"(?:bf16|tf32|f\d+(?:E[0-9A-Z]+)?|[su]?i\d+|index)"
# A linalg op: `{kind}_{loop ranges}_{element types}`, as in `batch_matmul_4x64x16x32_f32`.
LINALG = re.compile(rf"(?P<kind>[a-z][a-z0-9_]*?)_(?P<ranges>(?:\d+|D)(?:x(?:\d+|D))*)_(?P<types>{TYPE}(?:x{TYPE})*)")
# A softmax or iree_linalg_ext op: `{kind}_{main tensor shape}x{type}_{its one user}`.
EXTENDED = re.compile(rf"(?P<kind>[a-z][a-z0-9_]*?)_(?P<shape>(?:(?:\d+|D)x)*)(?P<type>{TYPE})(?:_(?P<user>\w+))?")

# IREE's data tiling: `unpack_` before and `_pack` after the op it packs for, or the packing op itself.
PACKED = ("unpack_", "pack_", "set_encoding_", "unset_encoding_")
SOFTMAX_FLOPS_PER_ELEMENT = 4  # as ir_count.py counts linalg.softmax: subtract, exp, sum, divide

# Contractions: each iteration point is one multiply-add (2 FLOPs on floats); the element count of
# (first input, second input, output) from the loop ranges, in the order the op's definition sets them.
Shapes = Callable[[tuple[int, ...]], tuple[int, int, int]]
CONTRACTIONS: dict[str, tuple[int, Shapes]] = {
    "matmul": (3, lambda r: (r[0] * r[2], r[2] * r[1], r[0] * r[1])),  # (M, N, K)
    "matmul_like": (3, lambda r: (r[0] * r[2], r[2] * r[1], r[0] * r[1])),  # a generic: (M, N, K) collapsed
    "batch_matmul": (4, lambda r: (r[0] * r[1] * r[3], r[0] * r[3] * r[2], r[0] * r[1] * r[2])),  # (B, M, N, K)
    "matvec": (2, lambda r: (r[0] * r[1], r[1], r[0])),  # (M, K)
    "vecmat": (2, lambda r: (r[1], r[1] * r[0], r[0])),  # (N, K)
    "batch_matvec": (3, lambda r: (r[0] * r[1] * r[2], r[0] * r[2], r[0] * r[1])),  # (B, M, K)
    "batch_vecmat": (3, lambda r: (r[0] * r[2], r[0] * r[2] * r[1], r[0] * r[1])),  # (B, N, K)
    "dot": (1, lambda r: (r[0], r[0], 1)),  # (K,)
    # A generic with unit dims folded away: (N, K). Which input is the matrix is not said; with both
    # inputs of one type it does not matter.
    "matvec_like": (2, lambda r: (r[0] * r[1], r[1], r[0])),
}
# Contractions whose loops the name does not map onto operands: their FLOPs only.
FLOPS_ONLY = ("contract", "horizontal_multi_contract")


@dataclass(frozen=True)
class _Parsed:
    kind: str
    ranges: tuple[int, ...] | None  # None: a dynamic size
    types: tuple[str, ...]


def dispatch_summary(kernel: str) -> str | None:
    """What IREE appended to `{function}_dispatch_{n}_`: `matmul_256x1024x1024_f32`; None for another name."""
    found = DISPATCH.search(kernel)
    return found.group("summary") if found else None


def work_from_name(kernel: str) -> DispatchWork:
    """The work of `kernel` as far as its name says, or why it says too little (`unknown`)."""
    summary = dispatch_summary(kernel)
    if summary is None:
        return _unknown(kernel, "", "not an IREE dispatch name (`..._dispatch_N_op_sizes_type`)")
    if summary.startswith(PACKED) or summary.endswith("_pack"):
        return _unknown(kernel, "", "packed operands (data tiling): their sizes are not in the name")
    linalg = LINALG.fullmatch(summary)
    if linalg is not None:
        ranges = tuple(int(r) for r in linalg["ranges"].split("x")) if "D" not in linalg["ranges"] else None
        return _linalg_work(kernel, _Parsed(linalg["kind"], ranges, tuple(re.findall(TYPE, linalg["types"]))))
    extended = EXTENDED.fullmatch(summary)
    if extended is not None:
        return _extended_work(kernel, extended["kind"], extended["shape"], extended["type"], extended["user"])
    if summary == "slow_memcpy":
        return _unknown(kernel, "copy", "slow_memcpy: the name gives no size")
    return _unknown(kernel, "", f"{summary}: no op and sizes in the name")


def _linalg_work(kernel: str, op: _Parsed) -> DispatchWork:
    kind = op.kind
    if op.ranges is None:
        return _unknown(kernel, kind, f"{kind}: a dynamic size (D) in the name")
    points = math.prod(op.ranges)
    if kind in CONTRACTIONS or kind in FLOPS_ONLY:
        return _contraction(kernel, kind, op.ranges, op.types)
    if kind == "transpose":  # a body that only yields, every map a permutation: one tensor in, one out
        if len(op.types) != 1:
            return _unknown(kernel, kind, f"transpose of {len(op.types)} element types: its operands are not said")
        size = _tensor_bytes(points, op.types[0])
        return _work(kernel, kind, 0, size, size, op.types[0], False)
    if kind == "conv":
        return _unknown(
            kernel, kind, "conv: IREE names poolings conv_ too (a max pool does no FLOP), and its loop sizes "
            "carry no layout or strides",
        )  # fmt: skip
    if kind.startswith(("conv_", "depthwise_conv_", "pooling_")):
        return _named_convolution(kernel, kind, points, op.types)
    if kind.startswith("elementwise"):
        return _unknown(
            kernel, kind, f"{kind}: the name gives its element count, not its arithmetic per element or how "
            "many tensors it reads",
        )  # fmt: skip
    if kind == "reduction":
        return _unknown(
            kernel, kind, "reduction: the name gives its loop sizes, not which are reduced, its arithmetic or how "
            "many tensors it reads",
        )  # fmt: skip
    return _unknown(kernel, kind, f"{kind}: not an op whose work gputop reads from a name")


def _contraction(kernel: str, kind: str, ranges: tuple[int, ...], types: tuple[str, ...]) -> DispatchWork:
    """A multiply-add at every iteration point; operand sizes where the op's definition fixes them."""
    accumulator = types[-1]
    flops = 2 * math.prod(ranges) if _is_float(accumulator) else 0  # integer arithmetic is not counted (ir_count.py)
    loops, shapes = CONTRACTIONS.get(kind, (0, None))
    operand_types = types * 3 if len(types) == 1 else types
    why = None
    if shapes is None or len(ranges) != loops:
        why = f"{kind} of {len(ranges)} loops: the name does not say which loops index which operand"
    elif len(operand_types) != 3:
        why = f"{kind} with {len(types)} element types: not one per operand"
    elif kind == "matvec_like" and operand_types[0] != operand_types[1]:
        why = "matvec_like with inputs of two types: the name does not say which is the matrix"
    if why is not None or shapes is None:
        return DispatchWork(kernel, flops, None, None, (kind,), types[0], True, why, source=NAME_SOURCE)
    first, second, output = shapes(ranges)
    read = _tensor_bytes(first, operand_types[0]) + _tensor_bytes(second, operand_types[1])
    return _work(kernel, kind, flops, read, _tensor_bytes(output, operand_types[2]), operand_types[0], True)


def _named_convolution(kernel: str, kind: str, points: int, types: tuple[str, ...]) -> DispatchWork:
    """A convolution or pooling IREE named by its op (`conv_2d_nhwc_hwcf_...`): its loops say its FLOPs,
    not its bytes (the input's size depends on strides and dilations the name leaves out)."""
    float_acc = _is_float(types[-1])
    if kind.startswith("pooling_"):
        per_point = 1 if kind.endswith("_sum") else 0  # max and min compare: no FLOP
        contraction = False
    else:
        per_point, contraction = 2, True
    why = f"{kind}: the name gives no strides or dilations, which the input's size depends on"
    flops = points * per_point if float_acc else 0
    return DispatchWork(kernel, flops, None, None, (kind,), types[0], contraction, why, source=NAME_SOURCE)


def _extended_work(kernel: str, kind: str, shape: str, element: str, user: str | None) -> DispatchWork:
    if kind != "softmax":
        return _unknown(kernel, kind, f"{kind}: not counted (nor is it from the IR)")
    if "D" in shape:
        return _unknown(kernel, kind, "softmax: a dynamic size (D) in the name")
    if user != "dispatch_tensor_store":
        after = f"a fused {user} after it" if user else "its result has several users"
        return _unknown(kernel, kind, f"softmax: {after}, whose work the name does not give")
    elements = math.prod(int(d) for d in shape.rstrip("x").split("x")) if shape else 1
    size = _tensor_bytes(elements, element)
    return _work(kernel, kind, SOFTMAX_FLOPS_PER_ELEMENT * elements, size, size, element, False)


def _work(kernel: str, kind: str, flops: int, read: int, written: int, dtype: str, contraction: bool) -> DispatchWork:
    return DispatchWork(kernel, flops, read, written, (kind,), dtype, contraction, source=NAME_SOURCE)


def _unknown(kernel: str, kind: str, why: str) -> DispatchWork:
    ops = (kind,) if kind else ()
    return DispatchWork(kernel, None, None, None, ops, None, False, why, source=NAME_SOURCE)


def _is_float(element: str) -> bool:
    return element.startswith(("f", "bf", "tf"))


def _tensor_bytes(elements: int, element: str) -> int:
    """As ir_count.py sizes a tensor: whole bytes of the packed elements; an i1 takes a byte."""
    bits = 64 if element == "index" else int(re.findall(r"\d+", element)[0])
    bits = 8 if bits == 1 else bits
    return (elements * bits + 7) // 8
