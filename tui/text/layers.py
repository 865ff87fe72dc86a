"""Kernels in the model's own words: the `from` cell, a kernel's source ops in full, and time by layer.

The engine names each kernel's source ops (`kernels[].source_ops`: ONNX nodes
or source lines) and groups the kernel time by them (`layers`); this module
writes them the one way every face shows them: the Kernels pane's `from`
column and the line under its table, the layer view (`L`), and
`gputop run --profile`'s `layers` section. They read the report's JSON form,
as `gputop report` and a recorded session have it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from gputop.tui.bridge import TIME_US, KernelTiming, column, percent, to_json

__all__ = ["from_cell", "layer_rows", "layers_lines", "origin_of", "short_layer", "source_ops_text"]

Row = Mapping[str, Any]
_OP_TYPE = re.compile(r"[A-Z][A-Za-z0-9]*(?:_\d+)?")


def short_layer(op: Row) -> str:
    """A source op in a dozen characters: an ONNX path's last scopes (`layer1.0/conv1` for
    `/layer1/layer1.0/conv1/Conv`), else its line (`model.mlir:7:9`), else its op."""
    name = op.get("name")
    if name:
        parts = [part for part in str(name).split("/") if part]
        if len(parts) > 1 and (parts[-1] == op.get("op") or _OP_TYPE.fullmatch(parts[-1])):
            parts = parts[:-1]  # torch's exporter ends each node's path with its op type (`Relu`, `Add_1`)
        return "/".join(parts[-2:]) or str(name)
    return str(op.get("loc") or op.get("op") or "?")


def origin_of(kernel: KernelTiming) -> dict[str, Any]:
    """The part of a kernel's JSON form these functions read, without converting the whole kernel (the Kernels
    pane and the roofline draw many a second)."""
    return {"source_ops": to_json(kernel.source_ops), "source_ops_reason": kernel.source_ops_reason}


def from_cell(kernel: Row) -> str:
    """The `from` column: the first source op, and `+N` for the others fused into the kernel; `-` without."""
    ops = kernel.get("source_ops") or []
    if not ops:
        return "-"
    more = f" +{len(ops) - 1}" if len(ops) > 1 else ""
    return short_layer(ops[0]) + more


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
            str(layer.get("name")),
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
    group named in full as the kernel table names its kernels in full; one line saying why where no kernel has
    source ops."""
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
    """The layer rows as aligned text, the layer's name cut at the left to fit `width` (its end says most)."""
    label, body = layer_rows(layers)
    header = ("layer", "op", label, "share", "kernels")
    rows = [header, *body]
    widths = [max(len(row[i]) for row in rows) for i in range(1, len(header))]
    rest = sum(widths) + 2 * len(widths)
    name_width = max(12, min(max(len(row[0]) for row in rows), width - rest))

    def name(text: str, op: str) -> str:
        if len(text) > name_width:  # each layer of the group by its last scopes, then cut at the left
            ops = op.split(" + ")
            text = " + ".join(short_layer({"name": part, "op": _op_of(part, ops)}) for part in text.split(" + "))
        return text if len(text) <= name_width else "…" + text[-(name_width - 1) :]

    lines = []
    for row in rows:
        cells = [(name(row[0], row[1]) if row is not header else row[0]).ljust(name_width), row[1].ljust(widths[0])]
        cells += [text.rjust(w) for text, w in zip(row[2:], widths[1:], strict=True)]
        lines.append("  ".join(cells).rstrip())
    return lines


def _op_of(name: str, ops: list[str]) -> str | None:
    """Which of a group's op types ends this layer's ONNX path (`/layer1/conv1/Conv`: Conv), if any."""
    last = name.rstrip("/").rsplit("/", 1)[-1]
    return last if last in ops else None
