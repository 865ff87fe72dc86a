"""A DataTable whose rows are keyed and updated in place, never cleared per tick.

Clearing a live table on every refresh loses the user's cursor and scroll
and costs a full re-render; Dolphie-style keyed rows change only the cells
whose text changed, inside one batch, and add or remove only the rows that
came or went.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.text import Text
from textual.widgets import DataTable


class KeyedTable(DataTable[object]):
    def __init__(self, columns: Sequence[str], *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False, show_cursor=True)
        self._column_names = tuple(columns)
        self._rows: dict[str, tuple[object, ...]] = {}

    def on_mount(self) -> None:
        for name in self._column_names:
            self.add_column(name, key=name)

    def sync(self, rows: Mapping[str, Sequence[object]]) -> None:
        """Make the table show exactly `rows` (key -> cells), touching only what changed."""
        with self.app.batch_update():
            for key in [k for k in self._rows if k not in rows]:
                self.remove_row(key)
                del self._rows[key]
            for key, cells in rows.items():
                cells = tuple(c if isinstance(c, Text) else str(c) for c in cells)
                old = self._rows.get(key)
                if old is None:
                    self.add_row(*cells, key=key)
                elif old != cells:
                    for name, before, after in zip(self._column_names, old, cells, strict=True):
                        if before != after:
                            self.update_cell(key, name, after, update_width=True)
                self._rows[key] = cells
