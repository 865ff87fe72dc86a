"""Compile demos for GPU targets here and write their inputs and expected outputs.

The GPU machines have IREE's runtime but not its 80 MB compiler, so modules
for them are compiled on the CPU machine: this writes, for each demo and
target, a `.vmfb`, the inputs as `.npy` (the same seeded random inputs
`gputop run` would make) and the NumPy reference output, ready for
`gputop run X.vmfb --input @in0.npy ... --check expected0.npy` over there.

ONNX models (`--onnx light_resnet50`, a model of the onnx package's light set,
or a path) are imported and compiled the way `gputop run MODEL.onnx` would,
with their dummy input (`arange(n)/n`) and the expected output they ship with.

Usage: python bench/prepare_gpu_bundle.py OUT_DIR [--demos mlp,conv] [--onnx light_resnet50]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from gputop.core.module.compile import compile_module
from gputop.core.module.demos import DEMOS
from gputop.core.module.inputs import make_inputs
from gputop.core.module.signature import parse_declaration
from gputop.core.module.targets import CUDA_FLAGS, LOCAL_FLAGS, VULKAN_NVIDIA_FLAGS, device_names
from gputop.core.multidevice.affinity import affinity_flags, analyse
from gputop.core.records.base import to_json
from gputop.tui.text import affinity_table

TARGETS = {"cuda": CUDA_FLAGS, "vulkan": VULKAN_NVIDIA_FLAGS}
DECLARATIONS = {
    "mlp": "sync func @mlp(%a: tensor<256x1024xf32>, %b: tensor<1024x1024xf32>, "
    "%c: tensor<1024x512xf32>, %d: tensor<512x256xf32>) -> ()",
    "conv": "sync func @conv(%a: tensor<1x64x128x128xf32>, %b: tensor<256x64x3x3xf32>) -> ()",
    "pipeline": "sync func @pipeline(%a: tensor<256x512xf32>, %b: tensor<512x512xf32>, %c: tensor<512x256xf32>) -> ()",
    "hidden-transfer": "sync func @hidden_transfer(%a: tensor<256x512xf32>, %b: tensor<512x256xf32>) -> ()",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--demos", default="mlp")
    parser.add_argument("--local", action="store_true", help="also compile for local-task (generic x86-64)")
    parser.add_argument("--onnx", default="", help="ONNX models: names in onnx's light test set, or paths")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = {}
    for name in args.demos.split(","):
        demo = DEMOS[name]
        inputs = make_inputs(parse_declaration(demo.function, DECLARATIONS[name]), None)
        for index, array in enumerate(inputs):
            np.save(args.out / f"{name}_in{index}.npy", array)
        np.save(args.out / f"{name}_expected0.npy", demo.reference(inputs)[0])
        targets = dict(TARGETS)
        if demo.devices > 1:
            # Two named devices of each GPU backend; the affinity table is analysed here too.
            targets = {}
            for backend, flags in TARGETS.items():
                specs = [f"{backend}:{i}" for i in range(demo.devices)]
                multi = affinity_flags(specs, [flags] * demo.devices)
                targets[f"{backend}{demo.devices}"] = multi
                records, transfers = analyse(
                    Path(f"{demo.name}.mlir"), multi, args.out / "affinity", source_bytes=demo.source()
                )
                names = dict(zip(device_names(demo.devices), specs, strict=True))
                table = affinity_table(to_json(records), to_json(transfers), names)
                (args.out / f"{name}_{backend}{demo.devices}_affinity.txt").write_text(table + "\n")
        if args.local:
            # The GPU host's CPU differs from this one: no -march=host there.
            targets["local"] = (*LOCAL_FLAGS[:2], "--iree-llvmcpu-target-cpu=x86-64-v3")
        for target, flags in targets.items():
            compiled = compile_module(Path(f"{name}.mlir"), flags, source_bytes=demo.source())
            vmfb = args.out / f"{name}_{target}.vmfb"
            vmfb.write_bytes(compiled.vmfb_path.read_bytes())
            manifest[vmfb.name] = {"demo": name, "function": demo.function, "flags": list(flags)}
    for model in filter(None, args.onnx.split(",")):
        manifest.update(_onnx_model(model, args.out))
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    print(f"wrote {len(manifest)} modules to {args.out}")


def _onnx_model(model: str, out: Path) -> dict[str, dict[str, object]]:
    """Import and compile an ONNX model for each GPU target; its dummy input and expected output beside it."""
    import onnx
    from onnx import numpy_helper

    from gputop.core.onnx.onnx_import import COMPILE_FLAGS, import_onnx

    path = Path(model)
    if not path.exists():
        path = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"{model}.onnx"
    name = path.stem
    graph = onnx.load(str(path), load_external_data=False).graph
    weights = {init.name for init in graph.initializer}
    [first] = [i for i in graph.input if i.name not in weights]
    shape = [d.dim_value for d in first.type.tensor_type.shape.dim]
    count = int(np.prod(shape))
    np.save(out / f"{name}_in0.npy", (np.arange(count, dtype=np.float32) / count).reshape(shape))
    expected = path.with_name(f"{name}_output_0.pb")
    if expected.exists():
        tensor = onnx.TensorProto()
        tensor.ParseFromString(expected.read_bytes())
        np.save(out / f"{name}_expected0.npy", numpy_helper.to_array(tensor))
    imported = import_onnx(path, out)
    manifest: dict[str, dict[str, object]] = {}
    for target, flags in TARGETS.items():
        compiled = compile_module(imported.mlir, (*flags, *COMPILE_FLAGS))
        vmfb = out / f"{name}_{target}.vmfb"
        vmfb.write_bytes(compiled.vmfb_path.read_bytes())
        manifest[vmfb.name] = {"onnx": str(path.name), "flags": list(compiled.flags), "workaround": compiled.workaround}
    return manifest


if __name__ == "__main__":
    main()
