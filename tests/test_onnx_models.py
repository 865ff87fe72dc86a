"""ONNX models as users bring them: float64, NaN/Inf references, unsigned and bf16 outputs, unsupported nodes.

Each case is a small graph built with onnx.helper, run through the real
`gputop run` on local-task with its reference outputs; each asserts the class
of the outcome (passed, check failed, clear error) and its message.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import assert_one_line_error, run_gputop, run_json

tensor = helper.make_tensor_value_info


def save_graph(
    folder: Path,
    name: str,
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    *,
    initializers: list[onnx.TensorProto] | None = None,
    opset: int = 17,
    extra_opsets: list[onnx.OperatorSetIdProto] | None = None,
    ir_version: int | None = None,
) -> Path:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), *(extra_opsets or [])])
    if ir_version is not None:
        model.ir_version = ir_version
    path = folder / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


def save_tensors(folder: Path, **arrays: Any) -> dict[str, str]:
    """Each array as an ONNX TensorProto .pb file; returns name -> path."""
    paths = {}
    for name, array in arrays.items():
        path = folder / f"{name}.pb"
        onnx.save_tensor(numpy_helper.from_array(np.asarray(array)), str(path))
        paths[name] = str(path)
    return paths


def run_model(model: Path, inputs: list[str], checks: list[str], *extra: str) -> tuple[Any, dict[str, Any]]:
    args = [str(model), "--device", "cpu", "-n", "0", *extra]
    for path in inputs:
        args += ["--input", f"@{path}"]
    for path in checks:
        args += ["--check", path]
    return run_json(*args)


def test_double_add_with_broadcasting_keeps_f64(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal(3)
    model = save_graph(
        tmp_path, "add64", [helper.make_node("Add", ["a", "b"], ["y"])],
        [tensor("a", TensorProto.DOUBLE, [2, 3]), tensor("b", TensorProto.DOUBLE, [3])],
        [tensor("y", TensorProto.DOUBLE, [2, 3])],
    )  # fmt: skip
    files = save_tensors(tmp_path, a=a, b=b, y=a + b)
    proc, report = run_model(model, [files["a"], files["b"]], [files["y"]])
    assert proc.returncode == 0, proc.stderr
    assert report["compile"]["f64"] == "kept" and "--iree-input-demote-f64-to-f32=false" in report["compile"]["flags"]
    # Exact in double: a demoted module would be off by float32 rounding (about 1e-8), and fail f64's tolerance.
    assert report["check"]["passed"] and report["check"]["max_abs_err"] == 0.0
    assert report["inputs"][0]["dtype"] == "float64" and report["outputs"][0]["dtype"] == "float64"
    proc, report = run_json(str(model), "--device", "cpu", "-n", "0")  # random inputs take the module's type
    assert proc.returncode == 0, proc.stderr
    assert [row["dtype"] for row in report["inputs"]] == ["float64", "float64"]


@pytest.mark.parametrize(
    ("source", "target"), [(TensorProto.FLOAT, TensorProto.DOUBLE), (TensorProto.DOUBLE, TensorProto.FLOAT)]
)
def test_cast_to_and_from_double(tmp_path: Path, source: int, target: int) -> None:
    x = np.array([1.5, -2.25, 3e-8, 1e30], dtype=helper.tensor_dtype_to_np_dtype(source))
    model = save_graph(
        tmp_path, "cast", [helper.make_node("Cast", ["x"], ["y"], to=target)],
        [tensor("x", source, [4])], [tensor("y", target, [4])],
    )  # fmt: skip
    files = save_tensors(tmp_path, x=x, y=x.astype(helper.tensor_dtype_to_np_dtype(target)))
    proc, report = run_model(model, [files["x"]], [files["y"]])
    assert proc.returncode == 0, proc.stderr
    assert report["check"]["passed"] and report["compile"]["f64"] == "kept"


def test_double_only_inside_a_float_model_is_demoted(tmp_path: Path) -> None:
    x = np.array([4.0, 2.0, 9.0], dtype=np.float32)
    model = save_graph(
        tmp_path, "inner64",
        [helper.make_node("Cast", ["x"], ["d"], to=TensorProto.DOUBLE), helper.make_node("Sqrt", ["d"], ["s"]),
         helper.make_node("Cast", ["s"], ["y"], to=TensorProto.FLOAT)],
        [tensor("x", TensorProto.FLOAT, [3])], [tensor("y", TensorProto.FLOAT, [3])],
    )  # fmt: skip
    files = save_tensors(tmp_path, x=x, y=np.sqrt(x))
    proc, report = run_model(model, [files["x"]], [files["y"]])
    assert proc.returncode == 0, proc.stderr
    assert (
        report["compile"]["f64"] == "demoted"
        and "--iree-input-demote-f64-to-f32=false" not in report["compile"]["flags"]
    )


def test_nan_and_inf_in_the_reference_at_the_same_places_pass(tmp_path: Path) -> None:
    x = np.array([4.0, -1.0, np.inf, 0.0, 7e4], dtype=np.float32)
    model = save_graph(
        tmp_path, "sqrt_half",
        [helper.make_node("Sqrt", ["x"], ["y"]), helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16)],
        [tensor("x", TensorProto.FLOAT, [5])],
        [tensor("y", TensorProto.FLOAT, [5]), tensor("h", TensorProto.FLOAT16, [5])],
    )  # fmt: skip
    with np.errstate(invalid="ignore"):
        y = np.sqrt(x)
    with np.errstate(over="ignore"):
        half = x.astype(np.float16)  # 7e4 overflows float16: +inf
    files = save_tensors(tmp_path, x=x, y=y, h=half)
    proc, report = run_model(model, [files["x"]], [files["y"], files["h"]])
    assert proc.returncode == 0, proc.stderr
    assert report["check"]["passed"] and report["check"]["mismatches"] == 0


def test_a_nan_where_the_reference_has_a_number_fails_with_its_place(tmp_path: Path) -> None:
    x = np.array([4.0, -1.0, 9.0], dtype=np.float32)
    model = save_graph(
        tmp_path, "sqrt", [helper.make_node("Sqrt", ["x"], ["y"])],
        [tensor("x", TensorProto.FLOAT, [3])], [tensor("y", TensorProto.FLOAT, [3])],
    )  # fmt: skip
    files = save_tensors(tmp_path, x=x, y=np.array([2.0, 0.0, 3.0], dtype=np.float32))
    proc, report = run_model(model, [files["x"]], [files["y"]])
    assert proc.returncode == 6, proc.stderr
    check = report["check"]
    assert not check["passed"] and check["mismatches"] == 1
    assert check["max_abs_err"] == float("inf") and check["max_rel_err"] == float("inf")
    first = check["first_mismatch"]
    assert first["index"] == [1] and first["expected"] == 0.0 and first["got"] != first["got"]  # NaN


def test_uint8_bitwise_op_compares_unsigned(tmp_path: Path) -> None:
    p = np.array([255, 200, 129, 7], dtype=np.uint8)
    q = np.array([240, 255, 128, 3], dtype=np.uint8)
    model = save_graph(
        tmp_path, "bitand", [helper.make_node("BitwiseAnd", ["p", "q"], ["y"])],
        [tensor("p", TensorProto.UINT8, [4]), tensor("q", TensorProto.UINT8, [4])],
        [tensor("y", TensorProto.UINT8, [4])], opset=18,
    )  # fmt: skip
    files = save_tensors(tmp_path, p=p, q=q, y=p & q, wrong=(p & q) ^ np.uint8(1))
    proc, report = run_model(model, [files["p"], files["q"]], [files["y"]])
    assert proc.returncode == 0, proc.stderr
    assert report["check"]["passed"] and report["check"]["max_abs_err"] == 0.0
    proc, report = run_model(model, [files["p"], files["q"]], [files["wrong"]])
    assert proc.returncode == 6
    check = report["check"]
    assert check["mismatches"] == 4 and check["max_abs_err"] == 1.0  # integers exact, read unsigned
    assert check["first_mismatch"] == {"output": 0, "index": [0], "got": 240, "expected": 241}


def test_bf16_model_passes_with_the_bf16_tolerance_and_rtol_overrides(tmp_path: Path) -> None:
    x = np.linspace(1.0, 3.0, 16, dtype=np.float32)
    model = save_graph(
        tmp_path, "bf16",
        [helper.make_node("Cast", ["x"], ["h"], to=TensorProto.BFLOAT16), helper.make_node("Mul", ["h", "h"], ["y"])],
        [tensor("x", TensorProto.FLOAT, [16])], [tensor("y", TensorProto.BFLOAT16, [16])],
    )  # fmt: skip
    # ONNX's reference rounds x to bf16 first, then squares; IREE fuses the cast into the product
    # and rounds once: both are correct bf16 answers, a few bf16 ulps apart.
    fused = (x.astype(np.float64) ** 2).astype(ml_dtypes.bfloat16)
    reference = (x.astype(ml_dtypes.bfloat16).astype(np.float64) ** 2).astype(ml_dtypes.bfloat16)
    assert (fused != reference).any()
    files = save_tensors(tmp_path, x=x, y=reference)
    proc, report = run_model(model, [files["x"]], [files["y"]])
    assert proc.returncode == 0, proc.stderr
    assert report["check"]["passed"] and report["check"]["max_abs_err"] > 0  # bf16 rounding, within tolerance
    assert report["outputs"][0]["dtype"] == "bfloat16" and report["outputs"][0]["max"] > 8.9
    proc, report = run_model(model, [files["x"]], [files["y"]], "--rtol", "0", "--atol", "0")
    assert proc.returncode == 6 and report["check"]["mismatches"] >= 1 and report["check"]["max_abs_err"] > 0


def test_unsupported_op_names_its_node(tmp_path: Path) -> None:
    model = save_graph(
        tmp_path, "reduce",
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("ReduceMin", ["r", "axes"], ["y"], keepdims=1)],
        [tensor("x", TensorProto.FLOAT, [3, 4]), tensor("axes", TensorProto.INT64, [1])],
        [tensor("y", TensorProto.FLOAT, None)], opset=18,
    )  # fmt: skip
    proc, _ = run_json(str(model), "--device", "cpu", "-n", "0", "--input", "3x4xf32=1", "--input", "1xi64=1")
    assert_one_line_error(
        proc, 3, "ONNX node 'ReduceMin_1' (ReduceMin, opset 18)", "not supported by IREE 3.13's ONNX import",
        "axes given as a runtime input",
    )  # fmt: skip


def test_unknown_operator_keeps_its_given_node_name(tmp_path: Path) -> None:
    model = save_graph(
        tmp_path, "odd", [helper.make_node("NoSuchOperator", ["x"], ["y"], name="my_layer")],
        [tensor("x", TensorProto.FLOAT, [2])], [tensor("y", TensorProto.FLOAT, [2])],
    )  # fmt: skip
    proc, _ = run_json(str(model), "--device", "cpu", "-n", "0")
    line = assert_one_line_error(
        proc, 3, "ONNX node 'my_layer' (NoSuchOperator, opset 17)", "no conversion matched this node"
    )
    assert "torch." not in line and "%" not in line


def test_ai_onnx_ml_op_is_refused_before_importing(tmp_path: Path) -> None:
    model = save_graph(
        tmp_path, "ml", [helper.make_node("Binarizer", ["x"], ["y"], domain="ai.onnx.ml", threshold=0.5)],
        [tensor("x", TensorProto.FLOAT, [4])], [tensor("y", TensorProto.FLOAT, [4])],
        extra_opsets=[helper.make_opsetid("ai.onnx.ml", 3)],
    )  # fmt: skip
    proc, _ = run_json(str(model), "--device", "cpu", "-n", "0")
    line = assert_one_line_error(
        proc, 3, "ONNX node 'Binarizer_0' (Binarizer, domain ai.onnx.ml, opset 3)", "domain ai.onnx.ml is not imported"
    )
    assert "invalid version" not in line


def test_float4_is_refused_naming_the_type(tmp_path: Path) -> None:
    model = save_graph(
        tmp_path, "fp4",
        [helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT4E2M1),
         helper.make_node("Cast", ["h"], ["y"], to=TensorProto.FLOAT)],
        [tensor("x", TensorProto.FLOAT, [4])], [tensor("y", TensorProto.FLOAT, [4])], opset=23,
    )  # fmt: skip
    proc, _ = run_json(str(model), "--device", "cpu", "-n", "0")
    assert_one_line_error(proc, 3, "FLOAT4E2M1 is not supported by IREE 3.13's ONNX import", "Cast_0")


def test_old_export_with_initializers_outside_the_inputs(tmp_path: Path) -> None:
    w = np.arange(4, dtype=np.float32) / 4
    x = np.array([1.0, -1.0, 0.5, 2.0], dtype=np.float32)
    model = save_graph(
        tmp_path, "old", [helper.make_node("Add", ["x", "w"], ["y"])],
        [tensor("x", TensorProto.FLOAT, [4])], [tensor("y", TensorProto.FLOAT, [4])],
        initializers=[numpy_helper.from_array(w, "w")], opset=7, ir_version=3,
    )  # fmt: skip
    files = save_tensors(tmp_path, x=x, y=x + w)
    proc, report = run_model(model, [files["x"]], [files["y"]])
    assert proc.returncode == 0, proc.stderr
    assert report["check"]["passed"] and len(report["inputs"]) == 1


def test_an_importer_killed_by_a_signal_is_one_line() -> None:
    from gputop.core.onnx.onnx_import import import_failure

    # What the child leaves when it dies inside the importer's native code: no verdict line.
    text = "Fatal Python error: Segmentation fault\n\nThread 0x00007f (most recent call first):\n  File ..."
    assert import_failure(text, -11) == "the ONNX importer crashed (signal 11)"
    assert import_failure("gputop-onnx: ONNX node 'A' (Abs, opset 17): x\n", 1) == "ONNX node 'A' (Abs, opset 17): x"


def test_given_inputs_are_counted_against_the_graph(tmp_path: Path) -> None:
    model = save_graph(
        tmp_path, "two", [helper.make_node("Add", ["a", "b"], ["y"])],
        [tensor("a", TensorProto.FLOAT, [2]), tensor("b", TensorProto.FLOAT, [2])],
        [tensor("y", TensorProto.FLOAT, [2])],
    )  # fmt: skip
    proc, _ = run_json(str(model), "--device", "cpu", "-n", "0", "--input", "2xf32=1")
    assert_one_line_error(proc, 2, "takes 2 inputs (2xf32, 2xf32), 1 given: one --input each, in order")


def test_a_random_op_failing_its_check_says_why(tmp_path: Path) -> None:
    model = save_graph(
        tmp_path, "coin", [helper.make_node("Bernoulli", ["p"], ["y"])],
        [tensor("p", TensorProto.FLOAT, [64])], [tensor("y", TensorProto.FLOAT, [64])], opset=22,
    )  # fmt: skip
    files = save_tensors(tmp_path, p=np.full(64, 0.5, np.float32), y=np.arange(64, dtype=np.float32) % 2)
    proc = run_gputop(
        "run", str(model), "--device", "cpu", "-n", "0", "--input", f"@{files['p']}", "--check", files["y"]
    )
    assert proc.returncode == 6, proc.stderr
    assert "the model draws random numbers (Bernoulli)" in proc.stderr


def test_inputs_changed_by_the_opset_upgrade_are_said(tmp_path: Path) -> None:
    """Scan 8 has a batch axis that the upgrade to 9+ drops: the old-shaped inputs are refused, saying why."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_in"], ["s_out"]), helper.make_node("Identity", ["s_out"], ["y_out"])],
        "body",
        [tensor("s_in", TensorProto.FLOAT, [2]), tensor("x_in", TensorProto.FLOAT, [2])],
        [tensor("s_out", TensorProto.FLOAT, [2]), tensor("y_out", TensorProto.FLOAT, [2])],
    )
    model = save_graph(
        tmp_path, "scan8", [helper.make_node("Scan", ["", "s", "x"], ["s_final", "ys"], num_scan_inputs=1, body=body)],
        [tensor("s", TensorProto.FLOAT, [1, 2]), tensor("x", TensorProto.FLOAT, [1, 3, 2])],
        [tensor("s_final", TensorProto.FLOAT, [1, 2]), tensor("ys", TensorProto.FLOAT, [1, 3, 2])], opset=8,
    )  # fmt: skip
    proc, _ = run_json(str(model), "--device", "cpu", "-n", "0", "--input", "1x2xf32=0", "--input", "1x3x2xf32=1")
    assert_one_line_error(
        proc, 2, "input 0 has shape 1x2", "the ONNX opset upgrade from 8 to 17 changed the model's inputs: 's' 1x2 -> 2"
    )
    proc, report = run_json(str(model), "--device", "cpu", "-n", "0", "--input", "2xf32=0", "--input", "3x2xf32=1")
    assert proc.returncode == 0, proc.stderr
    assert report["outputs"][0]["max"] == 3.0  # three steps of +1


