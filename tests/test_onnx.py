"""ONNX models in: the onnx package's own test models, imported, run and checked."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from conftest import assert_one_line_error, run_gputop, run_json

DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
SINGLE_LAYER = ["test_Conv2d", "test_Linear", "test_Softmax", "test_BatchNorm2d_eval", "test_MaxPool2d"]


def case(name: str) -> tuple[Path, Path, Path]:
    folder = DATA / "pytorch-converted" / name
    return folder / "model.onnx", folder / "test_data_set_0" / "input_0.pb", folder / "test_data_set_0" / "output_0.pb"


@pytest.mark.parametrize("name", SINGLE_LAYER)
def test_single_layer_models_match_their_outputs(name: str) -> None:
    model, given, expected = case(name)
    proc, report = run_json(str(model), "--device", "cpu", "-n", "2", "--input", f"@{given}", "--check", str(expected))
    assert proc.returncode == 0, proc.stderr
    assert report["check"]["passed"], report["check"]
    assert report["outputs"][0]["shape"] == list(np.asarray(onnx.numpy_helper.to_array(
        onnx.load_tensor(str(expected)))).shape)  # fmt: skip


@pytest.mark.parametrize("name", SINGLE_LAYER)
def test_single_layer_models_on_lavapipe(name: str, vulkan_device: str) -> None:
    model, given, expected = case(name)
    proc, report = run_json(
        str(model), "--device", vulkan_device, "-n", "1", "--input", f"@{given}", "--check", str(expected)
    )
    assert proc.returncode == 0, proc.stderr
    assert report["check"]["passed"]


def test_light_squeezenet_with_its_dummy_input(tmp_path: Path) -> None:
    model = DATA / "light" / "light_squeezenet.onnx"
    # The light models' expected outputs belong to the input arange(n)/n reshaped.
    x = (np.arange(3 * 224 * 224, dtype=np.float32) / (3 * 224 * 224)).reshape(1, 3, 224, 224)
    np.save(tmp_path / "x.npy", x)
    proc, report = run_json(
        str(model), "--device", "cpu", "-n", "1", "--input", f"@{tmp_path / 'x.npy'}",
        "--check", str(DATA / "light" / "light_squeezenet_output_0.pb"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert report["check"]["passed"] and report["outputs"][0]["shape"] == [1, 1000, 1, 1]


def test_inputs_come_from_the_graph_and_imports_are_cached() -> None:
    model, _, _ = case("test_ReLU")
    first = run_gputop("run", str(model), "--device", "cpu", "-n", "1")
    assert first.returncode == 0, first.stderr
    assert "output 0  2x3x4x5 float32" in first.stdout
    second = run_gputop("run", str(model), "--device", "cpu", "-n", "1")
    assert "import cache hit" in second.stderr


def save_model(path: Path, node: onnx.NodeProto, dims: list[int | str]) -> Path:
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_dynamic_dimension_asks_for_input(tmp_path: Path) -> None:
    model = save_model(tmp_path / "dyn.onnx", helper.make_node("Relu", ["x"], ["y"]), ["batch", 4])
    proc = run_gputop("run", str(model), "--device", "cpu", "-n", "1")
    assert_one_line_error(proc, 2, "dynamic dimension 'batch'", "--input")


def test_not_a_model(tmp_path: Path) -> None:
    fake = tmp_path / "fake.onnx"
    fake.write_bytes(b"\x08\x07" + b"this is not protobuf at all" * 20)
    assert_one_line_error(run_gputop("run", str(fake), "--device", "cpu"), 2, "not an ONNX model")


def test_unsupported_op(tmp_path: Path) -> None:
    model = save_model(tmp_path / "odd.onnx", helper.make_node("NoSuchOperator", ["x"], ["y"]), [2, 4])
    proc = run_gputop("run", str(model), "--device", "cpu", "-n", "1")
    line = assert_one_line_error(proc, 3, "odd.onnx")
    assert "full log:" in line


def dummy_imagenet_input(folder: Path) -> Path:
    """The light models' expected outputs belong to the input arange(n)/n reshaped."""
    x = (np.arange(3 * 224 * 224, dtype=np.float32) / (3 * 224 * 224)).reshape(1, 3, 224, 224)
    np.save(folder / "x.npy", x)
    return folder / "x.npy"


