"""Modal screens: the key help (`?`) and the device chooser (`d`)."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from gputop.tui.bridge import DeviceInfo

KEYS = (
    ("q", "quit (stops the engine, restores the terminal)"),
    ("space", "pause / resume the calls"),
    ("p", "profile now: per-dispatch device times"),
    ("c", "RenderDoc capture of the next call (Vulkan)"),
    ("o", "open the selected capture (qrenderdoc, or the command to run)"),
    ("r", "reload: recompile if the source changed, run again"),
    ("d", "choose the device to run on"),
    ("e", "export the report (JSON) into the session directory"),
    ("s", "save an SVG screenshot into the session directory"),
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
