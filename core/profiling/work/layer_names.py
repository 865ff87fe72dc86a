"""The one way a kernel's model layers are named in a cell: the ops' common scope first, then each op.

A kernel fused from `/layer2/layer2.0/conv2/Conv`, `/layer2/layer2.0/downsample/downsample.0/Conv` and
`/layer2/layer2.0/Add` (torch's exporter names every node by its module's path and its op type) is one
block's work. Written in full its name is 130 characters; cut at the left to fit a cell it loses the
block (`…nsample/downsample.0 + layer2/layer2.0`); each node by its last two scopes it reads as three
unrelated layers, an `Add` as the block itself. Named by the scope its ops share, then each op by what
is left of its path, it reads `layer2.0: conv2 + downsample.0 + add`, and a narrower cell drops ops from
the end (`layer2.0: conv2 +2`), never the block. Ops from several blocks (an elementwise tail fused into
the next block's pooling) are named block by block, the one with most of them first:
`layer2.0: conv2 + add; avgpool`.

A kernel that only moves data (a copy the compiler made, padding a convolution's input) carries the
locations of the ops it copies for; it is named as a copy (`copy for conv1`), so a pad is not read as the
convolution a second time.

Every face names a group of ops with `layer_name`: the Kernels pane's `from` column, the layer view
(`L`), the roofline's legend, ncu's verdicts and `gputop run --profile`'s text; `named_layer` reads the
same from a kernel's or a layer's JSON form (a report, a recorded session).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gputop.core.records.profile import SourceOp

__all__ = ["COPY", "is_copy", "layer_name", "named_layer"]

COPY = "copy"  # a kernel's work (`KernelTiming.work`) when it computes nothing and moves bytes
COPY_FOR = "copy for "
# torch's exporter ends each node's path with its op type: `Relu`, `Add_1`, `GlobalAveragePool`.
_OP_TYPE = re.compile(r"[A-Z][A-Za-z0-9]*(?:_\d+)?")


@dataclass(frozen=True)
class _Scoped:
    """One op as a path of scopes (`layer2`, `layer2.0`, `conv2`) and, where its name ended in its op
    type, that type as a leaf (`add` for `/layer2/layer2.0/Add`)."""

    path: tuple[str, ...]
    leaf: str


@dataclass(frozen=True)
class _Part:
    """Ops that share a scope: the scope's last name (empty for none) and each op by the rest of its path."""

    scope: str
    leaves: tuple[str, ...]

    def text(self, keep: int) -> str:
        leaves = " + ".join(self.leaves[:keep])
        return f"{self.scope}: {leaves}" if self.scope else leaves


def is_copy(work: str | None) -> bool:
    """Whether a kernel whose work is `work` only moves data (`KernelTiming.work == "copy"`)."""
    return work == COPY


def layer_name(ops: Sequence[SourceOp], *, copy: bool = False, width: int | None = None) -> str:
    """A group of source ops by their common scope first: `layer2.0: conv2 + downsample.0 + add`.

    Ops of several scopes are named scope by scope (`layer2.0: conv2 + add; avgpool`); ops with no scope
    in common and none of their own are joined (`conv1 + relu`); an op without a name by its line or op
    (`mlp.mlir:7:9`). `copy`: the kernel only moves data for them (`copy for conv1`). Within `width`, ops
    are dropped from the end and counted (`layer2.0: conv2 +2`), and only a name that still does not fit
    is cut at its end (`copy for layer1.0: con… +1`). Empty for no ops.
    """
    # The block with most of the ops first (an elementwise tail fused into the next block's pooling is the
    # block's work); blocks of as many ops in the ops' order.
    parts = sorted(_parts([_scoped(op) for op in ops]), key=lambda part: -len(part.leaves))
    prefix = COPY_FOR if copy else ""
    total = sum(len(part.leaves) for part in parts)
    text = prefix + _joined(parts, total)
    if width is None or len(text) <= width:
        return text
    for keep in range(total - 1, 0, -1):
        shorter = f"{prefix}{_joined(parts, keep)} +{total - keep}"
        if len(shorter) <= width:
            return shorter
    more = f" +{total - 1}" if total > 1 else ""  # the first op cut, and how many more, still said
    return _cut(prefix + _joined(parts, 1), width - len(more)) + more if width > len(more) else _cut(text, width)


