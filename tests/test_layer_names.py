"""A kernel's model layers named by their common scope first, through the real command, on a ResNet-like model.

The model is built here with the `onnx` package, its nodes named as torch's exporter names a ResNet's
(`/layer1/layer1.0/conv1/Conv`, `/layer1/layer1.0/Add`, a downsample branch
`/layer2/layer2.0/downsample/downsample.0/Conv`, a classifier `/classifier/fc/MatMul` + `/classifier/fc/Add`);
IREE compiles it for local-task and fuses each block's ops into kernels, pads each 3x3 convolution's input in
a copy kernel (`slow_memcpy`) of its own, and a profile pass names them all. What each group of ops is
called is checked against the graph's own node names (the second source: which block each node is in) and
against IREE's own word for a copy (the dispatch's name, `slow_memcpy`, and its work counted from its IR:
loads and stores, no compute op).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import helper
from test_source_ops import _init, _save

from conftest import run_gputop
from gputop.core.records.profile import SourceOp

ADD = "/layer1/layer1.0/Add"


def resnet_blocks(folder: Path) -> tuple[Path, Path]:
    """A stem, a basic block, a block with a downsample branch, a global pool and a classifier, as torch names them."""
    node = helper.make_node

    def conv(x: str, w: str, y: str, name: str, stride: int = 1, pad: int = 1) -> onnx.NodeProto:
        return node("Conv", [x, w, f"{w}_b"], [y], name=name, pads=[pad] * 4, strides=[stride, stride])

    nodes = [
        conv("x", "w0", "s", "/conv1/Conv"),
        node("Relu", ["s"], ["s1"], name="/relu/Relu"),
        conv("s1", "w11", "a1", "/layer1/layer1.0/conv1/Conv"),
        node("Relu", ["a1"], ["a2"], name="/layer1/layer1.0/relu/Relu"),
        conv("a2", "w12", "a3", "/layer1/layer1.0/conv2/Conv"),
        node("Add", ["a3", "s1"], ["a4"], name=ADD),
        node("Relu", ["a4"], ["a5"], name="/layer1/layer1.0/relu_1/Relu"),
        conv("a5", "w21", "c1", "/layer2/layer2.0/conv1/Conv", stride=2),
        node("Relu", ["c1"], ["c2"], name="/layer2/layer2.0/relu/Relu"),
        conv("c2", "w22", "c3", "/layer2/layer2.0/conv2/Conv"),
        conv("a5", "wd", "d", "/layer2/layer2.0/downsample/downsample.0/Conv", stride=2, pad=0),
        node("Add", ["c3", "d"], ["c4"], name="/layer2/layer2.0/Add"),
        node("Relu", ["c4"], ["c5"], name="/layer2/layer2.0/relu_1/Relu"),
        node("GlobalAveragePool", ["c5"], ["g"], name="/avgpool/GlobalAveragePool"),
        node("Flatten", ["g"], ["f"], name="/Flatten"),
        node("MatMul", ["f", "fcw"], ["m"], name="/classifier/fc/MatMul"),
        node("Add", ["m", "fcb"], ["y"], name="/classifier/fc/Add"),
    ]
    shapes = {"w0": (8, 3, 3, 3), "w11": (8, 8, 3, 3), "w12": (8, 8, 3, 3), "w21": (16, 8, 3, 3),
              "w22": (16, 16, 3, 3), "wd": (16, 8, 1, 1)}  # fmt: skip
    inits = [_init(name, *shape) for name, shape in shapes.items()]
    inits += [_init(f"{name}_b", shape[0]) for name, shape in shapes.items()]
    inits += [_init("fcw", 16, 10), _init("fcb", 10)]
    return _save(folder, "resnet_blocks", nodes, inits, [1, 3, 16, 16], [1, 10])


def block_of(name: str) -> str | None:
    """The block a node is in, read from its path as torch writes it: `layer1.0` for `/layer1/layer1.0/...`."""
    parts = name.strip("/").split("/")
    return parts[1] if len(parts) > 2 and parts[1].startswith(parts[0] + ".") else None


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    """The model's report (`--json`) and the text `gputop run --profile` printed, from one run."""
    folder = tmp_path_factory.mktemp("resnet")
    model, x = resnet_blocks(folder)
    out = folder / "report.json"
    proc = run_gputop(
        "run", str(model), "--input", f"@{x}", "-d", "local-task", "-n", "5", "--profile", "--json", str(out)
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text()), proc.stdout


