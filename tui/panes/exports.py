"""The Exports pane: on which device each result of the function is produced and exported.

Multi-device modules can export a result on a device other than the one that
produced it (a hidden transfer) or fall back to a default device. This pane
has one row per result with its affinity and its producer's device, marked
where they differ. A single-device run exports every result of every function
on its one device, as the loaded module declares them (`module/results.py`);
multi-device runs show the compiler's affinity analysis of every argument
and result, with hidden transfers in red, and the bytes a profiled call
really copied beside the analysis's figure ("seen"), where a profile can see them.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from gputop.tui.bridge import BUSY_STATES, RunSnapshot, human_bytes
from gputop.tui.panes.box import BoxPane, show_text
from gputop.tui.panes.table import Column, KeyedTable

__all__ = ["ExportsPane", "empty_hint", "export_rows"]

COLUMNS = (Column("value"), Column("affinity", 1), Column("producer", 2), Column("note"), Column("function", 3))
STYLES = {"hidden_transfer": "bold red", "transfer": "yellow", "undeclared": "yellow"}
NOTES = {
    "hidden_transfer": "! hidden transfer",
    "transfer": "moved between devices",
    "undeclared": "undeclared",
    "passthrough": "passthrough",
}


def device_label(names: dict[str, str], name: str | None) -> str:
    """`device_b` -> its device id; several readers (a,b) or producers on different paths (a|b) each."""
    if not name:
        return "-"
    for separator in (",", "|"):
        if separator in name:
            return separator.join(names.get(part, part) for part in name.split(separator))
    return names.get(name, name)


def export_rows(snapshot: RunSnapshot) -> dict[str, tuple[str | Text, ...]]:
    function = snapshot.function or "?"
    devices = snapshot.device_ids
    names = dict(snapshot.device_names)
    rows: dict[str, tuple[str | Text, ...]] = {}
    if snapshot.exports:
        for record in snapshot.exports:
            note = NOTES.get(record.flag or "", "")
            if record.transfer_bytes:
                note += f" {human_bytes(record.transfer_bytes)}"
            elif record.transfer_bytes_expr:  # a dynamic size no call has given a value yet
                note += f" {record.transfer_bytes_expr} B"
            seen = record.observed_transfer_bytes
            if seen is not None and (seen or record.transfer_bytes):
                note += f" (seen {human_bytes(seen)})"
            if len(devices) == 1 and not note:
                note = "single device"  # produced and exported on the run's one device: nothing moves
            style = STYLES.get(record.flag or "", "")
            value = f"{'arg' if record.kind == 'argument' else 'result'} {record.index}"
            rows[f"{record.function}/{record.kind}/{record.index}"] = (
                f"{value} {record.value_type}" if record.value_type else value,
                device_label(names, record.export_affinity),
                device_label(names, record.producer_affinity),
                Text(note.strip(), style=style),
                record.function,
            )
        return rows
    if len(devices) == 1:
        for index, kind in enumerate(snapshot.result_types):
            rows[f"{function}/{index}"] = (f"result {index} {kind}", devices[0], devices[0], "single device", function)
    return rows


def empty_hint(snapshot: RunSnapshot) -> str:
    """Why the table has no rows, as it is true now: the module is still coming, or what it cannot show.

    "Results appear once the module is loaded" was shown on a running precompiled multi-device module, whose
    results never appear: the affinity analysis reads the source as gputop compiles it, and a .vmfb has none.
    """
    if snapshot.program is not None:  # gputop never compiled a watched program's module
        return "a watched program's module: gputop did not compile it, so no affinity analysis"
    if snapshot.state == "idle" or snapshot.state in BUSY_STATES:
        return "results appear once the module is loaded"
    if snapshot.function is None:
        return f"no results: the run is {snapshot.state} and its module was never loaded"
    if len(snapshot.device_ids) > 1:
        if snapshot.target.endswith(".vmfb"):
            return (
                "no affinity analysis for a precompiled .vmfb: it needs the module's source "
                "(give gputop the .mlir to see which device exports each result)"
            )
        return "no affinity analysis for this run (the Log says why)"
    return f"{snapshot.function}() returns no results: nothing is exported"


class ExportsPane(BoxPane):
    PANE_ID = "exports"
    TITLE = "Exports"
    KEY = "4"
    COLUMN = "right"
    ROW = 0
    TALLER_TABLE = ("#exports-table", 6)
    DEFAULT_CSS = """
    ExportsPane DataTable { height: auto; }
    ExportsPane #exports-hint { height: auto; color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        yield KeyedTable(COLUMNS, id="exports-table")
        yield Static("results appear once the module is loaded", id="exports-hint")

    def show(self, snapshot: RunSnapshot) -> None:
        rows = export_rows(snapshot)
        self.query_one("#exports-table", KeyedTable).sync(rows)
        hint = self.query_one("#exports-hint", Static)
        hint.display = not rows
        if not rows:
            show_text(hint, empty_hint(snapshot))
