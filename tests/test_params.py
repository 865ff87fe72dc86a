"""Parameter files reach the module through ParameterIndex, on CPU and Vulkan."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import assert_one_line_error, run_gputop, run_json

SCALE_MLIR = """
util.global private @weight = #flow.parameter.named<"model"::"weight"> : tensor<8xf32>
func.func @scale(%x: tensor<8xf32>) -> tensor<8xf32> {
  %w = util.global.load @weight : tensor<8xf32>
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%x, %w : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %y = arith.mulf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
"""


@pytest.fixture()
def module_and_params(tmp_path: Path) -> tuple[Path, Path]:
    import iree.runtime as rt

    source = tmp_path / "scale.mlir"
    source.write_text(SCALE_MLIR)
    index = rt.ParameterIndex()
    index.add_buffer("weight", np.arange(1, 9, dtype=np.float32).tobytes())
    archive = tmp_path / "weights.irpa"
    index.create_archive_file(str(archive))
    return source, archive


@pytest.mark.parametrize("device", ["local-task", "vulkan"])
def test_irpa_parameters_reach_the_module(
    device: str, module_and_params: tuple[Path, Path], request: pytest.FixtureRequest
) -> None:
    if device == "vulkan":
        request.getfixturevalue("vulkan_device")
    source, archive = module_and_params
    proc, report = run_json(str(source), "--device", device, "-n", "2", "--params", str(archive), "--input", "8xf32=2")
    assert proc.returncode == 0, proc.stderr
    out = report["outputs"][0]
    # x * w with x = 2 and w = 1..8
    assert out["min"] == 2.0 and out["max"] == 16.0 and out["mean"] == pytest.approx(9.0)
    # Host-memory devices (the CPU, lavapipe) map the file; GPU Vulkan reads it asynchronously.
    expected = "file_async" if report["device"]["kind"] == "gpu" else "mmap"
    assert report["parameters"]["mode"] == expected
    assert report["phases"]["parameters_s"] > 0


def test_missing_parameter_file(module_and_params: tuple[Path, Path], tmp_path: Path) -> None:
    source, _ = module_and_params
    proc = run_gputop("run", str(source), "--device", "cpu", "--params", str(tmp_path / "nope.irpa"))
    assert_one_line_error(proc, 2, "nope.irpa: no such file")


def test_module_without_its_parameters(module_and_params: tuple[Path, Path]) -> None:
    source, _ = module_and_params
    proc = run_gputop("run", str(source), "--device", "cpu", "--input", "8xf32=1")
    assert_one_line_error(proc, 5, "give it with --params")
