"""A DataTable whose rows are keyed and updated in place, never cleared per tick, that never scrolls sideways.

Clearing a live table on every refresh loses the user's cursor and scroll
and costs a full re-render; Dolphie-style keyed rows change only the cells
whose text changed, inside one batch, and add or remove only the rows that
came or went. Each column has a priority: when the table is narrower than
its columns, the lowest-priority ones are left out (the table is rebuilt
only when the set of columns shown or a header changes: a resize, a unit
that moved), so what shows is whole and nothing hides behind a scrollbar.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from rich.cells import cell_len
from rich.text import Text
from textual.actions import SkipAction
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

__all__ = ["Column", "KeyedTable", "text_width"]


class Column(NamedTuple):
    """A column's key and how much it matters: 0 always shows; higher numbers go first when room is short.

    A negative priority hides the column until `sync` gives it another (the Kernels table's `vs base`).
    """

    name: str
    priority: int = 0


def text_width(cell: object) -> int:
    return cell.cell_len if isinstance(cell, Text) else cell_len(str(cell))


class KeyedTable(DataTable[object]):
    DEFAULT_CSS = """
    KeyedTable { overflow-x: hidden; }
    """

    def __init__(self, columns: Sequence[str | Column], *, id: str | None = None, selectable: bool = False) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False, show_cursor=True)
        self._selectable = selectable  # whether `enter` on a row means anything here (the Captures table's does)
        self._declared = tuple(c if isinstance(c, Column) else Column(c) for c in columns)
        self._position = {c.name: i for i, c in enumerate(self._declared)}  # a column's place in a row's cells
        self._labels: dict[str, str] = {c.name: c.name for c in self._declared}
        self._priorities: dict[str, int] = {c.name: c.priority for c in self._declared}
        self._rows: dict[str, tuple[object, ...]] = {}  # every column's cell, shown or not
        self.shown: tuple[str, ...] = ()  # the columns on screen now
        self._shown_labels: tuple[str, ...] = ()

    @property
    def columns_all(self) -> tuple[Column, ...]:
        """The columns that may show now (a negative priority keeps one out), in declared order."""
        return tuple(c for c in self._declared if self._priorities[c.name] >= 0)

    def on_mount(self) -> None:
        self._refit()

    def action_select_cursor(self) -> None:
        """`enter`: a row's selection where the table has a use for it; else the key goes on to the app, which
        answers it (a table that took it would leave the key silent)."""
        if not self._selectable or not self.row_count:
            raise SkipAction()
        super().action_select_cursor()

    def on_resize(self) -> None:
        self._refit()

    def _fit(self, width: int) -> tuple[str, ...]:
        """The columns that fit in `width` cells, dropping the lowest priority first (declared order kept)."""
        pad = 2 * self.cell_padding
        widths = {}
        for col in self.columns_all:
            index = self._position[col.name]
            cells = [text_width(row[index]) for row in self._rows.values()]
            widths[col.name] = max([cell_len(self._labels[col.name]), *cells]) + pad
        priority = self._priorities
        kept = list(self.columns_all)
        if width > 0:
            while sum(widths[c.name] for c in kept) > width and any(priority[c.name] > 0 for c in kept):
                drop = max((c for c in kept if priority[c.name] > 0), key=lambda c: (priority[c.name], kept.index(c)))
                kept.remove(drop)
        return tuple(c.name for c in kept)

    def _available(self) -> int:
        width = self.size.width
        if width and len(self._rows) + 1 > (self.size.height or len(self._rows) + 1):
            width -= self.styles.scrollbar_size_vertical  # rows beyond the height: a vertical bar takes room
        return width

    def _refit(self) -> None:
        shown = self._fit(self._available())
        labels = tuple(self._labels[name] for name in shown)
        if shown == self.shown and labels == self._shown_labels and self.columns:
            return
        self.shown, self._shown_labels = shown, labels
        cursor = self.cursor_row
        self.clear(columns=True)
        for name, label in zip(shown, labels, strict=True):
            self.add_column(label, key=name)
        for key, cells in self._rows.items():
            self.add_row(*self._visible(cells), key=key)
        if self._rows:
            self.move_cursor(row=min(cursor, len(self._rows) - 1))

    def _visible(self, cells: tuple[object, ...]) -> list[object]:
        return [cells[self._position[name]] for name in self.shown]

    def sync(
        self,
        rows: Mapping[str, Sequence[object]],
        labels: Mapping[str, str] | None = None,
        priorities: Mapping[str, int] | None = None,
    ) -> None:
        """Make the table show exactly `rows` (key -> a cell per column), touching only what changed.

        `labels` renames column headers (a unit that changed with the column's range); `priorities`
        changes how much a column matters (the device column, once there are two devices).
        With no rows the table hides (headers over nothing say nothing; each pane's hint says why).
        """
        self.display = bool(rows)
        with self.app.batch_update():
            if labels:
                self._labels.update(labels)
            if priorities:
                self._priorities.update(priorities)
            old_rows = self._rows
            self._rows = {
                key: tuple(c if isinstance(c, Text) else str(c) for c in cells) for key, cells in rows.items()
            }
            before = (self.shown, self._shown_labels)
            self._refit()
            if (self.shown, self._shown_labels) != before:
                return  # rebuilt whole
            for key in [k for k in old_rows if k not in self._rows]:
                self.remove_row(key)
            for key, cells in self._rows.items():
                old = old_rows.get(key)
                if old is None:
                    self.add_row(*self._visible(cells), key=key)
                elif old != cells:
                    for name, before_cell, after_cell in zip(
                        self.shown, self._visible(old), self._visible(cells), strict=True
                    ):
                        if before_cell != after_cell:
                            # Widths only grow, so only a wider cell needs them measured again: that pass
                            # clears every cache of the table and costs the viewer on each snapshot.
                            wider = text_width(after_cell) > self.columns[ColumnKey(name)].content_width
                            self.update_cell(key, name, after_cell, update_width=wider)

    def row_cells(self, key: str) -> dict[str, object]:
        """Every column's cell of row `key`, shown or not, by column name."""
        return {c.name: cell for c, cell in zip(self._declared, self._rows[key], strict=True)}

    @property
    def row_keys(self) -> list[str]:
        """The keys of the rows shown, in order (what tests read to know which run's rows these are)."""
        return list(self._rows)
