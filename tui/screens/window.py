"""What every window gputop opens over its panes has in common: centred, and opaque.

Textual's `ModalScreen` lets the screen beneath show through, dimmed; over
live panes that is noise, and around a window's rounded border the panes'
own borders and numbers read as part of it (issue 29: "modal borders show
the panes beneath"). Every window derives from `Window` and so hides the
panes entirely, in one place. A window that draws one picture of the newest
snapshot (the roofline, the layer view) derives from `DrawnWindow`, which
redraws it as snapshots arrive and as the terminal is resized (its key closes it through Screen's own
`action_dismiss`).
"""

from __future__ import annotations

from typing import TypeVar

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from gputop.tui.bridge import RunSnapshot

__all__ = ["DrawnWindow", "Window"]

ResultT = TypeVar("ResultT")


class Window(ModalScreen[ResultT]):
    """A modal window over the app that hides what is beneath it (an opaque background)."""

    DEFAULT_CSS = """
    Window { align: center middle; background: $background; }
    Window:ansi { background: ansi_default; }
    """


class DrawnWindow(Window[None]):
    """A window of one picture of the newest snapshot, fitted to the window: a title line (markup) over a body
    (`BODY_ID`) that `draw` fills; redrawn whenever a snapshot arrives (`show`) or the terminal is resized."""

    TITLE = ""
    BODY_ID = ""

    def __init__(self, snapshot: RunSnapshot | None) -> None:
        super().__init__()
        self._snapshot = snapshot

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.TITLE)
            yield Static(id=self.BODY_ID)

    def on_mount(self) -> None:
        self.show(self._snapshot)

    def on_resize(self) -> None:
        self.show(self._snapshot)

    def show(self, snapshot: RunSnapshot | None) -> None:
        self._snapshot = snapshot
        body = next(iter(self.query(f"#{self.BODY_ID}").results(Static)), None)
        if body is None:  # pushed but not composed yet (a snapshot came in between): on_mount draws the newest
            return
        width, height = body.size.width or self.app.size.width - 8, body.size.height or self.app.size.height - 8
        body.update(self.draw(snapshot, width, height))

    def draw(self, snapshot: RunSnapshot | None, width: int, height: int) -> RenderableType:
        """The body for `snapshot` in `width` x `height` cells."""
        raise NotImplementedError
