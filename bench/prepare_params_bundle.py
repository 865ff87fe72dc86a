"""Compile the head modules of model-like archives here, for a GPU machine that has no compiler.

`bench/params.py` and `bench/gpu/params_paths.sh` build the archives themselves on
the machine that loads them (16 GiB do not travel); only the modules that
read them travel: one per archive shape and target, named
`head_{tensors}x{gib}g_{target}.vmfb`. An archive's layout is a pure function
of its tensor count and size (core/param_archive.model_layout), so a module
compiled here matches an archive built there.

Usage: python bench/prepare_params_bundle.py OUT_DIR [--shapes 256x16,1x8] [--targets cuda,vulkan]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gputop.core.module.compile import compile_module
from gputop.core.module.targets import CUDA_FLAGS, LOCAL_FLAGS, VULKAN_DEFAULT_FLAGS, VULKAN_NVIDIA_FLAGS
from gputop.core.params.archive import head_module_source, model_layout

TARGETS = {
    "cuda": CUDA_FLAGS,
    "vulkan": VULKAN_NVIDIA_FLAGS,
    "lavapipe": VULKAN_DEFAULT_FLAGS,  # for a dry run of the GPU script on the CPU machine
    "local": LOCAL_FLAGS,
}


def bundle_name(tensors: int, gib: float, target: str) -> str:
    return f"head_{tensors}x{gib:g}g_{target}.vmfb"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--shapes", default="256x16,1x8", help="TENSORSxGIB, comma separated")
    parser.add_argument("--targets", default="cuda,vulkan")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = {}
    for shape in args.shapes.split(","):
        tensors, gib = int(shape.split("x")[0]), float(shape.split("x")[1])
        specs = model_layout(tensors, int(gib * 2**30))
        source = head_module_source(specs).encode()
        for target in args.targets.split(","):
            compiled = compile_module(Path(f"head_{shape}.mlir"), TARGETS[target], source_bytes=source)
            path = args.out / bundle_name(tensors, gib, target)
            path.write_bytes(compiled.vmfb_path.read_bytes())
            manifest[path.name] = {
                "tensors": tensors,
                "gib": gib,
                "bytes": sum(s.nbytes for s in specs),
                "flags": list(TARGETS[target]),
            }
            print(f"{path} ({path.stat().st_size} bytes)")
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2))


if __name__ == "__main__":
    main()
