"""Walking an MLIR module's operations through IREE's Python bindings, for every reader of IR.

Three readers of compiler output walk operations the same way: the affinity
analysis (stream IR's functions), its dataflow (each execute region's body)
and the work counter (the executable sources' linalg ops). The bindings hand
back an `OpView` from one call and a bare `Operation` from another, and an
SSA value's owner may be either; these are the walk and the unwrapping, once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["children", "op_of", "walk"]


def children(op: Any) -> Iterator[Any]:
    """The operations directly inside `op`'s regions, in order, as bare operations."""
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                yield child.operation


def walk(op: Any) -> Iterator[Any]:
    """Every operation nested in `op`, depth first, each before its own children."""
    for child in children(op):
        yield child
        yield from walk(child)


def op_of(owner: Any) -> Any:
    """An operation as a bare `Operation`, whether the bindings gave an `OpView` or an `Operation`."""
    return owner.operation if hasattr(owner, "operation") else owner
