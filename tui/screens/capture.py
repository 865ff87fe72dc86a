"""A capture's dispatch list (`enter` on a capture): what one RenderDoc capture recorded.

The Captures pane lists captures; this window opens one: its entry points,
workgroups and bound buffers, with GPU times where a replay could measure
them. It is a window rather than a pane because a capture holds far more
rows than a pane has room for, and it is read once, not watched.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from gputop.tui.bridge import CaptureInfo, to_json
from gputop.tui.screens.window import Window
from gputop.tui.text import DISPATCH_COLUMNS, dispatch_rows, replay_line

__all__ = ["CaptureScreen"]


class CaptureScreen(Window[None]):
    """One capture's dispatch list: entry points, workgroups, bound buffers, and replayed GPU times."""

    DEFAULT_CSS = """
    CaptureScreen > Vertical { width: 95%; height: auto; max-height: 90%; border: round $accent;
                               background: $surface; padding: 1 2; }
    CaptureScreen DataTable { height: auto; max-height: 24; }
    CaptureScreen .capture-note { color: $text-muted; }
    """
    BINDINGS = [Binding("escape,q", "close", "Close")]

    def __init__(self, info: CaptureInfo) -> None:
        super().__init__()
        self.info = info

    def compose(self) -> ComposeResult:
        info = self.info
        data = to_json(info)
        name = info.path.rsplit("/", 1)[-1]
        where = f", captured on {info.captured_on}" if info.captured_on else ""
        with Vertical():
            yield Static(
                Text.assemble((name, "bold"), f"  {info.api}, {info.dispatches} dispatches{where}  (escape closes)")
            )
            yield Static(f"read by {info.reader}", classes="capture-note", markup=False)
            if info.reader_note:
                yield Static(info.reader_note, classes="capture-note", markup=False)
            replay = replay_line(data)
            if replay:
                yield Static(replay, id="capture-replay", markup=False)
            yield DataTable(id="capture-dispatches", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.query_one("#capture-dispatches", DataTable)
        table.add_columns(*DISPATCH_COLUMNS)
        rows = dispatch_rows(to_json(self.info))
        if not rows:  # read by renderdoccmd: names only
            rows = [(str(i), name, "-", "-", "-") for i, name in enumerate(self.info.dispatch_names)]
        for row in rows:
            table.add_row(*row, key=row[0])
        table.focus()

    def action_close(self) -> None:
        self.dismiss(None)
