"""The Kernels pane's `from` column and the layer view (`L`), in the real app on a real ONNX model.

The model is built here with named nodes (tests/test_source_ops.py's conv net); the engine runs it on
local-task and a profile pass names its kernels. What the pane and the view show is checked against the
report's own `source_ops` and `layers`, at 120x40 and at 80x24.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from test_layer_names import ADD, block_of, resnet_blocks
from test_source_ops import conv_net
from textual.pilot import Pilot
from textual.widgets import Static
from tui_pilot import calls, live_app, profile_now, wait_for

from gputop.tui.bridge import to_json
from gputop.tui.panes.table import KeyedTable
from gputop.tui.screens import LayersScreen


def _text(widget: Static, width: int = 400) -> str:
    console = Console(width=width, record=True)
    console.print(widget.render())
    return console.export_text()


async def profiled_kernels(app: Any, pilot: Pilot[None], size: tuple[int, int]) -> tuple[Any, KeyedTable]:
    """A few calls, the Kernels pane forward where the screen is narrow, a profile pass, and its table filled."""
    await wait_for(pilot, lambda: calls(app) > 2, timeout=120)
    if size[0] < 110:
        await pilot.press("3")  # narrow: the Kernels pane forward
    await profile_now(app, pilot)
    profile = app.snapshot.profile
    table = app.query_one("#kernels-table", KeyedTable)
    await wait_for(pilot, lambda: table.row_count == len(profile.kernels), timeout=10)
    return profile, table


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_the_from_column_and_the_layer_view(size: tuple[int, int], tmp_path: Path) -> None:
    model, x = conv_net(tmp_path)
    app = live_app(target=str(model), inputs=(f"@{x}",))
    async with app.run_test(size=size) as pilot:
        profile, table = await profiled_kernels(app, pilot, size)
        assert "from" in table.shown  # shown at both sizes
        # A fused kernel: its ops' common scope first (`layer1: conv1 + bn1 +1`), the first op by its own.
        fused = next(k for k in profile.kernels if k.source_ops and len(k.source_ops) > 1)
        cell = str(table.row_cells(fused.name)["from"])
        scope, first = fused.source_ops[0].name.strip("/").split("/")[-3:-1]
        assert cell.startswith(f"{scope}: {first}"), cell
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


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_a_resnet_s_layers_read_block_first_one_line_each(size: tuple[int, int], tmp_path: Path) -> None:
    """Items 6 and 10 of issue 57: each kernel named by its block first in the `from` column and the layer view,
    the names given the room, one line per row, and IREE's padding copies named as copies (not `Conv` twice)."""
    model, x = resnet_blocks(tmp_path)
    app = live_app(target=str(model), inputs=(f"@{x}",))
    async with app.run_test(size=size) as pilot:
        profile, table = await profiled_kernels(app, pilot, size)
        assert "from" in table.shown and (size[0] > 110 or "share" in table.shown), table.shown  # the pane forward
        # The `from` cell of each kernel of one block (the graph's paths say which) starts with that block.
        for kernel in profile.kernels:
            blocks = {block_of(op.name or "") for op in kernel.source_ops or ()}
            cell = str(table.row_cells(kernel.name)["from"])
            if len(blocks) == 1 and None not in blocks and kernel.work != "copy":
                assert cell.startswith(f"{blocks.pop()}: "), cell
            assert not cell.startswith(("…", "/")), cell
        fused = next(k for k in profile.kernels if k.source_ops and any(op.name == ADD for op in k.source_ops))
        assert str(table.row_cells(fused.name)["from"]).startswith("layer1.0: conv2 +"), fused.source_ops
        # L: every group on one line at the view's own width, its name whole where it fits.
        await pilot.press("L")
        await wait_for(pilot, lambda: isinstance(app.screen, LayersScreen), timeout=10)
        body = app.screen.query_one("#layers-table", Static)
        await wait_for(pilot, lambda: body.size.width > 0, timeout=10)
        lines = _text(body, body.size.width).rstrip("\n").splitlines()
        layers = to_json(profile.layers)
        assert len(lines) == 3 + len(layers), "\n".join(lines)  # heading, blank, header, one line a group
        rows = {line.split("  ")[0]: line for line in lines[3:]}
        add_row = next(name for name in rows if name.startswith("layer1.0: conv2"))
        assert "add" in add_row or add_row.endswith(" +2"), add_row  # the Add named, or counted, never lost
        assert "classifier: fc" in rows, rows  # MatMul + Add of one module: once
        assert not any(name.startswith(("…", "/")) for name in rows), rows  # nothing cut at the left, no full paths
        copies = [name for name in rows if name.startswith("copy for ")]
        assert copies and all(rows[name].split(name, 1)[1].split()[0] == "copy" for name in copies), rows
        assert len(copies) == sum(1 for k in profile.kernels if k.work == "copy")
        # The name has the room: at 80 columns wider than the op column, and its block always whole.
        header = lines[2]
        assert header.index(" op ") > 20, header