def test_a_compiler_crash_on_an_onnx_model_is_one_line(tmp_path: Path) -> None:
    """IREE 3.13 segfaults on `--iree-vulkan-target=sm_90` (PLATFORM.md): a crash, said as one."""
    model = save_graph(
        tmp_path, "relu", [helper.make_node("Relu", ["x"], ["y"])],
        [tensor("x", TensorProto.FLOAT, [4])], [tensor("y", TensorProto.FLOAT, [4])],
    )  # fmt: skip
    flags = "--iree-hal-target-device=vulkan --iree-vulkan-target=sm_90"
    proc, _ = run_json(str(model), "--device", "cpu", "-n", "0", "--target-flags", flags, "--no-cache")
    line = assert_one_line_error(proc, 3, "the compiler crashed (signal 11)", "sm_90")
    assert "ONNX node" not in line  # the target crashed it, not the node: no node is blamed


def test_a_compiler_crash_on_lavapipe_names_the_node(tmp_path: Path, vulkan_device: str) -> None:
    """IREE 3.13's Vulkan compile of NonMaxSuppression segfaults: one line, naming the node it was compiling."""
    from onnx.backend.test.case import node

    name = "test_nonmaxsuppression_center_point_box_format"
    with warnings.catch_warnings():  # the generators of other ops warn as they are imported
        warnings.simplefilter("ignore")
        case = next(c for c in node.collect_testcases("NonMaxSuppression") if c.name == name)
    model = tmp_path / "nms.onnx"
    onnx.save(case.model, str(model))
    args = [str(model), "--device", vulkan_device, "-n", "0"]
    for index, value in enumerate(case.data_sets[0][0]):
        args += ["--input", f"@{save_tensors(tmp_path, **{f'input{index}': value})[f'input{index}']}"]
    proc, _ = run_json(*args)
    assert_one_line_error(
        proc, 3, "the compiler crashed (signal 11) while compiling ONNX node 'NonMaxSuppression_0' (NonMaxSuppression"
    )


