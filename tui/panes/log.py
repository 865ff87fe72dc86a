"""The Log pane: events and diagnostics, newest last, one line each.

It takes the rows its lines need, three at most (ten on a screen of 50 rows
or more), so the panes above keep the screen; `l` grows it to most of the screen and back.
Collapsed, it shows the newest whole messages, newest last: never the tail of an older
one cut mid-way, and never older lines left in view by the grown pane's scroll.
Each error is one line with the path of its full log, so a compile failure
reads as a sentence and the IR dump stays in a file. Snapshots carry their
newest events with sequence numbers; the pane appends only the ones it has
not shown, so coalesced snapshots never lose or repeat a line.
"""

from __future__ import annotations

import time
from collections import deque

from rich.segment import Segment
from rich.text import Text
from textual import events
from textual.widgets import RichLog

from gputop.tui.bridge import Event, RunSnapshot

__all__ = ["KEPT", "LEVEL_STYLES", "LogPane"]

KEPT = 2000  # lines the pane keeps
COLLAPSED_ROWS = 3  # text rows of the collapsed pane (max-height 5 less its border)
COLLAPSED_ROWS_TALL = 10  # on a tall screen (app.py: Screen.tall #log, max-height 12)
LEVEL_STYLES = {"info": "", "warning": "yellow", "error": "bold red"}


class LogPane(RichLog):
    DEFAULT_CSS = """
    LogPane { height: auto; max-height: 5; border: round $primary; overflow-x: hidden; }
    LogPane.grown { max-height: 60%; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(max_lines=KEPT, wrap=True, markup=False, **kwargs)  # type: ignore[arg-type]
        self._last_seq = 0
        self._diagnostics_shown: set[tuple[str, str | None, str]] = set()
        self.messages: list[str] = []  # what was logged, unwrapped, oldest first
        self._lines: deque[Text] = deque(maxlen=KEPT)  # the same, styled: wrapped again when the width changes
        self._rows: deque[int] = deque(maxlen=KEPT)  # the rows each of them takes at the width wrapped at
        self._wrapped_at = 0

    def on_mount(self) -> None:
        self.border_title = "Log"

    def reset(self) -> None:
        """A new session numbers its events from 1 again."""
        self._last_seq = 0

    def add(self, level: str, message: str, stamp: float | None = None) -> None:
        self.messages.append(f"{level}: {message}")
        line = Text(time.strftime("%H:%M:%S ", time.localtime(stamp or time.time())), style="dim")
        line.append(message, style=LEVEL_STYLES.get(level, ""))
        self._lines.append(line)
        if not self._wrapped_at:  # before the pane has a width, lines wait: on_resize writes them
            return
        self._rows.append(self._rows_of(line, self._wrapped_at))
        if self.grown:
            self.write(line, width=self._wrapped_at)
        else:
            self.redraw()

    @property
    def grown(self) -> bool:
        return self.has_class("grown")

    def _rows_of(self, line: Text, width: int) -> int:
        """The rows `line` wraps to at `width`, rendered as RichLog.write renders it."""
        console = self.app.console
        return max(1, len(list(Segment.split_lines(console.render(line, console.options.update_width(width))))))

    def _collapsed_rows(self) -> int:
        return COLLAPSED_ROWS_TALL if self.is_attached and self.screen.has_class("tall") else COLLAPSED_ROWS

    def redraw(self) -> None:
        """Write the pane again: grown, every kept line, scrolled to the newest; collapsed, the newest whole
        messages that fit (the newest alone when it is taller), blank rows above them."""
        width = self._wrapped_at
        if not width:
            return
        self.clear()
        if self.grown:
            for line in self._lines:
                self.write(line, width=width)
            return
        limit = self._collapsed_rows()
        shown = 0
        taken = 0
        for rows in reversed(self._rows):
            if taken and shown + rows > limit:
                break
            shown += rows
            taken += 1
        rows_needed = min(limit, sum(self._rows))  # as many rows as the pane had, so it does not jump
        for _ in range(max(0, rows_needed - shown)):
            self.write(Text(""), width=width, scroll_end=False)
        for line in list(self._lines)[len(self._lines) - taken :]:
            self.write(line, width=width, scroll_end=False)
        self.scroll_home(animate=False, immediate=True)

    def on_resize(self, event: events.Resize) -> None:
        """Lines are wrapped to the pane's width (not the console's), and wrapped again when it changes."""
        # (RichLog's own on_resize runs too: Textual calls the handler of every class in the MRO.)
        width = self.scrollable_content_region.width
        if width and width != self._wrapped_at:
            self._wrapped_at = width
            self._rows = deque((self._rows_of(line, width) for line in self._lines), maxlen=KEPT)
            self.redraw()

    def show(self, snapshot: RunSnapshot) -> None:
        new: list[Event] = [e for e in snapshot.events if e.seq > self._last_seq]
        for event in new:
            text = event.message
            if event.log_path and event.log_path not in text:
                text += f" (log: {event.log_path})"
            self.add(event.level, text, event.timestamp)
            self._last_seq = event.seq
        for diag in snapshot.diagnostics:
            key = (diag.severity, diag.location, diag.message)
            if key not in self._diagnostics_shown and diag.severity != "error":
                self._diagnostics_shown.add(key)
                self.add("warning", diag.one_line(), diag.timestamp)
