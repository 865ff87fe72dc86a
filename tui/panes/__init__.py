"""The panes of the live TUI, one module each, and PANES: the one list the app is built from.

A pane declares its id, title, key and place once, as class variables on
`BoxPane`; the app composes the layout, binds the keys 1-5, draws the tab
row and finds a pane by its id from `PANES` alone, so adding a pane is its
own module and one entry below. The header and the Log pane are the app's
fixed frame, not tabbed panes, and are re-exported here beside them, as is the
footer of keys.
"""

from __future__ import annotations

from gputop.tui.panes.box import COLUMNS, BoxPane, LayoutColumn, share_rows
from gputop.tui.panes.captures import CapturesPane
from gputop.tui.panes.exports import ExportsPane
from gputop.tui.panes.footer import KeysFooter
from gputop.tui.panes.header import HeaderBar
from gputop.tui.panes.kernels import KernelsPane
from gputop.tui.panes.log import LogPane
from gputop.tui.panes.memory import MemoryPane
from gputop.tui.panes.run import RunPane
from gputop.tui.panes.tabs import PaneTabs

__all__ = [
    "COLUMNS",
    "PANES",
    "BoxPane",
    "CapturesPane",
    "ExportsPane",
    "HeaderBar",
    "KernelsPane",
    "KeysFooter",
    "LayoutColumn",
    "LogPane",
    "MemoryPane",
    "PaneTabs",
    "RunPane",
    "by_key",
    "in_column",
    "share_rows",
]

PANES: tuple[type[BoxPane], ...] = (RunPane, MemoryPane, KernelsPane, ExportsPane, CapturesPane)


def by_key(panes: tuple[type[BoxPane], ...] = PANES) -> tuple[type[BoxPane], ...]:
    """The panes in the order of their keys: the tab row's order, and the bindings'."""
    return tuple(sorted(panes, key=lambda pane: pane.KEY))


def in_column(column: LayoutColumn, panes: tuple[type[BoxPane], ...] = PANES) -> tuple[type[BoxPane], ...]:
    """The panes of one column of the wide layout, top first."""
    return tuple(sorted((pane for pane in panes if column == pane.COLUMN), key=lambda pane: pane.ROW))
