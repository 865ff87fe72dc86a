"""The footer: the keys that fit the terminal's width, `?` always among them.

Textual's footer lays every shown binding side by side and cuts the row at
the terminal's edge: at 80 columns gputop's stopped at `d Devi`, and whatever
lay beyond (`l`, `s`, `f`) was nowhere to be seen. This footer keeps the row
whole: where the keys do not fit it first drops the spaces between them
(Textual's compact style), then the keys least needed at a glance, in the
order the app gives. `?` is never dropped, and its window lists every key.
A key that cannot act on this run (`refused`: a watched program's space, r,
d, c) is left out altogether; it still answers why when pressed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

__all__ = ["KeysFooter"]

# Cells a key takes beside its key and description: ` k desc ` normally; `k desc` and a margin, compact.
PAD_NORMAL = 3
PAD_COMPACT = 2


class KeysFooter(Footer):
    """A footer that shows the keys that fit, dropping those last in `keep` first."""

    def __init__(
        self,
        keep: Sequence[str],
        *,
        show_command_palette: bool = True,
        compact: bool = False,
        refused: Callable[[str], bool] = lambda action: False,
    ) -> None:
        super().__init__(show_command_palette=show_command_palette, compact=compact)
        self._keep = tuple(keep)  # keys, most needed first: `?` (question_mark) should lead
        self._refused = refused  # by the key's action: it cannot act on this run, so it is not offered

    def compose(self) -> ComposeResult:
        yield from super().compose()
        self.call_after_refresh(self.fit)  # the keys are children once mounted

    def on_resize(self, event: events.Resize) -> None:
        self.fit()

    def fit(self) -> None:
        """Show the keys that fit the footer's width, in their order; compact when that saves keys."""
        keys = [key for key in self.query(FooterKey) if "-command-palette" not in key.classes]
        width = self.size.width
        if not keys or not width:
            return
        for key in keys:
            if self._refused(key.action):
                key.display = False
        keys = [key for key in keys if not self._refused(key.action)]
        compact = _width(keys, PAD_NORMAL) > width
        shown = self._fitting(keys, width, PAD_COMPACT if compact else PAD_NORMAL)
        self.compact = compact
        for key in keys:
            key.display = key in shown

    def _fitting(self, keys: list[FooterKey], width: int, pad: int) -> set[FooterKey]:
        rank = {name: index for index, name in enumerate(self._keep)}
        order = sorted(keys, key=lambda key: rank.get(key.key, len(rank)))  # most needed first
        shown: set[FooterKey] = set()
        used = 0
        for key in order:
            need = _width([key], pad)
            if used + need > width and shown:
                break  # a less needed key never takes the place of a more needed one
            shown.add(key)
            used += need
        return shown


def _width(keys: Iterable[FooterKey], pad: int) -> int:
    return sum(cell_len(key.key_display) + cell_len(key.description) + pad for key in keys)