def test_a_block_s_kernels_are_named_by_the_block_first(profiled: tuple[dict[str, Any], str]) -> None:
    """Item 6: a fused kernel is named `layer1.0: conv2 + add + relu_1`, its block first, the Add by name."""
    report, text = profiled
    fused = next(k for k in report["kernels"] if any(op["name"] == ADD for op in k["source_ops"]))
    assert fused["work"] != "copy" and len(fused["source_ops"]) > 1, fused
    blocks = {block_of(op["name"]) for op in fused["source_ops"]}
    assert blocks == {"layer1.0"}, fused["source_ops"]  # IREE fused one block's ops: the graph says which
    kernels = text.split("\n  kernel ", 1)[1].split("\nlayers ", 1)[0]
    line = next(line for line in kernels.splitlines() if fused["name"] in line)
    assert line.split(fused["name"], 1)[1].strip().startswith("layer1.0: conv2 + add"), line  # its `from`
    row = next(layer for layer in report["layers"] if fused["name"] in layer["kernels"])
    assert row["label"].startswith("layer1.0: conv2 + add"), row
    assert [op["name"] for op in row["source_ops"]] == [op["name"] for op in fused["source_ops"]]
    # Every group whose ops lie in one block is named by it, in the report and its text.
    table = text.split("\nlayers ", 1)[1]
    for layer in report["layers"]:
        named = {block_of(op["name"]) for op in layer["source_ops"]}
        if len(named) == 1 and None not in named and not layer["copy"]:
            assert layer["label"].startswith(f"{named.pop()}: "), layer
        assert f"  {layer['label']}  " in table, (layer["label"], table)
    assert f"  {row['label']}  " in kernels  # the kernel table's `from`, the same name
    assert "/layer" not in table and "…" not in table  # no full paths beside short names, nothing cut
    # The classifier's MatMul and Add: one module, named once.
    fc = next(layer for layer in report["layers"] if layer["op"] == "MatMul + Add")
    assert fc["label"] == "classifier: fc", fc


def test_a_padding_copy_is_named_as_a_copy(profiled: tuple[dict[str, Any], str]) -> None:
    """Item 10: IREE's padding copies are rows of their own named `copy for ...`, not a second `Conv` row."""
    report, text = profiled
    copies = [k for k in report["kernels"] if "slow_memcpy" in k["name"]]  # IREE's name for a copy dispatch
    assert copies and all(k["work"] == "copy" for k in copies), copies  # counted from its IR: no compute op
    for kernel in copies:  # the kernel table's `from`
        line = next(line for line in text.splitlines() if kernel["name"] in line)
        assert line.split(kernel["name"], 1)[1].strip().startswith("copy for "), line
    table = text.split("\nlayers ", 1)[1]
    convs_named = []
    for kernel in copies:
        row = next(layer for layer in report["layers"] if kernel["name"] in layer["kernels"])
        assert row["copy"] and row["op"] == "copy" and row["label"].startswith("copy for "), row
        assert {op["op"] for op in row["source_ops"]} == {"Conv"}  # what it copies for: the convolutions' input
        line = next(line for line in table.splitlines() if line.strip().startswith(row["label"]))
        assert line.split(row["label"], 1)[1].split()[0] == "copy", line
        convs_named += [op["name"] for op in row["source_ops"]]
    # Each convolution the copies pad is also the head of its own compute row, which is not a copy.
    for conv in convs_named:
        rows = [la for la in report["layers"] if la["source_ops"] and la["source_ops"][0]["name"] == conv]
        assert [la["copy"] for la in rows].count(False) == 1, (conv, rows)


@pytest.mark.parametrize(
    ("names", "width", "expected"),
    [
        (["/layer2/layer2.0/conv2/Conv", "/layer2/layer2.0/downsample/downsample.0/Conv", "/layer2/layer2.0/Add"],
         None, "layer2.0: conv2 + downsample.0 + add"),
        (["/layer2/layer2.0/conv2/Conv", "/layer2/layer2.0/downsample/downsample.0/Conv", "/layer2/layer2.0/Add"],
         20, "layer2.0: conv2 +2"),
        (["/layer2/layer2.0/downsample/downsample.0/Conv"], None, "layer2.0: downsample.0"),
        (["/classifier/fc/MatMul", "/classifier/fc/Add"], None, "classifier: fc"),
        (["/conv1/Conv", "/relu/Relu"], None, "conv1 + relu"),
        (["/layer2/layer2.0/relu_1/Relu", "/avgpool/GlobalAveragePool"], None, "layer2.0: relu_1; avgpool"),
        # Read in another order (a .vmfb's sources, by line), the block with most of the ops still first.
        (["/avgpool/GlobalAveragePool", "/layer3/layer3.2/conv2/Conv", "/layer3/layer3.2/Add"], 24,
         "layer3.2: conv2 + add +1"),
        # One kernel IREE runs for two layers of one shape: each by its block, not `layer3: conv2` twice.
        (["/layer3/layer3.0/conv2/Conv", "/layer3/layer3.2/conv2/Conv"], None, "layer3.0: conv2; layer3.2: conv2"),
    ],
)  # fmt: skip
def test_the_naming_rule(names: list[str], width: int | None, expected: str) -> None:
    from gputop.core.profiling.work.layer_names import layer_name  # the one rule every face names layers by

    assert layer_name([SourceOp(name, "", None) for name in names], width=width) == expected
