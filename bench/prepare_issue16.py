"""Compile the affinity demos for two GPUs here, with their static analysis, for `bench/gpu/issue16.sh`.

The GPU machines have IREE's runtime but no compiler, so the stream-IR
analysis (which compiles to the stream phase) and the `.vmfb` files are made
on this machine. For each demo and backend this writes into OUT_DIR:
`NAME_BACKEND2.vmfb`, `NAME_BACKEND2_plan.json` (records, transfers and the
copies the compiler planned: what the profiled call on the GPUs is matched
against), `NAME_BACKEND2_affinity.txt` (the table as `gputop affinity` prints
it), the seeded inputs `NAME_inN.npy` and the NumPy reference
`NAME_expected0.npy`.

Usage: python bench/prepare_issue16.py .device/issue16 [--backends cuda,vulkan] [--demos hidden-transfer,pipeline]
(`--backends local,vulkan-default` makes the same files for a dry run on this machine.)
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np

from gputop.core.module.compile import compile_module
from gputop.core.module.demos import DEMOS
from gputop.core.module.inputs import make_inputs
from gputop.core.module.signature import parse_declaration
from gputop.core.module.targets import CUDA_FLAGS, LOCAL_FLAGS, VULKAN_DEFAULT_FLAGS, VULKAN_NVIDIA_FLAGS, device_names
from gputop.core.multidevice.affinity import affinity_flags, analyse_module
from gputop.tui.report_text import affinity_table

BACKENDS = {
    "cuda": ("cuda", CUDA_FLAGS),
    "vulkan": ("vulkan", VULKAN_NVIDIA_FLAGS),  # ampere: runs on the H200
    "vulkan-default": ("vulkan", VULKAN_DEFAULT_FLAGS),  # lavapipe, for a dry run here
    "local": ("local", LOCAL_FLAGS),
}
DECLARATIONS = {
    "pipeline": "sync func @pipeline(%a: tensor<256x512xf32>, %b: tensor<512x512xf32>, %c: tensor<512x256xf32>) -> ()",
    "hidden-transfer": "sync func @hidden_transfer(%a: tensor<256x512xf32>, %b: tensor<512x256xf32>) -> ()",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--backends", default="cuda,vulkan")
    parser.add_argument("--demos", default="hidden-transfer,pipeline")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.demos.split(","):
        demo = DEMOS[name]
        stem = demo.function
        inputs = make_inputs(parse_declaration(demo.function, DECLARATIONS[name]), None)
        for index, array in enumerate(inputs):
            np.save(args.out / f"{stem}_in{index}.npy", array)
        np.save(args.out / f"{stem}_expected0.npy", demo.reference(inputs)[0])
        for backend in args.backends.split(","):
            kind, flags = BACKENDS[backend]
            specs = [f"{kind}:{i}" for i in range(demo.devices)]
            multi = affinity_flags(specs, [flags] * demo.devices)
            source = Path(f"{demo.name}.mlir")
            with tempfile.TemporaryDirectory() as stream_dir:  # the stream IR stays here, not in the bundle
                analysis = analyse_module(source, multi, Path(stream_dir), source_bytes=demo.source())
            [function] = analysis.functions
            label = f"{stem}_{backend}{demo.devices}"
            plan = {
                **function.to_plan(),
                "backend": kind,
                "devices": dict(zip(device_names(demo.devices), specs, strict=True)),
                "flags": list(multi),
                "inputs": [f"{stem}_in{i}.npy" for i in range(len(inputs))],
                "expected": f"{stem}_expected0.npy",
            }
            (args.out / f"{label}_plan.json").write_text(json.dumps(plan, indent=2) + "\n")
            table = affinity_table(plan["records"], plan["transfers"], plan["devices"])
            (args.out / f"{label}_affinity.txt").write_text(table + "\n")
            compiled = compile_module(source, multi, source_bytes=demo.source())
            (args.out / f"{label}.vmfb").write_bytes(compiled.vmfb_path.read_bytes())
            print(f"{label}: {len(function.transfers)} transfers, {len(function.copies)} planned copies")


if __name__ == "__main__":
    main()
