"""The tab row of the compact layout: every pane's name, the one in front marked.

Below 110 columns (or 32 rows) the panes take turns in one place; this row
keeps every pane's title on screen so the user knows what there is and
which key brings it forward (1-5; p and c bring Kernels and Captures with
their action).
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

TABS = (
    ("run", "Run"),
    ("memory", "Memory pools"),
    ("kernels", "Kernels"),
    ("exports", "Exports"),
    ("captures", "Captures"),
)


class PaneTabs(Static):
    DEFAULT_CSS = """
    PaneTabs { height: 1; padding: 0 1; background: $panel; }
    """

    def show_front(self, pane_id: str) -> None:
        line = Text(no_wrap=True, overflow="ellipsis")
        for number, (key, title) in enumerate(TABS, 1):
            if number > 1:
                line.append(" ")
            style = "bold reverse" if key == pane_id else ""
            line.append(f" {number} ", style="bold " + style if style else "dim")
            line.append(f"{title} ", style=style)
        self.update(line)
