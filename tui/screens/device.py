"""The device chooser (`d`): the devices this run could move to, the current one marked.

Moving a run to another device restarts it there; the choice is a window
over the app rather than a pane because it is made once and then gets out of
the way. It knows only the devices the bridge lists; the app restarts the run.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from gputop.tui.bridge import DeviceInfo
from gputop.tui.screens.window import Window

__all__ = ["DeviceScreen"]


class DeviceScreen(Window[str | None]):
    """Pick a runnable device; dismisses with its id, or None."""

    DEFAULT_CSS = """
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
