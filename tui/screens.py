"""Modal screens: the key help (`?`), the device chooser (`d`) and a capture's dispatch list (`enter`)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, OptionList, Static
from textual.widgets.option_list import Option

from gputop.tui.bridge import CaptureInfo, DeviceInfo, to_json
from gputop.tui.report_text import DISPATCH_COLUMNS, dispatch_rows, replay_line

KEYS = (
    ("q", "quit (stops the engine, restores the terminal)"),
    ("space", "pause / resume the calls"),
    ("p", "profile now: per-dispatch device times"),
    ("t", "timeline: where the median profiled call's time goes"),
    ("c", "RenderDoc capture of the next call (Vulkan)"),
    ("enter", "on a capture: its dispatch list (GPU times if replayed)"),
    ("o", "open the selected capture (qrenderdoc, or the command to run)"),
    ("r", "reload: recompile if the source changed, run again"),
    ("d", "choose the device to run on"),
    ("e", "export the report (JSON) into the session directory"),
    ("s", "save an SVG screenshot into the session directory"),
    ("f", "roofline: each kernel against the device's peaks"),
    ("?", "this help"),
)


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical { width: 72; max-width: 95%; height: auto; border: round $accent;
                            background: $surface; padding: 1 2; }
    """
    BINDINGS = [
        Binding("escape,question_mark", "dismiss", "Close"),
        Binding("q", "app.quit", "Quit"),
    ]

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 3))
        table.add_column(style="bold cyan")
        table.add_column()
        for key, what in KEYS:
            table.add_row(key, what)
        with Vertical():
            yield Static("[b]gputop keys[/b]  (escape closes)\n")
            yield Static(table)

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)


class DeviceScreen(ModalScreen[str | None]):
    """Pick a runnable device; dismisses with its id, or None."""

    DEFAULT_CSS = """
    DeviceScreen { align: center middle; }
    DeviceScreen > Vertical { width: 80%; height: auto; max-height: 80%; border: round $accent;
                              background: $surface; padding: 1 2; }
    DeviceScreen OptionList { height: auto; max-height: 16; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, devices: list[DeviceInfo], current: str | None) -> None:
        super().__init__()
        self._devices = devices
        self._current = current

    def compose(self) -> ComposeResult:
        options = [
            Option(f"{'● ' if d.id == self._current else '  '}{d.id:12s} {d.name}", id=d.id) for d in self._devices
        ]
        with Vertical():
            yield Static("[b]Run on which device?[/b]  (enter picks, escape cancels)\n")
            yield OptionList(*options)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class CaptureScreen(ModalScreen[None]):
    """One capture's dispatch list: entry points, workgroups, bound buffers, and replayed GPU times."""

    DEFAULT_CSS = """
    CaptureScreen { align: center middle; }
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
