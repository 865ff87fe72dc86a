"""A one-device run's exports: every function's results on the run's device, for `.vmfb`, `.mlir` and `.onnx` alike.

Issue 57 (item 3): a precompiled ResNet's Exports pane read `main_graph() returns no results:
nothing is exported` and the report's `exports` was `[]` for every one-device run. The results
are read from the loaded module (its declarations, else its calling convention and the first
call's outputs), so a `.vmfb` compiled from an ONNX model elsewhere, which carries no
declaration and no source, shows them as well. The independent sources the figures are held
against: the onnx package's own expected output (`output_0.pb`: its shape) and the types
written in the `.mlir` below.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import numpy_helper
from tui_pilot import until_drawn, wait_for

from conftest import run_json
from gputop.tui.app import GputopApp
from gputop.tui.bridge import EngineBridge, RunConfig
from gputop.tui.panes.table import KeyedTable

CASE = Path(onnx.__file__).parent / "backend" / "test" / "data" / "pytorch-converted" / "test_Linear"
TOOLS = Path(sys.executable).parent  # iree-import-onnx and iree-compile, as a user compiles a model elsewhere

TWO_FUNCTIONS = """
func.func @pair(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<2xi32>) {
  %c = arith.constant dense<1> : tensor<2xi32>
  return %a, %c : tensor<4xf32>, tensor<2xi32>
}
func.func @twice(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def expected_type() -> str:
    """The model's output type, from the onnx package's own reference output: 4x8xf32."""
    reference = numpy_helper.to_array(onnx.load_tensor(str(CASE / "test_data_set_0" / "output_0.pb")))
    assert reference.dtype.name == "float32"
    return "x".join([*(str(d) for d in reference.shape), "f32"])


@pytest.fixture(scope="module")
def onnx_vmfb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The model compiled as a user compiles it with IREE's own tools, gputop nowhere: no declaration, no
    sources beside it (the ResNet of the issue was such a .vmfb)."""
    folder = tmp_path_factory.mktemp("onnx-vmfb")
    mlir, vmfb = folder / "linear.mlir", folder / "linear.vmfb"
    imported = subprocess.run(
        [str(TOOLS / "iree-import-onnx"), str(CASE / "model.onnx"), "--opset-version", "17", "-o", str(mlir)],
        capture_output=True,
        text=True,
    )
    assert imported.returncode == 0, imported.stderr
    compiled = subprocess.run(
        [str(TOOLS / "iree-compile"), str(mlir), "--iree-hal-target-device=local",
         "--iree-hal-local-target-device-backends=llvm-cpu", "-o", str(vmfb)],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr
    return vmfb


def results(report: dict[str, object]) -> list[tuple[object, ...]]:
    exports = report["exports"]
    assert isinstance(exports, list)
    return [
        (r["function"], r["kind"], r["index"], r["value_type"], r["export_affinity"], r["producer_affinity"],
         r["transfer_bytes"], r["flag"])
        for r in exports
    ]  # fmt: skip


def test_a_precompiled_onnx_vmfb_exports_its_result_on_its_device(onnx_vmfb: Path) -> None:
    given = CASE / "test_data_set_0" / "input_0.pb"
    proc, report = run_json(str(onnx_vmfb), "--device", "cpu", "-n", "1", "--input", f"@{given}")
    assert proc.returncode == 0, proc.stderr
    assert report["compile"] is None or report["compile"].get("vmfb") is None  # precompiled: gputop compiled nothing
    assert results(report) == [(report["function"], "result", 0, expected_type(), "local-task", "local-task", 0, None)]
    assert report["outputs"][0]["shape"] == [4, 8]


def test_an_mlir_exports_every_functions_results(tmp_path: Path) -> None:
    source = tmp_path / "two.mlir"
    source.write_text(TWO_FUNCTIONS)
    proc, report = run_json(str(source), "--device", "cpu", "-n", "1", "--function", "twice")
    assert proc.returncode == 0, proc.stderr
    # Types as the source writes them; `pair` is never called and is exported on the device as well.
    assert results(report) == [
        ("pair", "result", 0, "4xf32", "local-task", "local-task", 0, None),
        ("pair", "result", 1, "2xi32", "local-task", "local-task", 0, None),
        ("twice", "result", 0, "4xf32", "local-task", "local-task", 0, None),
    ]


def test_an_onnx_model_exports_its_graphs_output() -> None:
    proc, report = run_json(str(CASE / "model.onnx"), "--device", "cpu", "-n", "1")
    assert proc.returncode == 0, proc.stderr
    assert results(report) == [(report["function"], "result", 0, expected_type(), "local-task", "local-task", 0, None)]


async def test_the_exports_pane_shows_a_precompiled_vmfbs_result(onnx_vmfb: Path, tmp_path: Path) -> None:
    vmfb = tmp_path / onnx_vmfb.name
    shutil.copy(onnx_vmfb, vmfb)
    given = CASE / "test_data_set_0" / "input_0.pb"
    config = RunConfig(target=str(vmfb), device="local-task", iterations=None, inputs=(f"@{given}",))
    app = GputopApp(EngineBridge(config))
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one("#exports-table", KeyedTable)
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.exports)
        await until_drawn(pilot, app)
        rows = [[str(cell) for cell in table.row_cells(key).values()] for key in table.row_keys]
        assert rows == [
            [f"result 0 {expected_type()}", "local-task", "local-task", "single device", "torch-jit-export"]
        ]
        assert not app.query_one("#exports-hint").display
        await pilot.press("q")
        await pilot.pause(0.5)
    assert app.return_code == 0
