"""The key help (`?`): every key gputop answers to, in one window over the app.

The footer has room for a few keys and a narrow terminal hides most of them;
this window lists them all with what each does, so a key is learnt from the
screen rather than the README. Where a key cannot act on this run (a watched
program: space, r, d, c, n, g, and t, f, L without a profile `p` could make),
its row is dim and a second table says why, in the engine's own words.
"""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static

from gputop.tui.panes import by_key
from gputop.tui.screens.window import Window

__all__ = ["KEYS", "ROW_ACTIONS", "HelpScreen"]

_PANE_KEYS = by_key()

KEYS = (
    ("q", "quit (stops the engine, restores the terminal)"),
    ("space", "pause / resume the calls"),
    ("p, P", "profile now (P: a full pass, every record at any cost)"),
    ("n", "counters: hardware counters per kernel (ncu, CUDA)"),
    ("g", "GPU counters live: the Run pane's strip off / on (CUDA)"),
    ("t", "timeline: where the median profiled call's time goes"),
    ("c", "RenderDoc capture of the next call (Vulkan)"),
    ("o, enter", "capture: o opens it in qrenderdoc, enter its dispatches"),
    ("r", "reload: recompile if the source changed, run again"),
    ("d", "choose the device to run on"),
    ("e", "export the report (JSON) into the session directory"),
    ("s", "save an SVG screenshot into the session directory"),
    ("f", "roofline: each kernel against the device's peaks"),
    ("L, w", "time by model layer; w: a program's call parts, Python"),
    ("b", "baseline: the next past session, this device's first"),
    ("l", "grow the Log pane to most of the screen, and back"),
    (
        f"{_PANE_KEYS[0].KEY}-{_PANE_KEYS[-1].KEY}",
        "bring a pane forward (narrow screens): " + ", ".join(f"{p.KEY} {p.TITLE}" for p in _PANE_KEYS),
    ),
    ("?", "this help"),
)


# The MainScreen action behind a row of KEYS, where the run may refuse it (the key a row names first).
ROW_ACTIONS = {
    "space": "toggle_pause",
    "p, P": "profile",
    "n": "counters",
    "g": "pm_sampling",
    "t": "timeline",
    "c": "capture",
    "r": "reload",
    "d": "choose_device",
    "f": "roofline",
    "L, w": "layers",
}


class HelpScreen(Window[None]):
    DEFAULT_CSS = """
    HelpScreen > Vertical { width: 72; max-width: 95%; height: auto; max-height: 100%; overflow-y: auto;
                            border: round $accent; background: $surface; padding: 1 2; }
    """
    BINDINGS = [
        Binding("escape,question_mark", "dismiss", "Close"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, refused: dict[str, str] | None = None) -> None:
        """`refused`: why each MainScreen action that cannot act on this run cannot (none: every key can)."""
        super().__init__()
        self._refused = refused or {}

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 3))
        table.add_column(style="bold cyan")
        table.add_column()
        why_not = Table.grid(padding=(0, 3))
        why_not.add_column(style="bold")
        why_not.add_column()
        for key, what in KEYS:
            reason = self._refused.get(ROW_ACTIONS.get(key, ""))
            table.add_row(key, what, style="dim" if reason else "")
            if reason:  # the why; the key, pressed, says the rest (what to run instead)
                why_not.add_row(key.split(",")[0], reason.split("; ")[0])
        with Vertical():
            # No blank line under the title: with g every row of the keys still fits 80x24.
            yield Static("[b]gputop keys[/b]  (escape closes)")
            yield Static(table)
            if why_not.rows:
                yield Static("\n[b]not for this run[/b] (the dim keys above answer why when pressed)")
                yield Static(why_not)

    def action_dismiss(self) -> None:
        self.dismiss(None)
