"""The layer view (`L`): the newest profile's kernel time by the model's layers, largest first.

A user thinks in their model's layers (`/layer1/layer1.0/conv1/Conv`,
`model.py:42`), not in `main_graph$async_dispatch_29_conv…`. The engine groups
the kernel time by the source ops each kernel was formed from
(`profiling/source_ops.py`); a kernel fused from several layers is one row,
their group, never split among them by a guess, so the rows add up to the
Kernels pane's time. Redrawn as profiles arrive, like the roofline.
"""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding

from gputop.tui.bridge import RunSnapshot, ms_fixed, to_json
from gputop.tui.screens.window import DrawnWindow
from gputop.tui.text.layers import layer_table
from gputop.tui.text.program import no_profile_text

__all__ = ["LayersScreen", "layers_text"]


def layers_text(snapshot: RunSnapshot | None, width: int) -> str:
    """The layer table of the snapshot's newest profile, fitted to `width`, or what is missing."""
    profile = snapshot.profile if snapshot is not None else None
    if profile is None or not profile.kernels:
        return no_profile_text(snapshot, ", then L")
    if profile.source_ops_reason:
        return f"the kernels' layers are not known: {profile.source_ops_reason}"
    layers = to_json(profile.layers)
    total = sum(layer["ms_per_call"] for layer in layers)
    heading = (
        f"{len(layers)} groups of layers, {len(profile.kernels)} kernels, "
        f"{ms_fixed(total)} kernel time per call ({profile.source}, {profile.calls} calls)"
    )
    return "\n".join([heading, "", *layer_table(layers, width)])


class LayersScreen(DrawnWindow):
    """Time by layer of the newest profile."""

    DEFAULT_CSS = """
    LayersScreen > Vertical { width: 96%; height: 92%; border: round $accent; background: $surface; padding: 0 1; }
    LayersScreen #layers-table { height: 1fr; overflow-y: auto; }
    """
    BINDINGS = [Binding("escape,L", "dismiss", "Close")]
    TITLE = "[b]Layers[/b]  kernel time by the model's layers, largest first (escape closes)"
    BODY_ID = "layers-table"

    def draw(self, snapshot: RunSnapshot | None, width: int, height: int) -> Text:
        return Text(layers_text(snapshot, width))  # a layer's name is not markup
