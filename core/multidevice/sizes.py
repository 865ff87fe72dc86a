"""Byte counts that only a call knows: sizes of dynamic-shape values as formulas in the arguments' dimensions.

In stream-phase IR the length of a `tensor<?x?xf32>` is an SSA value computed
from the dimensions of the function's `!hal.buffer_view` arguments
(`hal.buffer_view.dim`, `arith.muli`, `util.align`, ...). This follows such a
value back to those dimensions and keeps it as a small formula, so the static
analysis can say how a transfer's size depends on the inputs (`4*arg0[0]*arg0[1]`:
4 bytes times dimensions 0 and 1 of argument 0) and a profiled call can
compute the real byte count from the shapes it was given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gputop.core.mlir_ops import op_of

__all__ = ["SizeExpr", "size_expr"]

# A node: ("const", n) | ("dim", argument, dimension) | (operator, left, right)
Node = tuple[Any, ...]
_BINARY = {
    "arith.muli": "*",
    "arith.addi": "+",
    "arith.subi": "-",
    "arith.divui": "/",
    "arith.divsi": "/",
    "arith.ceildivui": "ceildiv",
    "arith.ceildivsi": "ceildiv",
    "arith.remui": "%",
    "arith.maxui": "max",
    "arith.maxsi": "max",
    "arith.minui": "min",
    "arith.minsi": "min",
    "util.align": "align",
}
_CASTS = ("arith.index_cast", "arith.index_castui", "arith.extui", "arith.extsi", "arith.trunci")


@dataclass(frozen=True)
class SizeExpr:
    """A byte count as a formula over the arguments' dimensions; `argN[i]` is dimension i of argument N."""

    node: Node

    def evaluate(self, shapes: Sequence[Sequence[int] | None]) -> int | None:
        """The byte count for arguments of these shapes (None where a needed shape is unknown)."""
        return _evaluate(self.node, shapes)

    def __str__(self) -> str:
        return _render(self.node, top=True)


def size_expr(value: Any) -> SizeExpr | None:
    """The formula behind an SSA index value, or None where it depends on anything but argument dimensions."""
    node = _node(value, 0)
    return None if node is None or node[0] == "const" else SizeExpr(node)


def _node(value: Any, depth: int) -> Node | None:
    from iree.compiler import ir

    if value is None or depth > 64 or isinstance(value.owner, ir.Block):
        return None
    op = op_of(value.owner)
    name = op.name
    if name == "arith.constant":
        try:
            return ("const", int(ir.IntegerAttr(op.attributes["value"]).value))
        except (ValueError, KeyError):
            return None
    if name == "hal.buffer_view.dim":
        view = op.operands[0]
        if not isinstance(view.owner, ir.Block):
            return None
        argument = ir.BlockArgument(view).arg_number
        return ("dim", argument, int(ir.IntegerAttr(op.attributes["index"]).value))
    if name in _CASTS:
        return _node(op.operands[0], depth + 1)
    if name in _BINARY and len(list(op.operands)) == 2:
        left, right = (_node(v, depth + 1) for v in op.operands)
        if left is None or right is None:
            return None
        if left[0] == "const" and right[0] == "const":
            folded = _apply(_BINARY[name], left[1], right[1])
            return None if folded is None else ("const", folded)
        return (_BINARY[name], left, right)
    return None


def _apply(operator: str, a: int, b: int) -> int | None:
    if operator == "*":
        return a * b
    if operator == "+":
        return a + b
    if operator == "-":
        return a - b
    if operator == "max":
        return max(a, b)
    if operator == "min":
        return min(a, b)
    if b == 0:
        return None
    if operator == "/":
        return a // b
    if operator == "ceildiv":
        return -(-a // b)
    if operator == "%":
        return a % b
    if operator == "align":
        return -(-a // b) * b
    return None


def _evaluate(node: Node, shapes: Sequence[Sequence[int] | None]) -> int | None:
    kind = node[0]
    if kind == "const":
        return int(node[1])
    if kind == "dim":
        argument, dimension = node[1], node[2]
        shape = shapes[argument] if argument < len(shapes) else None
        return None if shape is None or dimension >= len(shape) else int(shape[dimension])
    left, right = _evaluate(node[1], shapes), _evaluate(node[2], shapes)
    return None if left is None or right is None else _apply(kind, left, right)


def _factors(node: Node) -> list[Node]:
    return [*_factors(node[1]), *_factors(node[2])] if node[0] == "*" else [node]


def _render(node: Node, top: bool = False) -> str:
    kind = node[0]
    if kind == "const":
        return str(node[1])
    if kind == "dim":
        return f"arg{node[1]}[{node[2]}]"
    if kind == "*":
        factors = sorted(_factors(node), key=lambda n: n[0] != "const")  # the element size first
        return "*".join(_render(f) for f in factors)
    if kind in ("+", "-", "/", "%"):
        text = f"{_render(node[1])}{kind}{_render(node[2])}"
        return text if top else f"({text})"
    return f"{kind}({_render(node[1], True)}, {_render(node[2], True)})"
