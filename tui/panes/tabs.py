"""The tab row of the compact layout: every pane's name, the one in front marked.

Below 110 columns (or 32 rows) the panes take turns in one place; this row
keeps every pane's title on screen so the user knows what there is and
which key brings it forward (1-5; p and c bring Kernels and Captures with
their action). It draws the panes it is given (the app gives it the
registry, `gputop.tui.panes.PANES`), so no pane's title or key is repeated here.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from gputop.tui.panes.box import BoxPane, show_text

__all__ = ["PaneTabs"]


class PaneTabs(Static):
    DEFAULT_CSS = """
    PaneTabs { height: 1; padding: 0 1; background: $panel; }
    """

    def __init__(self, panes: Sequence[type[BoxPane]], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.panes = tuple(panes)  # in the order they are drawn: their keys' order

    def show_front(self, pane_id: str) -> None:
        line = Text(no_wrap=True, overflow="ellipsis")
        for index, pane in enumerate(self.panes):
            if index:
                line.append(" ")
            style = "bold reverse" if pane_id == pane.PANE_ID else ""
            line.append(f" {pane.KEY} ", style="bold " + style if style else "dim")
            line.append(f"{pane.TITLE} ", style=style)
        show_text(self, line)
