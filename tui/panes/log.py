"""The Log pane: events and diagnostics, newest last, one line each.

It takes the rows its lines need, three at most (ten on a screen of 50 rows
or more), so the panes above keep the screen; `l` grows it to most of the screen and back.
Collapsed, it shows the newest whole messages, newest last: never the tail of an older
one cut mid-way, and never older lines left in view by the grown pane's scroll; a newest
message taller than the pane ends, at a word, with `…` (`l` shows it whole). The newest error
stays in view while newer lines come (a crashed program's traceback on stderr, then the run's
ending, pushed its `program raised: ... expected 32 but have 33` out of the three rows at 80x24):
it keeps the rows the newer lines leave, all but one at most, for PINNED_WITHIN lines.
Lines wrap at words, and a path too long for a row breaks after a `/`, between its
components, never inside a name (`wrap_rows`): at 80 columns a session folder's path was cut
mid-name and read as two paths.
Each error is one line with the path of its full log, so a compile failure
reads as a sentence and the IR dump stays in a file. Snapshots carry their
newest events with sequence numbers; the pane appends only the ones it has
not shown, so coalesced snapshots never lose or repeat a line.
"""

from __future__ import annotations

import re
import time
from collections import deque

from rich.cells import cell_len, chop_cells
from rich.text import Text
from textual import events
from textual.widgets import RichLog

from gputop.tui.bridge import Event, RunSnapshot

__all__ = ["KEPT", "LEVEL_STYLES", "LogPane", "clip_rows", "wrap_rows"]

KEPT = 2000  # lines the pane keeps
COLLAPSED_ROWS = 3  # text rows of the collapsed pane (max-height 5 less its border)
COLLAPSED_ROWS_TALL = 10  # on a tall screen (app.py: Screen.tall #log, max-height 12)
PINNED_WITHIN = 50  # lines after the newest error within which it keeps its rows in the collapsed pane
LEVEL_STYLES = {"info": "", "warning": "yellow", "error": "bold red"}
ELLIPSIS = "…"
_WORD = re.compile(r"\s*\S+\s*")


def _pieces(plain: str, width: int) -> list[tuple[int, int]]:
    """(start, end) of the pieces a row may end after: each word with the spaces after it; a word longer than a
    row split after each `/` (a path's components), and a part of it still longer cut at the width."""
    pieces: list[tuple[int, int]] = []
    for match in _WORD.finditer(plain):
        start, end = match.span()
        word = plain[start:end].rstrip()
        if cell_len(word) <= width:
            pieces.append((start, end))
            continue
        parts = re.findall(r"[^/]*/|[^/]+", word)
        at = start
        for part in parts:
            for chunk in chop_cells(part, width):
                pieces.append((at, at + len(chunk)))
                at += len(chunk)
        pieces[-1] = (pieces[-1][0], end)  # the spaces after the word go with its last piece
    return pieces


def wrap_rows(line: Text, width: int) -> list[Text]:
    """`line` as the rows it takes `width` cells wide: broken at spaces, a path too long for a row after a `/`."""
    rows: list[Text] = []
    for part in line.split("\n", allow_blank=True):
        plain = part.plain
        breaks: list[int] = []
        used = 0
        for start, end in _pieces(plain, max(1, width)):
            if used and used + cell_len(plain[start:end].rstrip()) > width:
                breaks.append(start)
                used = 0
            used += cell_len(plain[start:end])
        for row in part.divide(breaks):
            row.rstrip()
            rows.append(row)
    return rows or [Text("")]


def clip_rows(rows: list[Text], limit: int, width: int) -> list[Text]:
    """The first `limit` of `rows`, the last of them ending at a word with `…` where any were left out."""
    if len(rows) <= limit:
        return rows
    kept = rows[:limit]
    last = kept[-1].copy()
    if cell_len(last.plain) + cell_len(ELLIPSIS) > width:
        cut = last.plain.rfind(" ")  # the last whole word that leaves room (a long word's end, failing that)
        last = last[: cut if cut > 0 else max(0, len(last.plain) - cell_len(ELLIPSIS))]
        last.rstrip()
    last.append(ELLIPSIS, style="dim")
    return [*kept[:-1], last]


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
        self._levels: deque[str] = deque(maxlen=KEPT)  # the level of each
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
        self._levels.append(level)
        if not self._wrapped_at:  # before the pane has a width, lines wait: on_resize writes them
            return
        rows = wrap_rows(line, self._wrapped_at)
        self._rows.append(len(rows))
        if self.grown:
            for row in rows:
                self.write(row, width=self._wrapped_at)
        else:
            self.redraw()

    @property
    def grown(self) -> bool:
        return self.has_class("grown")

    def _collapsed_rows(self) -> int:
        return COLLAPSED_ROWS_TALL if self.is_attached and self.screen.has_class("tall") else COLLAPSED_ROWS

    def redraw(self) -> None:
        """Write the pane again: grown, every kept line, scrolled to the newest; collapsed, the newest whole
        messages that fit (the newest alone when it is taller, cut at a word with `…`), blank rows above them."""
        width = self._wrapped_at
        if not width:
            return
        self.clear()
        if self.grown:
            for line in self._lines:
                for row in wrap_rows(line, width):
                    self.write(row, width=width)
            return
        limit = self._collapsed_rows()
        shown_lines = self._collapsed(limit)
        shown = sum(rows for _, rows in shown_lines)
        rows_needed = min(limit, sum(self._rows))  # as many rows as the pane had, so it does not jump
        for _ in range(max(0, rows_needed - shown)):
            self.write(Text(""), width=width, scroll_end=False)
        for index, rows in shown_lines:
            for row in clip_rows(wrap_rows(self._lines[index], width), rows, width):
                self.write(row, width=width, scroll_end=False)
        self.scroll_home(animate=False, immediate=True)

    def _collapsed(self, limit: int) -> list[tuple[int, int]]:
        """The lines the collapsed pane shows, oldest first, each with the rows it may take: the newest whole
        lines that fit (the newest alone, cut, when it is taller), and the newest error kept in view."""
        chosen: list[tuple[int, int]] = []
        shown = 0
        for index in reversed(range(len(self._rows))):
            rows = self._rows[index]
            if chosen and shown + rows > limit:
                break
            chosen.append((index, min(rows, limit)))
            shown += rows
        errors = [i for i in range(max(0, len(self._levels) - PINNED_WITHIN), len(self._levels))]
        pinned = next((i for i in reversed(errors) if self._levels[i] == "error"), None)
        if pinned is None or limit < 2 or any(index == pinned for index, _ in chosen):
            return chosen[::-1]
        room = limit - min(self._rows[pinned], limit - 1)  # for the lines after it: one row at least
        newer: list[tuple[int, int]] = []
        used = 0
        for index in reversed(range(pinned + 1, len(self._rows))):
            rows = min(self._rows[index], room)
            if newer and used + rows > room:
                break
            newer.append((index, rows))
            used += rows
        return [(pinned, min(self._rows[pinned], limit - used)), *newer[::-1]]

    def on_resize(self, event: events.Resize) -> None:
        """Lines are wrapped to the pane's width (not the console's), and wrapped again when it changes."""
        # (RichLog's own on_resize runs too: Textual calls the handler of every class in the MRO.)
        width = self.scrollable_content_region.width
        if width and width != self._wrapped_at:
            self._wrapped_at = width
            self._rows = deque((len(wrap_rows(line, width)) for line in self._lines), maxlen=KEPT)
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