def test_an_error_in_a_dispatch_source_names_its_onnx_nodes(tmp_path: Path, vulkan_device: str) -> None:
    """i64 arithmetic fails in the default SPIR-V target's dispatch source (`module_g$async_dispatch_0.mlir:16:8:
    failed to legalize ...`): the one line names the ONNX node of the failing op and the nodes fused with it,
    and the kept source it names shows each op's node."""
    model = save_graph(
        tmp_path, "g",
        [
            helper.make_node("Mul", ["x", "y"], ["m"], name="scale_by_y"),
            helper.make_node("Div", ["m", "y"], ["d"], name="divide_back"),
            helper.make_node("Add", ["d", "x"], ["out"], name="add_residual"),
        ],
        [tensor("x", TensorProto.INT64, [64]), tensor("y", TensorProto.INT64, [64])],
        [tensor("out", TensorProto.INT64, [64])],
    )  # fmt: skip
    folder = str(tmp_path / "session")
    proc, _ = run_json(str(model), "--device", vulkan_device, "-n", "0", "--no-cache", "--session-dir", folder)
    line = assert_one_line_error(
        proc, 3, "g.onnx: ONNX node 'add_residual' (Add, opset 17), in one dispatch with 'scale_by_y' (Mul), "
        "'divide_back' (Div): ", "_dispatch_0.mlir:", "failed to legalize",
    )  # fmt: skip
    kept = Path(line.split("): ", 1)[1].split(".mlir:", 1)[0] + ".mlir")
    assert 'loc("divide_back")' in kept.read_text(), kept  # the file it names says which node each op is
    assert "loc(" not in line.split("(full log:")[0]  # the op's own location is said once, at its start


