"""Compile the PM sampling strip's GPU modules (issue 48) for CUDA here, where the compiler is.

`mm_f32` and `mm_f16` are one 4096x4096x4096 matmul each (f32, and f16 in with
f32 out, which IREE's CUDA backend gives the tensor cores): kernels of a few
milliseconds, long enough to hold several 1 ms PM samples each, so the strip's
SM, tensor and DRAM throughput over their calls can be set against the
counters pass's (`ncu`) for the same kernel. Their work files go beside them,
as gputop's own compile writes them.

Usage: python bench/prepare_pm_bundle.py [.device/pm]; then bench/gpu/pm_strip.sh on the GPU machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from gputop.core.module.compile import compile_module
from gputop.core.module.targets import CUDA_FLAGS
from gputop.core.profiling.work.dispatch_work import work_file_for
from gputop.core.profiling.work.ir_count import module_work

N = 4096


def matmul(name: str, operand: str) -> str:
    """`name`: an NxN by NxN matmul of `operand` elements accumulated into f32."""
    t, out = f"tensor<{N}x{N}x{operand}>", f"tensor<{N}x{N}xf32>"
    return f"""func.func @{name}(%a: {t}, %b: {t}) -> {out} {{
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : {out}
  %acc = linalg.fill ins(%zero : f32) outs(%empty : {out}) -> {out}
  %out = linalg.matmul ins(%a, %b : {t}, {t})
                      outs(%acc : {out}) -> {out}
  return %out : {out}
}}
"""


SOURCE = "\n" + matmul("mm_f32", "f32") + matmul("mm_f16", "f16")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?", default=Path(".device/pm"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    compiled = compile_module(Path("pm.mlir"), CUDA_FLAGS, source_bytes=SOURCE.encode())
    vmfb = args.out / "pm_cuda.vmfb"
    shutil.copyfile(compiled.vmfb_path, vmfb)
    work = module_work(compiled.vmfb_path)
    if work.reason:
        raise SystemExit(f"{vmfb.name}: {work.reason}")
    shutil.copyfile(work_file_for(compiled.vmfb_path), work_file_for(vmfb))
    (args.out / "pm.mlir").write_text(SOURCE)
    manifest = {"pm_cuda.vmfb": {"functions": ["mm_f32", "mm_f16"], "n": N, "flags": list(CUDA_FLAGS)}}
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    size = sum(p.stat().st_size for p in args.out.iterdir() if p.is_file())
    print(f"wrote {vmfb} and its work file ({size / 2**10:.0f} KiB)")


if __name__ == "__main__":
    main()
