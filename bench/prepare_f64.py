"""Compile float64 ONNX models for the H200 here, with inputs and float64 references beside them.

Issue 17 keeps doubles double (`--iree-input-demote-f64-to-f32=false` when a
model's inputs, outputs or initializers are float64) and checks outputs with
f64's tolerance (1e-7 of max|reference|): a module demoted to float32 is off by
about 1e-8 relative per operation and, through a reduction of 256 terms, fails
it. On the CPU machine that holds on local-task and lavapipe; NVIDIA's CUDA and
Vulkan have their own f64 paths. The GPU machine has IREE's runtime, not its
compiler, so this imports and compiles each model here with gputop's own import
and flags for CUDA (sm_80) and Vulkan (ampere), and writes per model its
inputs and numpy's float64 reference as .npy. `bench/gpu/f64.sh` runs them
there with `gputop run NAME_TARGET.vmfb --input @... --check ...`.

Usage: python bench/prepare_f64.py [.device/f64]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from gputop.core.module.compile import compile_module
from gputop.core.module.targets import CUDA_FLAGS, LOCAL_FLAGS, VULKAN_NVIDIA_FLAGS
from gputop.core.onnx.onnx_import import COMPILE_FLAGS as ONNX_FLAGS
from gputop.core.onnx.onnx_import import import_onnx
from gputop.core.onnx.onnx_model import F64_FLAG

TARGETS = {"cuda": CUDA_FLAGS, "vulkan": VULKAN_NVIDIA_FLAGS}
D = TensorProto.DOUBLE
F = TensorProto.FLOAT
tensor = helper.make_tensor_value_info
Model = tuple[list[onnx.NodeProto], list[onnx.ValueInfoProto], list[onnx.ValueInfoProto], Callable[..., np.ndarray]]


def models() -> dict[str, Model]:
    """name -> (nodes, inputs, outputs, numpy float64 reference of the inputs)."""
    return {
        # (a + b) - a with a near 1e8: float32 keeps a multiple of 8 of it, and gives 0 or 8 for b in [1, 2).
        "f64_cancel": (
            [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Sub", ["s", "a"], ["y"])],
            [tensor("a", D, [128, 64]), tensor("b", D, [128, 64])],
            [tensor("y", D, [128, 64])],
            lambda a, b: (a + b) - a,
        ),
        # f64 reductions: a 256-term dot product per element.
        "f64_matmul": (
            [helper.make_node("MatMul", ["a", "b"], ["y"])],
            [tensor("a", D, [64, 256]), tensor("b", D, [256, 32])],
            [tensor("y", D, [64, 32])],
            lambda a, b: a @ b,
        ),
        # Double in, float out: the cast must round the double, not a demoted float.
        "f64_div_cast_f32": (
            [helper.make_node("Div", ["a", "b"], ["q"]), helper.make_node("Cast", ["q"], ["y"], to=F)],
            [tensor("a", D, [1000]), tensor("b", D, [1000])],
            [tensor("y", F, [1000])],
            lambda a, b: (a / b).astype(np.float32),
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?", default=Path(".device/f64"))
    parser.add_argument("--local", action="store_true", help="also compile for local-task, to try them here")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(17)
    manifest = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, (nodes, inputs, outputs, reference) in models().items():
            graph = helper.make_graph(nodes, name, inputs, outputs)
            path = Path(scratch) / f"{name}.onnx"
            onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
            arrays = []
            for index, value in enumerate(inputs):
                shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
                array = rng.uniform(1.0, 2.0, size=shape)  # away from 0: the Div stays tame
                if name == "f64_cancel" and index == 0:
                    array = array * 1e8
                np.save(args.out / f"{name}_in{index}.npy", array)
                arrays.append(array)
            np.save(args.out / f"{name}_out0.npy", reference(*arrays))
            imported = import_onnx(path, Path(scratch))
            if imported.f64 != "kept":
                raise SystemExit(f"{name}: gputop's import says f64 {imported.f64!r}, not 'kept'")
            targets = {**TARGETS, "local": LOCAL_FLAGS} if args.local else TARGETS
            for target, flags in targets.items():
                all_flags = (*flags, *ONNX_FLAGS, F64_FLAG)
                compiled = compile_module(imported.mlir, all_flags)
                vmfb = args.out / f"{name}_{target}.vmfb"
                shutil.copyfile(compiled.vmfb_path, vmfb)
                manifest[vmfb.name] = {"model": name, "target": target, "inputs": len(inputs), "flags": list(all_flags)}
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    size = sum(p.stat().st_size for p in args.out.iterdir() if p.is_file())
    print(f"wrote {len(manifest)} modules, their inputs and references to {args.out} ({size / 2**20:.2f} MiB)")


if __name__ == "__main__":
    main()