def test_a_float16_output_against_a_float32_reference_takes_float16s_tolerance(tmp_path: Path) -> None:
    """An fp16 model's answer is held to float16's tolerance, even when its reference was saved as float32."""
    x = np.linspace(0.5, 60.0, 64, dtype=np.float32)
    model = save_graph(
        tmp_path, "half_sqrt",
        [helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16), helper.make_node("Sqrt", ["h"], ["y"])],
        [tensor("x", TensorProto.FLOAT, [64])], [tensor("y", TensorProto.FLOAT16, [64])],
    )  # fmt: skip
    files = save_tensors(tmp_path, x=x, y=np.sqrt(x))  # float32 reference: finer than any fp16 answer
    proc, report = run_model(model, [files["x"]], [files["y"]])
    assert proc.returncode == 0, proc.stderr
    check = report["check"]
    assert check["passed"] and check["max_rel_err"] > 1e-4  # fp16 rounding: float32's tolerance would fail it
    assert check["tolerances"] == [{"output": 0, "dtype": "float16", "rtol": 2e-3, "atol": 1e-3}]


def test_an_input_without_an_inferred_shape_is_named_not_its_node(tmp_path: Path) -> None:
    """IREE's importer types a value whose shape it cannot infer as rank 0 (TorchScript exports of
    nn.MultiheadAttention: ViT, DETR), and the next node then matches no conversion: the error says
    which input had no shape and how to give it one, rather than blaming the node."""
    model = save_graph(
        tmp_path, "shapeless",
        [helper.make_node("Reshape", ["x", "s"], ["r"], name="reshape0"),
         helper.make_node("Transpose", ["r"], ["y"], perm=[1, 0], name="transpose0")],
        [tensor("x", TensorProto.FLOAT, [2, 3]), tensor("s", TensorProto.INT64, ["n"])],
        [tensor("y", TensorProto.FLOAT, None)],
    )  # fmt: skip
    proc, _ = run_json(str(model), "--device", "cpu", "-n", "0", "--input", "2x3xf32=1", "--input", "2xi64=3,2")
    line = assert_one_line_error(proc, 3, "ONNX node 'transpose0' (Transpose, opset 17)")
    assert "could not infer the shape of its input 'r'" in line and "rank 0" in line, line
    assert "dynamo=True" in line and "no conversion matched" not in line
