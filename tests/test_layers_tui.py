"""The Kernels pane's `from` column and the layer view (`L`), in the real app on a real ONNX model.

The model is built here with named nodes (tests/test_source_ops.py's conv net); the engine runs it on
local-task and a profile pass names its kernels. What the pane and the view show is checked against the
report's own `source_ops` and `layers`, at 120x40 and at 80x24.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from test_source_ops import conv_net
from textual.widgets import Static
from tui_pilot import calls, live_app, profile_now, wait_for

from gputop.tui.bridge import to_json
from gputop.tui.panes.table import KeyedTable
from gputop.tui.screens import LayersScreen


def _text(widget: Static) -> str:
    console = Console(width=400, record=True)
    console.print(widget.render())
    return console.export_text()


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_the_from_column_and_the_layer_view(size: tuple[int, int], tmp_path: Path) -> None:
    model, x = conv_net(tmp_path)
    app = live_app(target=str(model), inputs=(f"@{x}",))
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: calls(app) > 2, timeout=120)
        if size[0] < 110:
            await pilot.press("3")  # narrow: the Kernels pane forward
        await profile_now(app, pilot)
        profile = app.snapshot.profile
        table = app.query_one("#kernels-table", KeyedTable)
        await wait_for(pilot, lambda: table.row_count == len(profile.kernels), timeout=10)
        assert "from" in table.shown  # shown at both sizes
        # A fused kernel: its first layer by its last scopes (`layer1/conv1`), and +N for the others.
        fused = next(k for k in profile.kernels if k.source_ops and len(k.source_ops) > 1)
        cell = str(table.row_cells(fused.name)["from"])
        scopes = "/".join(fused.source_ops[0].name.strip("/").split("/")[-3:-1])
        assert cell == f"{scopes} +{len(fused.source_ops) - 1}", cell
        # Below the table, the kernel under the cursor (the first row) in full, every node by its whole name.
        below = _text(app.query_one("#kernels-from", Static))
        top = table.row_keys[0]
        top_kernel = next(k for k in profile.kernels if k.name == top)
        assert top_kernel.source_ops and all(op.name in below.replace("\n", "") for op in top_kernel.source_ops)
        # L: the layer view, the report's groups largest first; escape closes it.
        await pilot.press("L")
        await wait_for(pilot, lambda: isinstance(app.screen, LayersScreen), timeout=10)
        view = _text(app.screen.query_one("#layers-table", Static))
        layers = to_json(profile.layers)
        assert f"{len(layers)} groups of layers, {len(profile.kernels)} kernels" in view
        rows = [line for line in view.splitlines() if "%" in line]
        assert len(rows) == len(layers)
        shares = [float(line.split("%")[0].split()[-1]) for line in rows]
        assert shares == sorted(shares, reverse=True)
        assert abs(sum(shares) - 100) < 0.5
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, LayersScreen), timeout=10)
