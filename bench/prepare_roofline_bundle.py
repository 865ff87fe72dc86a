"""Compile the roofline modules (issue 19) for the H200 here, each with its work file beside it.

The GPU machine has IREE's runtime but not its compiler, and so neither the
executable sources nor the MLIR bindings that count their work. This compiles
demo:mlp, demo:conv and the onnx package's light ResNet-50 for CUDA (sm_80)
and Vulkan (ampere) with gputop's own compile (which keeps the sources), and
writes beside each `NAME.vmfb` its `NAME.work.json`: gputop run on a `.vmfb`
reads it from there. The demos need no inputs (gputop makes seeded random ones
from their declared signature; `iree-run-module` under Nsight Compute takes
splats such as `--input=256x1024xf32=1`, which do the same arithmetic); the
imported ResNet-50 declares none, so its dummy input `arange(n)/n` goes along
as `resnet50_in0.npy` (588 KiB).

Usage: python bench/prepare_roofline_bundle.py [.device/roofline]
Then `bench/gpu/roofline.sh` on the H200.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import numpy as np
import onnx

from gputop.core.module.compile import compile_module
from gputop.core.module.demos import DEMOS
from gputop.core.module.targets import CUDA_FLAGS, LOCAL_FLAGS, VULKAN_NVIDIA_FLAGS
from gputop.core.onnx.onnx_import import COMPILE_FLAGS as ONNX_FLAGS
from gputop.core.onnx.onnx_import import import_onnx
from gputop.core.profiling.work.dispatch_work import work_file_for
from gputop.core.profiling.work.ir_count import module_work

TARGETS = {"cuda": CUDA_FLAGS, "vulkan": VULKAN_NVIDIA_FLAGS}
# What iree-run-module takes under ncu: the function and splat inputs of the right shapes.
RUN_INPUTS = {
    "mlp": ("mlp", ["256x1024xf32=1", "1024x1024xf32=0.5", "1024x512xf32=0.5", "512x256xf32=0.5"]),
    "conv": ("conv", ["1x64x128x128xf32=1", "256x64x3x3xf32=0.5"]),
    "resnet50": ("resnet50", ["1x3x224x224xf32=0.5"]),
}
CUDA_WORKAROUND = "--iree-codegen-llvmgpu-use-reduction-vector-distribution=false"  # ResNet-50's 1x1 convs


def light_resnet50() -> Path:
    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_resnet50.onnx"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?", default=Path(".device/roofline"))
    parser.add_argument("--local", action="store_true", help="also compile for local-task (this machine's CPU)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    imported = import_onnx(light_resnet50(), args.out)
    sources = {
        "mlp": (Path("mlp.mlir"), DEMOS["mlp"].source(), ()),
        "conv": (Path("conv.mlir"), DEMOS["conv"].source(), ()),
        "resnet50": (imported.mlir, None, ONNX_FLAGS),
    }
    targets = dict(TARGETS)
    if args.local:
        targets["local"] = LOCAL_FLAGS
    manifest = {}
    for model, (path, data, extra) in sources.items():
        for target, flags in targets.items():
            all_flags = (*flags, *extra)
            if model == "resnet50" and target == "cuda":
                all_flags += (CUDA_WORKAROUND,)
            compiled = compile_module(path, all_flags, source_bytes=data)
            vmfb = args.out / f"{model}_{target}.vmfb"
            shutil.copyfile(compiled.vmfb_path, vmfb)
            work = module_work(compiled.vmfb_path)
            if work.reason:
                raise SystemExit(f"{vmfb.name}: {work.reason}")
            shutil.copyfile(work_file_for(compiled.vmfb_path), work_file_for(vmfb))
            function, inputs = RUN_INPUTS[model]
            manifest[vmfb.name] = {
                "model": model,
                "target": target,
                "function": function,
                "inputs": inputs,
                "flags": list(all_flags),
                "dispatches": len(work.dispatches),
                "flops_all_dispatches_once": sum(d.flops or 0 for d in work.dispatches.values()),
            }
    # The light models' dummy input (their expected output belongs to it): arange(n)/n, reshaped.
    np.save(args.out / "resnet50_in0.npy", (np.arange(150528, dtype=np.float32) / 150528).reshape(1, 3, 224, 224))
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    size = sum(p.stat().st_size for p in args.out.iterdir() if p.is_file())
    print(f"wrote {len(manifest)} modules and their work files to {args.out} ({size / 2**20:.2f} MiB)")


if __name__ == "__main__":
    main()
