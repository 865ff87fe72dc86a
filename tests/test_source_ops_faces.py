"""Every face that names a kernel names the model's ops it came from: compare, the trace, the roofline, ncu's verdicts.

The engine attaches each kernel's source ops (`kernels[].source_ops`, ONNX
nodes or source lines); these tests run it for real on local-task, on two
ONNX models built here that differ only in the graph's name (which IREE puts
in every dispatch's name: `net_a$async_dispatch_1_...`) and in one more node
at the end (`/head/Softmax`, its own dispatch, so the dispatch ordinals no
longer pair the kernels either), and on demo:mlp, whose ops have lines but no
names. Then each face is asked what it says about them.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import run_gputop
from gputop.core.compare import compare_reports
from gputop.core.compare.live import LiveBaseline
from gputop.core.compare.text import comparison_text
from gputop.core.snapshot import RunSnapshot
from gputop.core.store.reader import read_tail
from gputop.tui.panes.kernels import vs_base
from gputop.tui.screens.roofline import render_roofline
from gputop.tui.text.counters import counters_lines

CONV = "/layers/conv1/Conv"


def save_net(folder: Path, graph_name: str, *, softmax: bool) -> Path:
    """A small convnet with named nodes: conv1+relu1 and fc MatMul+Add fuse, the pool is its own dispatch."""
    rng = np.random.default_rng(0)

    def weight(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name)

    initializers = [
        weight("w1", (8, 3, 3, 3)), weight("b1", (8,)), weight("fcw", (8 * 8 * 8, 10)), weight("fcb", (10,)),
        numpy_helper.from_array(np.array([1, -1], dtype=np.int64), "shape"),
    ]  # fmt: skip
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name=CONV, pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="/layers/relu1/Relu"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="/layers/pool1/MaxPool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Reshape", ["p1", "shape"], ["f"], name="/flatten/Reshape"),
        helper.make_node("MatMul", ["f", "fcw"], ["m"], name="/fc/MatMul"),
        helper.make_node("Add", ["m", "fcb"], ["z" if softmax else "y"], name="/fc/Add"),
    ]
    if softmax:
        nodes.append(helper.make_node("Softmax", ["z"], ["y"], name="/head/Softmax", axis=1))
    graph = helper.make_graph(
        nodes, graph_name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], initializers,
    )  # fmt: skip
    path = folder / f"{graph_name}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def profiled_run(target: Path | str, out: Path, *extra: str) -> dict[str, Any]:
    proc = run_gputop(
        "run", str(target), "-d", "local-task", "-n", "60", "--profile", "--profile-calls", "20", "-q",
        "--json", str(out), *extra,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads(out.read_text())
    return report


@pytest.fixture(scope="module")
def nets(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    """The reports of net_a and of net_b (net_a named otherwise, with a Softmax after it), profiled."""
    folder = tmp_path_factory.mktemp("nets")
    x = folder / "x.npy"
    np.save(x, np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32))
    a = profiled_run(save_net(folder, "net_a", softmax=False), folder / "a.json", "--input", f"@{x}")
    b = profiled_run(save_net(folder, "net_b", softmax=True), folder / "b.json", "--input", f"@{x}")
    return a, b


def final_snapshot(report: dict[str, Any]) -> RunSnapshot:
    return read_tail(Path(report["session_dir"]), 1)[-1]


def test_compare_matches_kernels_iree_named_apart_by_their_source_ops(
    nets: tuple[dict[str, Any], dict[str, Any]], tmp_path: Path
) -> None:
    a, b = nets
    assert all(k["name"].startswith("net_a$") for k in a["kernels"]), a["kernels"]
    assert all(k["name"].startswith("net_b$") for k in b["kernels"]), b["kernels"]
    paths = []
    for name, report in (("a", a), ("b", b)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(report))
    proc = run_gputop("compare", str(paths[0]), str(paths[1]), "--json", str(tmp_path / "c.json"))
    assert proc.returncode == 0, proc.stderr
    kernels = json.loads((tmp_path / "c.json").read_text())["kernels"]
    matched = {k["name_a"]: k for k in kernels if k["match"] == "source ops"}
    assert len(matched) == len(a["kernels"]) == 4, kernels
    for name_a, kernel in matched.items():
        assert kernel["name_b"] == name_a.replace("net_a$", "net_b$"), kernel  # the same dispatch, renamed
        assert kernel["change"] is not None
    conv = next(k for k in matched.values() if "conv_8x16x16" in k["name_b"])
    assert conv["source_ops"] == [CONV, "/layers/relu1/Relu"]
    (new,) = [k for k in kernels if k["match"] == "only B"]
    assert "softmax" in new["name_b"] and new["source_ops"] == ["/head/Softmax"]
    assert not [k for k in kernels if k["match"] == "only A"]
    # The text says how they were paired, and the verdict counts one new kernel only.
    assert "(matched by source ops: layers: conv1 + relu1)" in proc.stdout  # as every face names them
    assert "from head\n" in proc.stdout or "from head " in proc.stdout  # /head/Softmax: its module
    assert "0 kernels only in A, 1 only in B" in proc.stdout


def test_compare_of_reports_without_source_ops_keeps_working(nets: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """Reports of an older gputop have no `source_ops`: nothing is matched by them, and nothing breaks."""
    a, b = (copy.deepcopy(report) for report in nets)
    for report in (a, b):
        for kernel in report["kernels"]:
            kernel.pop("source_ops", None)
    result = compare_reports(a, b)
    assert {k.match for k in result.kernels} == {"only A", "only B"}
    assert all(k.source_ops == () for k in result.kernels)
    assert "matched by source ops" not in comparison_text(result)
    assert "4 kernels only in A, 5 only in B" in result.verdict


def test_ops_without_names_are_matched_by_their_lines(tmp_path: Path) -> None:
    """demo:mlp's first two dispatches are each a matmul and an elementwise op, without names: a B whose
    kernels IREE named otherwise and dispatches in another order pairs each with the one at its lines, and
    ops of the same kinds at the lines of another file are not the same ops."""
    a = profiled_run("demo:mlp", tmp_path / "mlp.json")
    kinds = [tuple(op["op"] for op in k["source_ops"]) for k in a["kernels"]]
    assert kinds.count(("linalg.matmul", "linalg.generic")) == 2, a["kernels"]
    b = json.loads(json.dumps(a).replace("mlp_dispatch_", "net_dispatch_9"))  # no dispatch ordinal pairs them
    times = b["samples"]["dispatches"]["us"]
    b["samples"]["dispatches"]["us"] = dict(reversed(list(times.items())))  # another dispatch order
    result = compare_reports(a, b)
    assert {k.match for k in result.kernels} == {"source ops"}, result.kernels
    for kernel in result.kernels:
        assert kernel.name_b == (kernel.name_a or "").replace("mlp_dispatch_", "net_dispatch_9")
        assert kernel.source_label is not None and kernel.source_label.startswith("mlp.mlir:")
    elsewhere = json.loads(json.dumps(b).replace('"mlp.mlir:', '"other.mlir:'))
    assert {k.match for k in compare_reports(a, elsewhere).kernels} == {"only A", "only B"}


def test_a_live_kernel_named_otherwise_is_set_against_the_baseline_by_its_source_ops(
    nets: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    a, b = nets
    baseline = LiveBaseline("net_a", a)
    live = final_snapshot(b)
    assert live.profile is not None
    conv = next(k for k in live.profile.kernels if "conv_8x16x16" in k.name)
    assert conv.name not in baseline.kernels
    change = baseline.kernel_change(conv.name, conv.p50_us, conv.source_ops)
    assert change is not None and change.a == next(k["p50_us"] for k in a["kernels"] if "conv_8x16x16" in k["name"])
    assert vs_base(conv, baseline) != "-"  # the Kernels pane's `vs base` cell
    softmax = next(k for k in live.profile.kernels if "softmax" in k.name)
    assert vs_base(softmax, baseline) == "-"  # no baseline kernel of its ops
    assert baseline.kernel_change(conv.name, conv.p50_us) is None  # by name alone, none


def test_the_trace_names_each_dispatch_s_source_ops(nets: tuple[dict[str, Any], dict[str, Any]]) -> None:
    a, _ = nets
    trace = json.loads(Path(a["profile"]["trace_path"]).read_text())
    dispatches = [e for e in trace["traceEvents"] if e.get("cat") == "dispatch"]
    assert dispatches
    said = {e["name"]: e["args"].get("source_ops") for e in dispatches}
    conv = next(text for name, text in said.items() if "conv_8x16x16" in name)
    assert conv is not None and conv.startswith(f"{CONV} (Conv) net_a.mlir:")
    assert "; /layers/relu1/Relu (Relu) net_a.mlir:" in conv
    assert all(said.values()), said  # every kernel of this model has its ops


def test_the_roofline_legend_says_where_each_kernel_came_from(nets: tuple[dict[str, Any], dict[str, Any]]) -> None:
    a, _ = nets
    snapshot = final_snapshot(a)
    chart = render_roofline(snapshot.profile, 110, 34, snapshot.function or "").plain
    conv = next(line for line in chart.splitlines() if "conv_8x16x16" in line)
    assert "from layers: conv1 + relu1" in conv, chart
    pool = next(line for line in chart.splitlines() if "conv_8x8x8" in line)
    assert "from layers: pool1 " in pool, chart


def test_ncu_s_verdict_names_the_kernel_s_layer(nets: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """The verdict line of `gputop run --counters` and `gputop report`: ncu's words, the kernel and its layer."""
    a = copy.deepcopy(nets[0])
    conv = next(k for k in a["kernels"] if "conv_8x16x16" in k["name"])
    verdict = "This kernel grid is too small to fill the available resources on this device."
    conv["counters"] = {"source": "ncu", "time_us": 3.0, "verdict": verdict, "rules": []}
    a["counters_pass"] = {"source": "ncu", "calls": 1, "wall_s": 2.0, "live_calls": 0, "unmatched": []}
    lines = counters_lines(a)
    assert f"verdict   {conv['name']} (from layers: conv1 + relu1): {verdict}" in lines, lines
    conv.pop("source_ops")  # an older report: the verdict as it was
    assert f"verdict   {conv['name']}: {verdict}" in counters_lines(a)
