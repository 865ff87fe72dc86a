"""A RenderDoc capture in words: `gputop capture-info`'s text, and the rows its modal in the TUI shows.

One row per dispatch (its workgroups, its buffers, its GPU time where a replay
gave one), and a line on what the replay gave or why there was none.
"""

from __future__ import annotations

from typing import Any

from gputop.tui.bridge import fixed, human_bytes
from gputop.tui.text.tables import aligned

__all__ = ["DISPATCH_COLUMNS", "capture_text", "dispatch_rows", "replay_line"]

DISPATCH_COLUMNS = ("#", "dispatch", "workgroups", "buffers (binding: bytes)", "GPU µs")


def dispatch_rows(info: dict[str, Any]) -> list[tuple[str, ...]]:
    """One row per dispatch of a capture record (`capture-info --json`): the CLI's table and the modal's."""
    rows: list[tuple[str, ...]] = []
    for entry in info.get("dispatch_list") or []:
        counts = entry.get("workgroup_count")
        buffers = ", ".join(f"{b['binding']}: {human_bytes(b['bytes'])}" for b in entry.get("buffers") or [])
        name = entry["name"] + (f" ({entry['debug_name']})" if entry.get("debug_name") else "")
        duration = entry.get("gpu_duration_us")
        rows.append(
            (
                str(entry["index"]),
                name,
                "x".join(str(c) for c in counts) if counts else "indirect",
                buffers or "-",
                fixed(duration),
            )
        )
    return rows


def replay_line(info: dict[str, Any]) -> str | None:
    """What the replay gave, or why there was none; None when no replay was asked for."""
    replay = info.get("replay")
    if replay is None:
        return None
    if replay["ok"]:
        return f"replayed on {replay['device']}: {replay['reason']} ({replay.get('seconds') or 0:.1f} s)"
    return f"not replayed: {replay['reason']}"


def capture_text(info: dict[str, Any]) -> str:
    """`gputop capture-info FILE`: the capture, where it was made, its dispatches and the replay."""
    lines = [f"{info['path']}: {info['api']} capture, {info['bytes']} bytes, {info['dispatches']} dispatches"]
    if info.get("captured_on"):
        lines.append(f"captured on  {info['captured_on']}")
    lines.append(f"read by      {info.get('reader') or 'renderdoccmd'}")
    if info.get("reader_note"):
        lines.append(f"note         {info['reader_note']}")
    rows = dispatch_rows(info)
    if rows:
        lines.append("")
        lines.extend("  " + line for line in aligned([DISPATCH_COLUMNS, *rows]).splitlines())
    else:
        lines.extend(f"  {name}" for name in info.get("dispatch_names") or [])
    replay = replay_line(info)
    if replay:
        lines.append("")
        lines.append(replay)
    return "\n".join(lines)
