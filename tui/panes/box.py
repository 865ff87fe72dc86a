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
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from rich.cells import cell_len
from rich.text import Text
from textual.containers import Vertical
from textual.visual import VisualType, visualize
from textual.widgets import DataTable, Static

from gputop.tui.bridge import RunSnapshot

__all__ = ["COLUMNS", "BoxPane", "LayoutColumn", "share_rows", "show_text"]

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
    # What the pane does with rows its column leaves empty (`take_rows`): its table shows more of its
    # rows (the table's id, and the rows it has without them), and its chart grows taller (the chart's
    # id and its own height). A table takes only the rows it can fill; a chart takes any.
    TALLER_TABLE: ClassVar[tuple[str, int] | None] = None
    TALLER_CHART: ClassVar[tuple[str, int] | None] = None
    extra_rows: int = 0  # the rows given now, beyond the pane's own

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "TITLE" in cls.__dict__:
            cls.BORDER_TITLE = cls.TITLE  # the frame's title is the declared one, not a second copy

    def on_mount(self) -> None:
        self.take_rows(0)  # the table's and the chart's own heights, from the declarations above

    def show(self, snapshot: RunSnapshot) -> None:
        """Draw `snapshot`: every pane redraws from each snapshot the app draws."""
        raise NotImplementedError

    def rows_wanted(self) -> int:
        """The rows beyond its own the pane could fill now (its table's hidden rows); a chart takes any."""
        if self.TALLER_TABLE is None:
            return 0
        selector, own = self.TALLER_TABLE
        table = self.query_one(selector, DataTable)
        return max(0, table.row_count + 1 - own) if table.display else 0  # +1: the header row

    def rows_in_use(self) -> int:
        """The rows beyond its own that the pane's table and chart take in the layout on screen now
        (a height just set is not laid out yet: what counts is what the screen shows)."""
        used = 0
        if self.TALLER_TABLE is not None:
            selector, own = self.TALLER_TABLE
            table = self.query_one(selector, DataTable)
            if table.display:
                used += max(0, table.outer_size.height - min(own, table.row_count + 1))
        if self.TALLER_CHART is not None:
            selector, own = self.TALLER_CHART
            chart = self.query_one(selector)
            used += max(0, chart.size.height - own) if chart.display else 0
        return used

    def take_rows(self, rows: int) -> None:
        """Use `rows` rows beyond the pane's own: the table's hidden rows first, then a taller chart."""
        self.extra_rows = rows
        to_table = min(rows, BoxPane.rows_wanted(self))
        if self.TALLER_TABLE is not None:
            selector, own = self.TALLER_TABLE
            self.query_one(selector).styles.max_height = own + to_table
        if self.TALLER_CHART is not None:
            selector, own = self.TALLER_CHART
            self.query_one(selector).styles.height = own + rows - to_table


def share_rows(panes: Sequence[BoxPane], available: int, used: int) -> bool:
    """Give the rows a column of `panes` leaves empty to them, top first: each pane what it can fill
    (a table's hidden rows), then the panes with a chart the rest, evenly. `available` is the column's
    height, `used` what its panes take on screen now, rows given before included: what they need is
    that less `rows_in_use`. Only changes are applied (each is a layout pass); with no rows free, every
    pane goes back to its own height. True when something changed."""
    left = max(0, available - used + sum(pane.rows_in_use() for pane in panes))
    given = {}
    for pane in panes:
        given[pane] = min(pane.rows_wanted(), left)
        left -= given[pane]
    charts = [pane for pane in panes if pane.TALLER_CHART is not None]
    for index, pane in enumerate(charts):
        given[pane] += left // len(charts) + (1 if index < left % len(charts) else 0)
    changed = False
    for pane, rows in given.items():
        if rows != pane.extra_rows:
            pane.take_rows(rows)
            changed = True
    return changed


# What each Static shows now: (what it is, its height in rows, at what width), so that a frame that changes nothing
# costs nothing, and one that changes text without changing its height costs no layout pass.
_SHOWN: weakref.WeakKeyDictionary[Static, tuple[object, int | None, int]] = weakref.WeakKeyDictionary()


def show_text(widget: Static, content: VisualType, key: object = None) -> None:
    """Show `content` in `widget` only if it changed, and without a layout pass when its height cannot change.

    A layout pass over the whole screen was most of a frame's cost, paid ten
    times a second for numbers that tick in place. Text (a `str` or a Rich
    `Text`) as many rows high as before at the same width is repainted only;
    text that wraps is measured as the layout would measure it (Textual's own
    `get_height` at the widget's width: a narrow Memory pane wraps its device
    line on every frame, and laid the screen out again each time). Anything
    else (a table: give it a `key` saying what it shows) is laid out again,
    and only when it changed.
    """
    width = widget.content_region.width
    height: int | None = None
    if isinstance(content, str | Text):
        plain = content.plain if isinstance(content, Text) else content
        key = (plain, tuple(content.spans)) if isinstance(content, Text) else plain
        lines = plain.split("\n")
        height = len(lines)
        if width > 0 and max(map(cell_len, lines)) > width:  # measured as Widget.get_content_height measures it
            height = visualize(widget, content).get_height(widget.styles, width)  # type: ignore[arg-type]
    shown = _SHOWN.get(widget)
    if key is not None and shown is not None and shown[0] == key:
        return
    same_height = height is not None and shown is not None and shown[1:] == (height, width) and width > 0
    _SHOWN[widget] = (key, height, width)
    widget.update(content, layout=not same_height)