def named_layer(row: Mapping[str, Any], width: int | None = None) -> str:
    """`layer_name` of a kernel's or a layer's JSON form (`source_ops`, and `work` or `copy`); empty without
    source ops. A layer row of an older report (no `source_ops`) is named from its `name`."""
    layer = "kernels" in row  # a layer's row lists its kernels; a kernel's `name` is IREE's
    ops = row.get("source_ops")
    if not ops and layer:  # the kernels without source ops (`(no source ops)`), or an older report's row
        ops = [{"name": part} for part in str(row.get("name") or "").split(" + ") if part]
    source_ops = [SourceOp(op.get("name"), str(op.get("op") or ""), op.get("loc")) for op in ops or ()]
    copy = bool(row.get("copy")) or is_copy(row.get("work"))
    return layer_name(source_ops, copy=copy, width=width)


def _scoped(op: SourceOp) -> _Scoped:
    """`/layer1/layer1.0/conv1/Conv` -> (layer1, layer1.0, conv1) and `conv`; a name without scopes is its
    own path (`conv1`, `Conv_0`); an op without a name is a leaf only (its line, or its op)."""
    if not op.name:
        return _Scoped((), op.loc or op.op)
    parts = [part for part in op.name.split("/") if part]
    if "/" in op.name and parts and (parts[-1] == op.op or _OP_TYPE.fullmatch(parts[-1])):
        return _Scoped(tuple(parts[:-1]), parts[-1].lower())
    return _Scoped(tuple(parts) or (op.name,), "")


def _parts(ops: list[_Scoped]) -> list[_Part]:
    """The ops by scope: one part for their common scope, named by what is left of each op's path; where they
    have none, or two ops of different modules would read alike (`conv2` of `layer3.0` and of `layer3.2`, one
    kernel run for both), one part per scope below the common one, each named the same way."""
    if not ops:
        return []
    common = _common(op.path for op in ops)
    if common and all(len(op.path) == len(common) for op in ops):
        common = common[:-1]  # all one module's ops (`/classifier/fc/Gemm`): that module, in its parent's scope
        if common and ops[0].path[-1].startswith(common[-1] + "."):
            common = common[:-1]  # a Sequential's child (`downsample.0` of `downsample`): in the block around it
    leaves = [op.path[len(common) :][-1] if len(op.path) > len(common) else op.leaf for op in ops]
    alike = len(set(leaves)) < len({(op.path, leaf) for op, leaf in zip(ops, leaves, strict=True)})
    if not common or alike:
        below: dict[str, list[_Scoped]] = {}
        for index, op in enumerate(ops):  # each scope in the order of its first op; an op at this level alone
            below.setdefault(op.path[len(common)] if len(op.path) > len(common) else f"\0{index}", []).append(op)
        if len(below) > 1:
            return [part for group in below.values() for part in _parts(group)]
    return [_Part(common[-1] if common else "", tuple(dict.fromkeys(leaf for leaf in leaves if leaf)))]


def _common(paths: Any) -> tuple[str, ...]:
    paths = list(paths)
    common = paths[0]
    for path in paths[1:]:
        length = 0
        while length < min(len(common), len(path)) and common[length] == path[length]:
            length += 1
        common = common[:length]
    return tuple(common)


def _joined(parts: list[_Part], keep: int) -> str:
    """The first `keep` leaves, part by part: `; ` between parts where any names its scope, else ` + `."""
    texts = []
    for part in parts:
        if keep <= 0:
            break
        texts.append(part.text(keep))
        keep -= len(part.leaves)
    return ("; " if any(part.scope for part in parts) else " + ").join(texts)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"
