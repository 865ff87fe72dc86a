"""The plain tables of the headless commands: `gputop devices`, `gputop sessions`, and the aligned-columns helper.

They must read well in a CI log or over a slow SSH link: aligned plain text,
no colour codes, written from the same dictionaries `--json` writes.
"""

from __future__ import annotations

from typing import Any

from gputop.tui.bridge import human_bytes, seconds

__all__ = ["SESSIONS_TARGET_MIN", "aligned", "cut_middle", "devices_table", "keep_tail", "sessions_table"]


def devices_table(rows: list[dict[str, Any]]) -> str:
    header = ("ID", "BACKEND", "AVAILABLE", "MEMORY", "NAME / REASON")
    lines = [header]
    for row in rows:
        detail = row["name"]
        if row.get("reason") and not row["available"]:
            detail = row["reason"]
        lines.append(
            (
                row["id"],
                row["backend"],
                "yes" if row["available"] else "no",
                human_bytes(row["memory_total_bytes"]),
                detail,
            )
        )
    widths = [max(len(str(line[i])) for line in lines) for i in range(4)]
    out = []
    for line in lines:
        cells = [str(line[i]).ljust(widths[i]) for i in range(4)]
        out.append("  ".join(cells) + "  " + str(line[4]))
    return "\n".join(out)


def aligned(rows: list[tuple[str, ...]]) -> str:
    """Left-aligned columns, two spaces apart; the last column is not padded."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows)


def cut_middle(text: str, width: int) -> str:
    """`text` in at most `width` characters, its middle given up for `…` (a path keeps its start and file name)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    head = (width - 1) // 2
    tail = width - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


def keep_tail(text: str, width: int) -> str:
    """`text` in at most `width` characters, its start given up for `…`: a path keeps its file name and the
    folders nearest it, cut at a `/` where that leaves them whole (`…/models/relu.onnx`)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[len(text) - width :]
    tail = text[len(text) - (width - 1) :]
    slash = tail.find("/")
    if 0 < slash < len(tail) - 1:
        tail = tail[slash:]
    return "…" + tail


SESSIONS_TARGET_MIN = 16  # the TARGET column gives way down to this before it shrinks to 8 (see _fit_sessions)


def sessions_table(entries: list[dict[str, Any]], width: int | None = None) -> str:
    """`gputop sessions`: one row per session, oldest first; within `width` columns when given, by
    cutting the start of long targets, keeping their file names (never the id, which `report`, `open`
    and `attach` take)."""
    import time

    rows: list[tuple[str, ...]] = [("STARTED", "ID", "TARGET", "DEVICE", "STATE", "DURATION", "SAMPLES")]
    for e in entries:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e["started_at"]))
        state = e["state"] if e.get("exit_code") in (None, 0) else f"{e['state']} ({e['exit_code']})"
        rows.append(
            (
                started,
                e["id"],
                e.get("target") or "-",
                e.get("device") or "-",
                state,
                seconds(e.get("duration_s")),
                "-" if e.get("samples") is None else str(e["samples"]),
            )
        )
    return aligned(rows if width is None else _fit_sessions(rows, width))


def _fit_sessions(rows: list[tuple[str, ...]], width: int) -> list[tuple[str, ...]]:
    """The sessions table within `width`: long targets lose their start (down to SESSIONS_TARGET_MIN),
    then SAMPLES goes, then STARTED (a default id starts with the same time), then targets shrink to 8,
    then DURATION goes, then DEVICE: the id, a target's tail and the state are what a row is for."""

    def fitted(rows: list[tuple[str, ...]], least: int) -> tuple[list[tuple[str, ...]], bool]:
        target = rows[0].index("TARGET")
        others = sum(max(len(row[i]) for row in rows) + 2 for i in range(len(rows[0])) if i != target)
        room = max(least, width - others)
        cut = [(*row[:target], keep_tail(row[target], room), *row[target + 1 :]) for row in rows]
        return cut, max(len(line) for line in aligned(cut).splitlines()) <= width

    steps: list[tuple[tuple[str, ...], int]] = [
        ((), SESSIONS_TARGET_MIN),
        (("SAMPLES",), SESSIONS_TARGET_MIN),
        (("SAMPLES", "STARTED"), SESSIONS_TARGET_MIN),
        (("SAMPLES", "STARTED"), 8),
        (("SAMPLES", "STARTED", "DURATION"), 8),
        (("SAMPLES", "STARTED", "DURATION", "DEVICE"), 8),
    ]
    for drop, least in steps:
        keep = [i for i, name in enumerate(rows[0]) if name not in drop]
        narrowed, fits = fitted([tuple(row[i] for i in keep) for row in rows], least)
        if fits:
            return narrowed
    return narrowed  # ids too long for the terminal: the rows wrap, whole ids and all
