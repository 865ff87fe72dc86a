"""A multi-device run's exports in a table: where each was declared, produced and exported, and what moved.

`gputop affinity`, and the exports part of `gputop run`'s and `gputop
report`'s text. A flagged export says why in words (`FLAG_TEXT`); device
names carry their ids, so `device_a (cuda:0)` needs no legend.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FLAG_TEXT", "affinity_table"]


FLAG_TEXT = {
    "hidden_transfer": "HIDDEN TRANSFER: exported away from its producer",
    "transfer": "moved to another device (before use, or before its export)",
    "undeclared": "undeclared affinity",
    "passthrough": "argument returned unchanged: it stays where the caller put it",
}


def affinity_table(exports: list[dict[str, Any]], transfers: list[dict[str, Any]], names: dict[str, str]) -> str:
    """The affinity records as an aligned table, device names with their ids."""

    def dev(name: str | None) -> str:
        if not name:
            return "-"
        for separator in (",", "|"):  # several readers, or producers on different paths
            if separator in name:
                return separator.join(dev(part) for part in name.split(separator))
        return f"{name} ({names[name]})" if name in names else name

    def observed(value: int | None) -> str:
        return "?" if value is None else str(value) if value else "-"

    def moved(count: int, expr: str | None, from_call: bool | None) -> str:
        """A byte count; a dynamic size as its formula, or its value for the call's shapes marked `(call)`."""
        if expr and from_call:
            return f"{count} (call)"
        if expr:
            return expr
        return str(count) if count else "-"

    header = ("FUNCTION", "KIND", "#", "DECLARED", "EXPORTED ON", "PRODUCED/USED ON", "BYTES MOVED", "OBSERVED", "FLAG")
    rows = [header]
    for r in exports:
        rows.append(
            (
                r["function"],
                r["kind"],
                str(r["index"]),
                dev(r["declared"]) if r["declared"] else "undeclared",
                dev(r["export_affinity"]),
                dev(r["producer_affinity"]),
                moved(r["transfer_bytes"], r.get("transfer_bytes_expr"), r.get("bytes_from_call")),
                observed(r.get("observed_transfer_bytes")),
                FLAG_TEXT.get(r["flag"] or "", ""),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    dynamic = False
    for t in transfers:
        seen = t.get("observed_bytes")
        expr = t.get("bytes_expr")
        size = f"{t['bytes']} bytes" if not expr else f"{t['bytes']} bytes (= {expr} for the call's shapes)"
        if expr and not t.get("bytes_from_call"):
            size = f"{expr} bytes (dynamic)"
        dynamic = dynamic or bool(expr)
        lines.append(
            f"transfer  {t['function']}: {dev(t['source'])} -> {dev(t['target'])}, {size} ({t['op']})"
            + ("" if seen is None else f", observed {seen} bytes")
        )
    if dynamic:
        lines.append("dynamic sizes: argN[i] is dimension i of argument N; (call): computed from the call's shapes")
    return "\n".join(lines)
