"""What every window gputop opens over its panes has in common: centred, and opaque.

Textual's `ModalScreen` lets the screen beneath show through, dimmed; over
live panes that is noise, and around a window's rounded border the panes'
own borders and numbers read as part of it (issue 29: "modal borders show
the panes beneath"). Every window derives from `Window` and so hides the
panes entirely, in one place.
"""

from __future__ import annotations

from typing import TypeVar

from textual.screen import ModalScreen

__all__ = ["Window"]

ResultT = TypeVar("ResultT")


class Window(ModalScreen[ResultT]):
    """A modal window over the app that hides what is beneath it (an opaque background)."""

    DEFAULT_CSS = """
    Window { align: center middle; background: $background; }
    Window:ansi { background: ansi_default; }
    """
