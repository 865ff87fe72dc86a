"""The watched-program test model compiled for the GPU machines (which have no compiler), and its parameters.

Writes OUT/model_cuda.vmfb (sm_80: runs on H100/H200), OUT/model_vulkan.vmfb
(NVIDIA's Vulkan target), OUT/model_local.vmfb (llvm-cpu), the why-slow module
OUT/rowsum_ROWSxCOLS_{cuda,local}.vmfb at 64x512 and 1024x4096, OUT/tiny_cuda.vmfb and OUT/model.irpa: the
module and archive of tests/programs/make_assets.py, whose programs
(tests/programs/*.py) then run there unmodified with --device cuda or vulkan.

Usage: python bench/prepare_watch_bundle.py OUT   (bench/gpu/watch_program.sh runs on what it writes)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "programs"))

import make_assets  # noqa: E402

from gputop.core.module.targets import CUDA_FLAGS, LOCAL_FLAGS, VULKAN_NVIDIA_FLAGS  # noqa: E402

__all__: list[str] = []

TARGETS = {"cuda": CUDA_FLAGS, "vulkan": VULKAN_NVIDIA_FLAGS, "local": LOCAL_FLAGS}


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    _local, irpa = make_assets.build(str(out))  # the archive (and a local module) as the tests make them
    source = out / "model.mlir"
    source.write_text(make_assets.MLIR)
    for name, flags in TARGETS.items():
        target = out / f"model_{name}.vmfb"
        subprocess.run([make_assets.default_compiler(), *flags, str(source), "-o", str(target)], check=True)
        print(f"{target}: {target.stat().st_size} bytes ({' '.join(flags)})")
    # The why-slow programs' module (tests/programs/why_slow.py) at the issue's 64x512 and at 16 MiB, for CUDA
    for rows, cols in ((64, 512), (1024, 4096)):
        source = out / f"rowsum_{rows}x{cols}.mlir"
        source.write_text(make_assets.rowsum_mlir(rows, cols))
        for name in ("cuda", "local"):
            target = out / f"rowsum_{rows}x{cols}_{name}.vmfb"
            subprocess.run([make_assets.default_compiler(), *TARGETS[name], str(source), "-o", str(target)], check=True)
            print(f"{target}: {target.stat().st_size} bytes")
    tiny = out / "tiny.mlir"
    tiny.write_text(make_assets.TINY_MLIR)
    target = out / "tiny_cuda.vmfb"
    subprocess.run([make_assets.default_compiler(), *TARGETS["cuda"], str(tiny), "-o", str(target)], check=True)
    print(f"{irpa}: {Path(irpa).stat().st_size} bytes")


if __name__ == "__main__":
    main()
