"""Kernels in the model's words: every kernel traced to the ONNX nodes or source lines it came from.

The models are real ONNX graphs built here with the `onnx` package, their
nodes named as torch's exporter names them (`/layer1/conv1/Conv`), run by the
real engine on local-task with a profile pass. The second source is the graph
itself: every compute node of it must appear under some kernel, and each
kernel's ops must be nodes of the graph with their own op types. For `.mlir`
the second source is the file read by hand: the line and column each source op
names holds that op.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import run_json

RNG = np.random.default_rng(46)
# Nodes that compute (the others only reshape or name values, and may vanish into an indexing map).
SHAPING = {"Constant", "Reshape", "Flatten", "Transpose", "Identity", "Squeeze", "Unsqueeze", "Shape"}


def _init(name: str, *shape: int) -> onnx.TensorProto:
    return numpy_helper.from_array((RNG.standard_normal(shape) * 0.1).astype(np.float32), name)


def _save(folder: Path, name: str, nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto], x: list[int],
          y: list[int]) -> tuple[Path, Path]:  # fmt: skip
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y)], inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    path = folder / f"{name}.onnx"
    onnx.save(model, str(path))
    np.save(folder / f"{name}_x.npy", RNG.standard_normal(x).astype(np.float32))
    return path, folder / f"{name}_x.npy"


def conv_net(folder: Path) -> tuple[Path, Path]:
    """conv -> batchnorm -> relu -> maxpool -> conv (stride 2) -> relu -> flatten -> matmul -> add."""
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c1"], name="/layer1/conv1/Conv", pads=[1, 1, 1, 1]),
        node("BatchNormalization", ["c1", "g", "beta", "mean", "var"], ["n1"], name="/layer1/bn1/BatchNormalization"),
        node("Relu", ["n1"], ["r1"], name="/layer1/relu/Relu"),
        node("MaxPool", ["r1"], ["p1"], name="/layer1/pool/MaxPool", kernel_shape=[2, 2], strides=[2, 2]),
        node("Conv", ["p1", "w2", "b2"], ["c2"], name="/layer2/conv1/Conv", pads=[1, 1, 1, 1], strides=[2, 2]),
        node("Relu", ["c2"], ["r2"], name="/layer2/relu/Relu"),
        node("Flatten", ["r2"], ["f"], name="/flatten/Flatten"),
        node("MatMul", ["f", "fcw"], ["m"], name="/fc/MatMul"),
        node("Add", ["m", "fcb"], ["y"], name="/fc/Add"),
    ]
    variance = numpy_helper.from_array(RNG.uniform(0.5, 1.5, 8).astype(np.float32), "var")
    inits = [_init("w1", 8, 3, 3, 3), _init("b1", 8), _init("g", 8), _init("beta", 8), _init("mean", 8), variance,
             _init("w2", 16, 8, 3, 3), _init("b2", 16), _init("fcw", 256, 10), _init("fcb", 10)]  # fmt: skip
    return _save(folder, "convnet", nodes, inits, [1, 3, 16, 16], [1, 10])


def transformer_block(folder: Path) -> tuple[Path, Path]:
    """Pre-norm attention (one head) and an MLP, each with its residual, as torch exports them."""
    node = helper.make_node
    d, t = 32, 16
    nodes = [
        node("LayerNormalization", ["x", "ln1_g", "ln1_b"], ["h"], name="/block/ln_1/LayerNormalization", axis=-1),
        node("MatMul", ["h", "wq"], ["q"], name="/block/attn/q_proj/MatMul"),
        node("MatMul", ["h", "wk"], ["k"], name="/block/attn/k_proj/MatMul"),
        node("MatMul", ["h", "wv"], ["v"], name="/block/attn/v_proj/MatMul"),
        node("Transpose", ["k"], ["kt"], name="/block/attn/Transpose", perm=[0, 2, 1]),
        node("MatMul", ["q", "kt"], ["s"], name="/block/attn/MatMul"),
        node("Mul", ["s", "scale"], ["ss"], name="/block/attn/Mul"),
        node("Softmax", ["ss"], ["p"], name="/block/attn/Softmax", axis=-1),
        node("MatMul", ["p", "v"], ["a"], name="/block/attn/MatMul_1"),
        node("MatMul", ["a", "wo"], ["o"], name="/block/attn/o_proj/MatMul"),
        node("Add", ["x", "o"], ["r1"], name="/block/Add"),
        node("LayerNormalization", ["r1", "ln2_g", "ln2_b"], ["h2"], name="/block/ln_2/LayerNormalization", axis=-1),
        node("MatMul", ["h2", "w1"], ["u"], name="/block/mlp/fc1/MatMul"),
        node("Relu", ["u"], ["g"], name="/block/mlp/act/Relu"),
        node("MatMul", ["g", "w2"], ["dn"], name="/block/mlp/fc2/MatMul"),
        node("Add", ["r1", "dn"], ["y"], name="/block/Add_1"),
    ]
    scale = numpy_helper.from_array(np.array(1 / np.sqrt(d), dtype=np.float32), "scale")
    inits = [_init("ln1_g", d), _init("ln1_b", d), _init("wq", d, d), _init("wk", d, d), _init("wv", d, d), scale,
             _init("wo", d, d), _init("ln2_g", d), _init("ln2_b", d), _init("w1", d, 4 * d),
             _init("w2", 4 * d, d)]  # fmt: skip
    return _save(folder, "block", nodes, inits, [1, t, d], [1, t, d])


def profiled(model: Path, *args: str) -> dict[str, Any]:
    proc, report = run_json(str(model), *args, "--device", "local-task", "-n", "3", "--profile")
    assert proc.returncode == 0, proc.stderr
    assert report["kernels"], report.get("profile")
    return report


@pytest.fixture(scope="module")
def onnx_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[onnx.ModelProto, dict[str, Any]]]:
    folder = tmp_path_factory.mktemp("models")
    runs = {}
    for build in (conv_net, transformer_block):
        model, x = build(folder)
        runs[model.stem] = (onnx.load(str(model)), profiled(model, "--input", f"@{x}"))
    return runs


@pytest.mark.parametrize("name", ["convnet", "block"])
def test_every_onnx_compute_node_is_under_a_kernel(name: str, onnx_runs: dict[str, Any]) -> None:
    graph, report = onnx_runs[name]
    op_types = {node.name: node.op_type for node in graph.graph.node}
    found: dict[str, list[str]] = {}
    for kernel in report["kernels"]:
        assert kernel["source_ops"], f"{kernel['name']}: {kernel['source_ops_reason']}"
        for op in kernel["source_ops"]:
            assert op["name"] in op_types, op  # a node of the graph (the second source) ...
            assert op["op"] == op_types[op["name"]], op  # ... with its own op type
            file, line, column = op["loc"].rsplit(":", 2)
            assert file == f"{name}.mlir" and int(line) > 0 and int(column) > 0, op
            found.setdefault(op["name"], []).append(kernel["name"])
        order = [list(op_types).index(op["name"]) for op in kernel["source_ops"]]
        assert order == sorted(order), kernel["source_ops"]  # in graph order
    compute = [node.name for node in graph.graph.node if node.op_type not in SHAPING]
    missing = [node for node in compute if node not in found]
    assert not missing, f"compute nodes under no kernel: {missing}"


def test_a_fused_kernel_lists_its_nodes_and_the_layer_table_adds_up(onnx_runs: dict[str, Any]) -> None:
    _, report = onnx_runs["convnet"]
    conv1 = next(k for k in report["kernels"] if any(o["name"] == "/layer1/relu/Relu" for o in k["source_ops"]))
    names = [o["name"] for o in conv1["source_ops"]]
    assert names[0] == "/layer1/conv1/Conv" and "/layer1/relu/Relu" in names, names  # conv, bn and relu: one kernel
    layers = report["layers"]
    kernel_ms = sum(k["avg_us"] * k["per_call"] for k in report["kernels"]) / 1000
    assert sum(layer["ms_per_call"] for layer in layers) == pytest.approx(kernel_ms, rel=1e-9)
    assert sum(layer["share"] for layer in layers) == pytest.approx(1.0, abs=1e-6)
    assert [layer["ms_per_call"] for layer in layers] == sorted((la["ms_per_call"] for la in layers), reverse=True)
    group = next(layer for layer in layers if conv1["name"] in layer["kernels"])
    assert group["name"] == " + ".join(names)  # the group, never split among its layers
    assert sorted(k for layer in layers for k in layer["kernels"]) == sorted(k["name"] for k in report["kernels"])


def test_the_report_text_has_the_from_column_and_the_layers_section(tmp_path: Path) -> None:
    model, x = conv_net(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "gputop.tui", "run", str(model), "--input", f"@{x}", "--device", "local-task",
         "-n", "3", "--profile"],
        capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    table = proc.stdout.split("  kernel ", 1)[1]
    assert table.splitlines()[0].split()[:2] == ["from", "count"]
    assert "layer1: conv1 + bn1 + relu" in table  # the ops' common scope, then each op
    assert "layers    kernel time by the model's layers" in proc.stdout
    assert "  layer1: conv1 + bn1 + relu  " in proc.stdout.split("\nlayers ", 1)[1]  # the group, named alike


MLIR = """\
func.func @two_layers(%x: tensor<64x128xf32>, %w1: tensor<128x256xf32>, %w2: tensor<256x32xf32>) -> tensor<64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<64x256xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x256xf32>) -> tensor<64x256xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<64x128xf32>, tensor<128x256xf32>) outs(%f1 : tensor<64x256xf32>) -> tensor<64x256xf32> loc("fc1")
  %e2 = tensor.empty() : tensor<64x32xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %y = linalg.matmul ins(%h, %w2 : tensor<64x256xf32>, tensor<256x32xf32>) outs(%f2 : tensor<64x32xf32>) -> tensor<64x32xf32>
  return %y : tensor<64x32xf32>
}
"""  # noqa: E501


def test_mlir_names_its_lines_and_name_locations(tmp_path: Path) -> None:
    model = tmp_path / "model.mlir"
    model.write_text(MLIR)
    report = profiled(model)
    lines = MLIR.splitlines()
    by_loc = {}
    for kernel in report["kernels"]:
        assert kernel["source_ops"], kernel["source_ops_reason"]
        for op in kernel["source_ops"]:
            file, line, column = op["loc"].rsplit(":", 2)
            assert file == "model.mlir"
            written = lines[int(line) - 1][int(column) - 1 :]
            assert written.startswith(op["op"]), (op, written)  # the file read by hand holds that op there
            by_loc[int(line)] = op
    assert by_loc[5] == {"name": "fc1", "op": "linalg.matmul", "loc": "model.mlir:5:8"}  # a name location kept
    assert by_loc[8] == {"name": None, "op": "linalg.matmul", "loc": "model.mlir:8:8"}


def _compile(source: Path, out: Path, *flags: str) -> None:
    compiler = Path(sys.executable).with_name("iree-compile")
    command = [str(compiler if compiler.exists() else shutil.which("iree-compile")), str(source),
               "--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
               "--iree-llvmcpu-target-cpu=host", *flags, "-o", str(out)]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True, timeout=600)


def test_a_vmfb_with_and_without_its_sources(tmp_path: Path) -> None:
    source = tmp_path / "model.mlir"
    source.write_text(MLIR)
    bare = tmp_path / "bare.vmfb"
    _compile(source, bare)
    report = profiled(bare)
    reason = report["profile"]["source_ops_reason"]
    assert "bare.vmfb carries no map" in reason and "--mlir-print-debuginfo" in reason and "bare.sources" in reason
    assert all(k["source_ops"] is None and k["source_ops_reason"] == reason for k in report["kernels"])
    assert [layer["name"] for layer in report["layers"]] == ["(no source ops)"]  # still adds up

    located = tmp_path / "located.vmfb"
    _compile(source, located, f"--iree-hal-dump-executable-sources-to={tmp_path / 'located.sources'}",
             "--mlir-print-debuginfo")  # fmt: skip
    report = profiled(located)
    ops = [op for k in report["kernels"] for op in k["source_ops"]]
    # The file compiled, by its name; `loc("fc1")` alone keeps no position (nor is the source here to find it).
    assert {(op["name"], op["loc"]) for op in ops} == {("fc1", None), (None, "model.mlir:8:8")}, ops
    assert report["profile"]["source_ops_reason"] is None


def test_a_vmfb_of_an_onnx_model_names_its_nodes_and_every_site(tmp_path: Path) -> None:
    """A `.vmfb` compiled elsewhere from an ONNX model, its sources and dispatch sites beside it: the nodes come
    from their names (torch's exporter ends each with its op type), and a kernel run for two layers names both."""
    from gputop.core.module.compile import SITES_FLAGS
    from gputop.core.onnx.onnx_import import import_onnx

    model, x = transformer_block(tmp_path)
    imported = import_onnx(model, tmp_path)
    vmfb = tmp_path / "block.vmfb"
    flags = ("--iree-opt-const-eval=false",)
    _compile(imported.mlir, vmfb, *flags, f"--iree-hal-dump-executable-sources-to={tmp_path / 'block.sources'}",
             "--mlir-print-debuginfo")  # fmt: skip
    _compile(imported.mlir, tmp_path / "block.sites.mlir", *flags, *SITES_FLAGS)
    report = profiled(vmfb, "--input", f"@{x}")
    shared = next(k for k in report["kernels"] if k["per_call"] == 3)  # the q, k and v projections: one executable
    assert [(op["name"], op["op"]) for op in shared["source_ops"]] == [
        ("/block/attn/q_proj/MatMul", "MatMul"), ("/block/attn/k_proj/MatMul", "MatMul"),
        ("/block/attn/v_proj/MatMul", "MatMul"),
    ]  # fmt: skip
