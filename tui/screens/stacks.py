"""The program's own Python (`w`): where a watched program's time goes, by its own lines, and its calls' parts.

`gputop -- python app.py` samples the program's Python from outside with py-spy
(core/program/stacks.py) and takes each call apart in the program
(arguments, invoke, results, reads back). This window puts the two side by side:
each function's parts, the time between its calls, then the program's busiest
lines with how much of each was inside an IREE call. Redrawn as snapshots come.
"""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding

from gputop.tui.bridge import RunSnapshot, ms, to_json
from gputop.tui.screens.window import DrawnWindow
from gputop.tui.text.program import function_name, parts_line, stacks_lines

__all__ = ["NOT_A_PROGRAM", "StacksScreen", "stacks_text"]

NOT_A_PROGRAM = (
    "not a watched program: w shows a program's own Python beside its calls (gputop -- python app.py); "
    "for a run gputop makes, t shows where a call's time goes"
)


def stacks_text(snapshot: RunSnapshot | None, width: int, height: int) -> str:
    """Each function's parts and the program's busiest lines, fitted to `width` x `height`."""
    program = to_json(snapshot.program) if snapshot is not None and snapshot.program is not None else None
    if program is None:
        return NOT_A_PROGRAM
    lines = []
    for row in (program.get("functions") or [])[:4]:
        name = function_name(row)
        lines.append(f"{name}: {row.get('count', 0)} calls, p50 {ms(row.get('p50_ms'))}")
        parts = parts_line(row.get("parts"), short=width < 100)
        if parts:
            lines.append(f"  {parts}")
        if row.get("between_p50_ms") is not None:
            lines.append(f"  between calls {ms(row['between_p50_ms'])} (the program's own time, p50)")
    if not lines:
        lines.append("no calls yet")
    lines.append("")
    stacks = program.get("stacks")
    if stacks is None:
        lines.append("the program's Python: the first samples come within 5 s (py-spy, from outside the program)")
    else:
        room = max(height - len(lines) - 1, 3)
        lines.extend(stacks_lines(stacks, limit=room))
    return "\n".join(line if len(line) <= width else line[: width - 1] + "…" for line in lines)


class StacksScreen(DrawnWindow):
    """The program's calls taken apart and its own Python, sampled."""

    DEFAULT_CSS = """
    StacksScreen > Vertical { width: 96%; height: 92%; border: round $accent; background: $surface; padding: 0 1; }
    StacksScreen #stacks-body { height: 1fr; overflow-y: auto; }
    """
    BINDINGS = [Binding("escape,w", "dismiss", "Close")]
    TITLE = "[b]Where the time goes[/b]  each call's parts, and the program's own lines (escape closes)"
    BODY_ID = "stacks-body"

    def draw(self, snapshot: RunSnapshot | None, width: int, height: int) -> Text:
        return Text(stacks_text(snapshot, width, height))  # a file's name is not markup