def test_light_resnet50_with_its_kernel_table(tmp_path: Path) -> None:
    model = DATA / "light" / "light_resnet50.onnx"
    proc, report = run_json(
        str(model), "--device", "cpu", "-n", "1", "--input", f"@{dummy_imagenet_input(tmp_path)}",
        "--check", str(DATA / "light" / "light_resnet50_output_0.pb"), "--profile",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert report["check"]["passed"] and report["outputs"][0]["shape"] == [1, 1000]
    assert "--iree-opt-const-eval=false" in report["compile"]["flags"]
    assert Path(report["compile"]["vmfb"]).stat().st_size < 2_000_000  # weights folded at load, not inlined
    names = [k["name"] for k in report["kernels"]]
    assert len(names) > 30 and any("conv" in n for n in names), names
    assert report["phases"]["import_s"] is not None


def test_external_weights_go_through_a_parameter_archive(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((256, 1024)).astype(np.float32)
    bias = rng.standard_normal(1024).astype(np.float32)
    x = rng.standard_normal((4, 256)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 1024])],
        [onnx.numpy_helper.from_array(weight, "W"), onnx.numpy_helper.from_array(bias, "b")],
    )
    model = tmp_path / "mlp.onnx"
    onnx.save_model(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(model),
        save_as_external_data=True, location="mlp.weights", size_threshold=1024,
    )  # fmt: skip
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", x @ weight + bias)
    proc, report = run_json(
        str(model),
        "--device",
        "cpu",
        "-n",
        "2",
        "--input",
        f"@{tmp_path / 'x.npy'}",
        "--check",
        str(tmp_path / "y.npy"),
    )
    assert proc.returncode == 0, proc.stderr
    assert report["check"]["passed"]
    [archive] = report["parameters"]["files"]
    assert archive.endswith(".irpa") and Path(archive).stat().st_size >= weight.nbytes
    assert report["parameters"]["mode"] == "mmap"
    # The weights are not in the module: it is smaller than one of them.
    assert Path(report["compile"]["vmfb"]).stat().st_size < weight.nbytes // 4
    (tmp_path / "mlp.weights").unlink()
    proc = run_gputop("run", str(model), "--device", "cpu", "-n", "1", "--no-cache")
    assert proc.returncode in (2, 3) and "Traceback" not in proc.stderr


@pytest.mark.skipif(
    not os.environ.get("GPUTOP_SLOW_TESTS"), reason="about 9 minutes a call on lavapipe: set GPUTOP_SLOW_TESTS=1"
)
def test_light_squeezenet_on_lavapipe(tmp_path: Path, vulkan_device: str) -> None:
    model = DATA / "light" / "light_squeezenet.onnx"
    proc, report = run_json(
        str(model), "--device", vulkan_device, "-n", "0", "--input", f"@{dummy_imagenet_input(tmp_path)}",
        "--check", str(DATA / "light" / "light_squeezenet_output_0.pb"), timeout=3600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert report["check"]["passed"]


def test_a_float32_output_against_its_float64_reference_takes_float32s_tolerance(tmp_path: Path) -> None:
    """NumPy saves float64 by default: the same numbers as float64 must not be held to float64's tolerance."""
    model, given, expected = case("test_Conv2d")
    reference = onnx.numpy_helper.to_array(onnx.load_tensor(str(expected))).astype(np.float64)
    np.save(tmp_path / "y64.npy", reference)
    proc, report = run_json(
        str(model), "--device", "cpu", "-n", "0", "--input", f"@{given}", "--check", str(tmp_path / "y64.npy")
    )
    assert proc.returncode == 0, proc.stderr
    check = report["check"]
    assert check["passed"] and check["mismatches"] == 0 and check["max_abs_err"] > 1e-9  # float32 rounding
    assert check["tolerances"] == [{"output": 0, "dtype": "float32", "rtol": 1e-4, "atol": 1e-5}]
    printed = run_gputop(
        "run", str(model), "--device", "cpu", "-n", "0", "--input", f"@{given}", "--check", str(tmp_path / "y64.npy")
    )
    assert printed.returncode == 0, printed.stderr
    assert "check     PASSED against y64.npy" in printed.stdout and "float32 tolerance (rtol 0.0001" in printed.stdout


def test_a_forgotten_reference_names_the_unchecked_output() -> None:
    """A two-output model checked against one reference: a pass, but never a silent full pass."""
    folder = DATA / "pytorch-operator" / "test_operator_chunk"
    data = folder / "test_data_set_0"
    proc, report = run_json(
        str(folder / "model.onnx"), "--device", "cpu", "-n", "0",
        "--input", f"@{data / 'input_0.pb'}", "--check", str(data / "output_0.pb"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(report["outputs"]) == 2
    assert report["check"]["passed"] and report["check"]["unchecked"] == [1]
    printed = run_gputop(
        "run", str(folder / "model.onnx"), "--device", "cpu", "-n", "0",
        "--input", f"@{data / 'input_0.pb'}", "--check", str(data / "output_0.pb"),
    )  # fmt: skip
    assert "check     output 1 of 2 not checked (no reference given)" in printed.stdout
    assert "gputop: output 1 of 2 not checked" in printed.stderr  # the run's log says it as it happens
    proc, report = run_json(
        str(folder / "model.onnx"), "--device", "cpu", "-n", "0", "--input", f"@{data / 'input_0.pb'}",
        "--check", str(data / "output_0.pb"), "--check", str(data / "output_1.pb"),
    )  # fmt: skip
    assert report["check"]["passed"] and report["check"]["unchecked"] == []
