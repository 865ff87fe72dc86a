"""Kernels in the model's own words: the `from` cell, a kernel's source ops in full, and time by layer.

The engine names each kernel's source ops (`kernels[].source_ops`: ONNX nodes
or source lines), groups the kernel time by them (`layers`) and names a group
of ops one way (`layer_name`: their common scope first, `layer1.0: conv2 +
add`); this module lays them out for every face: the Kernels pane's `from`
column and the line under its table, the layer view (`L`), and
`gputop run --profile`'s `layers` section. They read the report's JSON form,
as `gputop report` and a recorded session have it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gputop.tui.bridge import TIME_US, KernelTiming, column, named_layer, percent, to_json

__all__ = [
    "FROM_WIDTH",
    "REPORT_FROM_WIDTH",
    "from_cell",
    "layer_rows",
    "layer_table",
    "layers_lines",
    "origin_of",
    "source_ops_text",
]

Row = Mapping[str, Any]
# The `from` column's most: at 120 columns the Kernels pane's table (68 cells) holds kernel, from, count and
# avg, at 80 (the pane forward, 74 cells) share too, as before names were scoped; a longer name drops ops
# from its end (`layer2.0: conv2 +4`).
FROM_WIDTH = 23
# In `gputop run --profile`'s kernel table, beside kernel names of 50 characters: a block's ops whole, a kernel
# fused across many blocks counted (`layer4.1: conv2 + add +6`); the `layers` section below names each whole.
REPORT_FROM_WIDTH = 48
_GAP = "  "


def origin_of(kernel: KernelTiming) -> dict[str, Any]:
    """The part of a kernel's JSON form these functions read, without converting the whole kernel (the Kernels
    pane and the roofline draw many a second)."""
    return {
        "source_ops": to_json(kernel.source_ops),
        "source_ops_reason": kernel.source_ops_reason,
        "work": kernel.work,
    }


def from_cell(kernel: Row, width: int | None = None) -> str:
    """The `from` column: the kernel's source ops by their common scope first (`layer1.0: conv2 + add`, the
    engine's `layer_name`), within `width`; `-` without."""
    return named_layer(kernel, width) or "-"


def source_ops_text(kernel: Row) -> str:
    """Every source op of one kernel, in full: `from /layers/conv1/Conv (Conv, model.mlir:12:10), ...`,
    or why they are not known (empty for a run recorded before gputop named them)."""
    ops = kernel.get("source_ops") or []
    if not ops:
        reason = kernel.get("source_ops_reason")
        return f"from: not known: {reason}" if reason else ""  # a run recorded before gputop named them: nothing
    parts = []
    for op in ops:
        if op.get("name"):  # `/layer1/conv1/Conv (Conv, model.mlir:12:10)`
            where = ", ".join(str(part) for part in (op.get("op"), op.get("loc")) if part)
            parts.append(f"{op['name']} ({where})")
        else:  # `linalg.matmul (mlp.mlir:7:9)`
            parts.append(f"{op.get('op')} ({op.get('loc')})" if op.get("loc") else str(op.get("op")))
    return "from " + ", ".join(parts)


def layer_rows(layers: Sequence[Row]) -> tuple[str, list[tuple[str, str, str, str, str]]]:
    """The time column's header (`per call µs`, in the one unit that suits its values) and (layer, op,
    time per call, share, kernels) for each group of source ops, as the engine ordered them."""
    label, times = column("per call", [1000.0 * float(layer.get("ms_per_call") or 0.0) for layer in layers], TIME_US)
    rows = [
        (
            named_layer(layer),
            str(layer.get("op") or "-"),
            time,
            percent(100 * float(layer.get("share") or 0.0)),
            str(len(layer.get("kernels") or ())),
        )
        for layer, time in zip(layers, times, strict=True)
    ]
    return label, rows


def layers_lines(report: Row, width: int = 10_000) -> list[str]:
    """`gputop run --profile`'s `layers` section: the kernel time by the model's layers, largest first, each
    group named whole by its common scope first, as the kernel table's `from` names it; one line saying why
    where no kernel has source ops."""
    layers = report.get("layers") or []
    if not layers:
        return []
    profile = report.get("profile") or {}
    if profile.get("source_ops_reason"):
        return [f"layers    not known: {profile['source_ops_reason']}"]
    kernels = sum(len(layer.get("kernels") or ()) for layer in layers)
    lines = [f"layers    kernel time by the model's layers: {len(layers)} groups of ops from {kernels} kernels"]
    lines.extend("  " + line for line in layer_table(layers, width - 2))
    return lines


def layer_table(layers: Sequence[Row], width: int) -> list[str]:
    """The layer rows as aligned text within `width`, one line each: the numbers whole, the name given the
    room and the op types a third of what is left, each shortened at its end (`layer2.0: conv2 +4`)."""
    label, body = layer_rows(layers)
    header = ("layer", "op", label, "share", "kernels")
    numbers = [max(len(row[i]) for row in (header, *body)) for i in range(2, len(header))]
    room = width - sum(numbers) - len(_GAP) * (len(header) - 1)
    name_width, op_width = (max(len(row[i]) for row in (header, *body)) for i in (0, 1))
    if name_width + op_width > room:
        op_width = min(op_width, max(len("op"), room // 3))
        name_width = min(name_width, max(len("layer"), room - op_width))
        op_width = max(op_width, room - name_width)
    lines = [_line(header, name_width, op_width, numbers)]
    for layer, row in zip(layers, body, strict=True):
        name, op = named_layer(layer, name_width), _fitted(row[1].split(" + "), op_width)
        lines.append(_line((name, op, *row[2:]), name_width, op_width, numbers))
    return lines


def _line(cells: Sequence[str], name_width: int, op_width: int, numbers: Sequence[int]) -> str:
    texts = [cells[0].ljust(name_width), cells[1].ljust(op_width)]
    texts += [text.rjust(w) for text, w in zip(cells[2:], numbers, strict=True)]
    return _GAP.join(texts).rstrip()


def _fitted(ops: list[str], width: int) -> str:
    """A group's op types within `width`: the first ones and how many more (`Conv + Add +2`)."""
    for keep in range(len(ops), 0, -1):
        text = " + ".join(ops[:keep]) + (f" +{len(ops) - keep}" if keep < len(ops) else "")
        if len(text) <= width:
            return text
    text = ops[0] + (f" +{len(ops) - 1}" if len(ops) > 1 else "")
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"
