"""The Exports pane: on which device each result of the function is produced and exported.

Multi-device modules can export a result on a device other than the one that
produced it (a hidden transfer) or fall back to a default device. This pane
has one row per result with its affinity and its producer's device, marked
where they differ. A single-device run exports everything on its one device;
multi-device runs show their results as not analysed until the affinity
analysis fills them in.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from gputop.tui.bridge import RunSnapshot
from gputop.tui.panes.table import KeyedTable

COLUMNS = ("result", "type", "affinity", "producer", "note", "function")


def export_rows(snapshot: RunSnapshot) -> dict[str, tuple[str, ...]]:
    function = snapshot.function or "?"
    devices = snapshot.device_ids
    rows: dict[str, tuple[str, ...]] = {}
    for index, kind in enumerate(snapshot.result_types):
        if len(devices) == 1:
            rows[f"{function}/{index}"] = (str(index), kind, devices[0], devices[0], "single device", function)
        else:
            rows[f"{function}/{index}"] = (
                str(index),
                kind,
                "?",
                "?",
                f"{len(devices)} devices: not analysed",
                function,
            )
    return rows


class ExportsPane(Vertical):
    DEFAULT_CSS = """
    ExportsPane { height: auto; border: round $primary; padding: 0 1; }
    ExportsPane DataTable { height: auto; max-height: 6; }
    ExportsPane #exports-hint { height: auto; color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        yield KeyedTable(COLUMNS, id="exports-table")
        yield Static("results appear once the module is loaded", id="exports-hint")

    def on_mount(self) -> None:
        self.border_title = "Exports"

    def show(self, snapshot: RunSnapshot) -> None:
        rows = export_rows(snapshot)
        self.query_one("#exports-table", KeyedTable).sync(rows)
        self.query_one("#exports-hint", Static).display = not rows
