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

import weakref
from typing import Any, ClassVar, Literal

from rich.text import Text
from textual.containers import Vertical
from textual.visual import VisualType
from textual.widgets import Static

from gputop.tui.bridge import RunSnapshot

__all__ = ["COLUMNS", "BoxPane", "LayoutColumn", "show_text"]

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


# What each Static shows now: (what it is, how many lines), so that a frame that changes nothing costs nothing.
_SHOWN: weakref.WeakKeyDictionary[Static, tuple[object, int | None]] = weakref.WeakKeyDictionary()


def show_text(widget: Static, content: VisualType, key: object = None) -> None:
    """Show `content` in `widget` only if it changed, and without a layout pass when its height cannot change.

    A layout pass over the whole screen was most of a frame's cost, paid ten
    times a second for numbers that tick in place. Text (a `str` or a Rich
    `Text`) with as many lines as before, each within the widget's width, is
    repainted only; anything else (a table: give it a `key` saying what it
    shows) is laid out again, and only when it changed.
    """
    if isinstance(content, str | Text):
        plain = content.plain if isinstance(content, Text) else content
        key = (plain, tuple(content.spans)) if isinstance(content, Text) else plain
        lines = plain.split("\n")
        height: int | None = len(lines)
        if max(map(len, lines)) > widget.content_region.width:
            height = None  # it may wrap: lay it out
    else:
        height = None
    shown = _SHOWN.get(widget)
    if key is not None and shown is not None and shown[0] == key:
        return
    same_height = height is not None and shown is not None and shown[1] == height and widget.content_region.width > 0
    _SHOWN[widget] = (key, height)
    widget.update(content, layout=not same_height)
