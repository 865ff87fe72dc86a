"""The Captures pane: RenderDoc captures of the live Vulkan work, verified and listed.

Each row is a capture that another process has opened and counted, so a
listed capture is one that will load. `enter` on a row asks the app to open
its dispatch list (read, and replayed where this machine can, in a worker);
`o` opens the selected one in qrenderdoc when there is a display, and
otherwise says the command to open it elsewhere (over SSH there usually is none).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import DataTable, Static

from gputop.tui.bridge import RunSnapshot, human_bytes
from gputop.tui.panes.box import BoxPane, show_text
from gputop.tui.panes.table import Column, KeyedTable

__all__ = ["CapturesPane"]

COLUMNS = (Column("capture"), Column("size", 2), Column("dispatches", 1), Column("calls", 1))


class CapturesPane(BoxPane):
    PANE_ID = "captures"
    TITLE = "Captures"
    KEY = "5"
    COLUMN = "right"
    ROW = 2
    TALLER_TABLE = ("#captures-table", 6)
    DEFAULT_CSS = """
    CapturesPane DataTable { height: auto; }
    CapturesPane #captures-hint { height: auto; color: $text-muted; }
    """

    class Chosen(Message):
        """`enter` on a capture: show its dispatch list."""

        def __init__(self, path: str) -> None:
            super().__init__()
            self.path = path

    def compose(self) -> ComposeResult:
        yield KeyedTable(COLUMNS, id="captures-table", selectable=True)
        yield Static("no captures: press c to capture the next call (Vulkan)", id="captures-hint")

    def on_mount(self) -> None:
        self._paths: list[str] = []

    def show(self, snapshot: RunSnapshot) -> None:
        rows = {
            c.path: (Path(c.path).name, human_bytes(c.bytes), str(c.dispatches), str(c.calls))
            for c in snapshot.captures
        }
        self._paths = [c.path for c in snapshot.captures]
        self.query_one("#captures-table", KeyedTable).sync(rows)
        hint = self.query_one("#captures-hint", Static)
        if rows:
            show_text(hint, "enter lists the selected capture's dispatches; o opens it in qrenderdoc")
        elif snapshot.renderdoc and not snapshot.renderdoc.startswith("RenderDoc 1."):
            show_text(hint, f"no captures: {snapshot.renderdoc}")
        elif snapshot.program is not None:  # RenderDoc must be in a process before its Vulkan device is made
            show_text(hint, "no captures of a watched program: run it under renderdoccmd capture")

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.Chosen(str(event.row_key.value)))

    def selected_path(self) -> str | None:
        """The capture under the table's cursor; None while there is none."""
        if not self._paths:
            return None
        table = self.query_one("#captures-table", KeyedTable)
        return self._paths[min(max(0, table.cursor_row), len(self._paths) - 1)]

    def open_selected(self, log: Callable[[str, str], None]) -> None:
        """Open the selected capture in qrenderdoc, or say the command to open it elsewhere (the app says why
        there is none to open)."""
        path = self.selected_path()
        if path is None:
            return
        viewer = shutil.which("qrenderdoc")
        if viewer and (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            subprocess.Popen(
                [viewer, path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
            )
            log("info", f"opened {path} in qrenderdoc")
        else:
            log("info", f"no display here: open it elsewhere with: qrenderdoc {path}")
