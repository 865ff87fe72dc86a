"""Parameter files reach the module through ParameterIndex, on CPU and Vulkan."""

from __future__ import annotations

import re
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
    # Host-memory devices (the CPU, lavapipe) map the file; GPUs stream it with gputop's loader.
    expected = "streamed" if report["device"]["kind"] == "gpu" else "mmap"
    assert report["parameters"]["mode"] == expected
    assert report["phases"]["parameters_s"] > 0
    assert report["parameters"]["bytes"] == 32 and report["parameters"]["seconds"] > 0


def test_missing_parameter_file(module_and_params: tuple[Path, Path], tmp_path: Path) -> None:
    source, _ = module_and_params
    proc = run_gputop("run", str(source), "--device", "cpu", "--params", str(tmp_path / "nope.irpa"))
    assert_one_line_error(proc, 2, "nope.irpa: no such file")


def test_module_without_its_parameters(module_and_params: tuple[Path, Path]) -> None:
    source, _ = module_and_params
    proc = run_gputop("run", str(source), "--device", "cpu", "--input", "8xf32=1")
    assert_one_line_error(proc, 5, "give it with --params")


# -- model-like archives: the streamed loader end to end, limits, progress -------------------------------------


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A 40-tensor, 64 MiB model-like archive, its head module and the head's expected output."""
    from gputop.core.params.archive import expected_head, head_module_source, model_layout, write_irpa

    folder = tmp_path_factory.mktemp("model")
    specs = model_layout(40, 64 * 2**20)
    write_irpa(folder / "model.irpa", specs)
    (folder / "head.mlir").write_text(head_module_source(specs))
    np.save(folder / "expected.npy", expected_head(len(specs)))
    return folder / "head.mlir", folder / "model.irpa", folder / "expected.npy"


@pytest.mark.parametrize("device", ["local-task", "vulkan"])
@pytest.mark.parametrize("mode", ["streamed", "mmap", "file_async"])
def test_every_loading_path_brings_the_whole_model(
    device: str, mode: str, model: tuple[Path, Path, Path], request: pytest.FixtureRequest
) -> None:
    if device == "vulkan":
        request.getfixturevalue("vulkan_device")
    source, archive, expected = model
    proc, report = run_json(
        str(source), "--device", device, "-n", "1", "--params", str(archive), "--params-mode", mode,
        "--check", str(expected),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert report["check"]["passed"] and report["check"]["max_abs_err"] == 0
    params = report["parameters"]
    assert params["mode"] == mode and params["files"] == [str(archive)]
    from gputop.core.params.archive import read_archive

    assert params["bytes"] == sum(e.length for e in read_archive(archive))
    assert params["seconds"] > 0
    # The CPU reads a mapped file in place: nothing moves, so there is no rate to claim.
    assert params["zero_copy"] == (device == "local-task" and mode == "mmap")
    if params["zero_copy"]:
        assert params["gbps"] is None and "mapped in place by mmap (zero copy)" in proc.stderr
    else:
        assert params["gbps"] == pytest.approx(params["bytes"] / params["seconds"] / 1e9)


def test_a_parameter_over_a_lavapipe_limit_is_refused_before_loading(vulkan_device: str, tmp_path: Path) -> None:
    """lavapipe allows 2 GiB per allocation (maxMemoryAllocationSize): a 3 GiB parameter is named, with both sizes."""
    import iree.runtime as rt

    from gputop.core.params.archive import TensorSpec, head_module_source

    index = rt.ParameterIndex()
    index.add_splat("blk.0.ffn_up.weight", np.float32(1.0), 3 * 2**30)  # a splat: 3 GiB in a 4 KiB file
    index.add_buffer("output_norm.weight", np.ones(16, np.float32).tobytes())
    index.create_archive_file(str(tmp_path / "big.irpa"))
    specs = [TensorSpec("blk.0.ffn_up.weight", 3 * 2**30 // 4), TensorSpec("output_norm.weight", 16)]
    source = tmp_path / "big.mlir"
    source.write_text(head_module_source(specs))
    proc = run_gputop("run", str(source), "--device", vulkan_device, "--params", str(tmp_path / "big.irpa"))
    line = assert_one_line_error(proc, 5, "parameter 'blk.0.ffn_up.weight' (3.00 GiB)", "big.irpa")
    assert "at most 2.00 GiB (maxMemoryAllocationSize)" in line
    assert "context" not in proc.stderr  # refused before any context was made


def test_a_model_larger_than_free_memory_is_refused_in_one_line(tmp_path: Path) -> None:
    import iree.runtime as rt
    import psutil

    from gputop.core.params.archive import TensorSpec, head_module_source

    size = (psutil.virtual_memory().total // 2**30 + 8) * 2**30  # more than the machine has
    index = rt.ParameterIndex()
    index.add_splat("token_embd.weight", np.float32(0.0), size)
    index.create_archive_file(str(tmp_path / "huge.irpa"))
    source = tmp_path / "huge.mlir"
    source.write_text(head_module_source([TensorSpec("token_embd.weight", size // 4)]))
    proc = run_gputop("run", str(source), "--device", "cpu", "--params", str(tmp_path / "huge.irpa"))
    line = assert_one_line_error(proc, 5, f"the parameters need {size / 2**30:.2f} GiB on local-task")
    assert "is free (host memory available)" in line and "'token_embd.weight'" in line


def test_params_mode_is_checked() -> None:
    proc = run_gputop("run", "demo:mlp", "--params-mode", "fast")
    assert proc.returncode == 2 and "--params-mode" in proc.stderr


def test_a_long_load_shows_its_progress(tmp_path: Path) -> None:
    """`gputop run` prints bytes loaded of the total, GB/s and time left while the parameters stream in.

    A 1 GiB model read from a cold page cache by the streamed loader on local-task
    (seconds on the 2-core CI machine); the lines must show loading under way.
    """

    from gputop.core.params.archive import evict_from_page_cache, write_model

    archive, source = tmp_path / "model.irpa", tmp_path / "head.mlir"
    specs = write_model(archive, source, 64, 2**30)
    evict_from_page_cache(archive)  # cold: read from the disk
    proc = run_gputop(
        "run", str(source), "--device", "local-task", "-n", "0", "--params", str(archive), "--params-mode", "streamed"
    )
    assert proc.returncode == 0, proc.stderr
    total = sum(s.nbytes for s in specs)
    progress = re.findall(
        r"gputop: parameters ([\d.]+ [KMG]?i?B) / ([\d.]+ MiB) \((\d+)%\)  ([\d.]+) GB/s  ([\d.]+) s left  streamed",
        proc.stderr,
    )
    assert progress, proc.stderr
    assert {p[1] for p in progress} == {f"{total / 2**20:.1f} MiB"}
    shares = [int(p[2]) for p in progress]
    assert shares == sorted(shares) and shares[0] < 100
    done = re.search(r"parameters loaded by streamed: ([\d.]+) MiB in ([\d.]+) s, ([\d.]+) GB/s", proc.stderr)
    assert done and float(done.group(1)) == pytest.approx(total / 2**20, abs=0.01)
