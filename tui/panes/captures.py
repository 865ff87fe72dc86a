"""The Captures pane: RenderDoc captures of the live Vulkan work, verified and listed."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from gputop.tui.bridge import RunSnapshot
from gputop.tui.panes.table import KeyedTable

COLUMNS = ("capture", "size", "dispatches")


class CapturesPane(Vertical):
    DEFAULT_CSS = """
    CapturesPane { height: auto; border: round $primary; padding: 0 1; }
    CapturesPane DataTable { height: auto; max-height: 6; }
    CapturesPane #captures-hint { height: auto; color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        yield KeyedTable(COLUMNS, id="captures-table")
        yield Static("no captures: press c to capture the next call (Vulkan)", id="captures-hint")

    def on_mount(self) -> None:
        self.border_title = "Captures"

    def show(self, snapshot: RunSnapshot) -> None:
        """Captures arrive with capture results, not with every snapshot."""
