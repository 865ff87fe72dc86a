"""The frame every live pane sits in, and what each pane declares about itself, once.

Run, Memory pools, Kernels, Exports and Captures look alike on purpose, so
the eye finds each by its title; one class holds that look so the frame is
one edit. Each pane also states here, as class variables, its id, its title,
the key that brings it forward and its place in the two-column layout: the
app builds its layout, its keys 1-5 and the compact layout's tab row from
those declarations (through the registry in `gputop.tui.panes`), so a new
pane is its own module and one line there.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from textual.containers import Vertical

from gputop.tui.bridge import RunSnapshot

__all__ = ["COLUMNS", "BoxPane", "LayoutColumn"]

LayoutColumn = Literal["left", "right"]
COLUMNS: tuple[LayoutColumn, ...] = ("left", "right")  # the wide layout's columns, left to right


class BoxPane(Vertical):
    """A live pane: a titled frame redrawn from every snapshot (`show`)."""

    DEFAULT_CSS = """
    BoxPane { height: auto; border: round $primary; padding: 0 1; }
    """
    PANE_ID: ClassVar[str]  # the widget's id, and the name `bring_forward` takes
    TITLE: ClassVar[str]  # on its frame and in the tab row
    KEY: ClassVar[str]  # the digit that brings it forward ("1".."9"); the tab row is in key order
    COLUMN: ClassVar[LayoutColumn]  # its column in the wide layout (one column in the compact one)
    ROW: ClassVar[int]  # its place in that column, top first

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "TITLE" in cls.__dict__:
            cls.BORDER_TITLE = cls.TITLE  # the frame's title is the declared one, not a second copy

    def show(self, snapshot: RunSnapshot) -> None:
        """Draw `snapshot`: every pane redraws from each snapshot the app draws."""
        raise NotImplementedError
