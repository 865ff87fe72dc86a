"""Build the test programs' module and parameters: `model.vmfb` (llvm-cpu) and `model.irpa`.

The module is a two-layer MLP, `mlp.main(x: 32x512 f32) -> 32x512 f32`, whose
two 512x512 weights are not in the module: it reads them as parameters
(`#flow.parameter.named<"model"::"w1">`), so a program must load the archive
and hand IREE a parameters module, as programs with real weights do.

Usage: python make_assets.py OUT_DIR [--compiler PATH]; prints the two paths as JSON.
Runs under any Python with iree.runtime and numpy (the archive is written with
IREE's own writer); the compiler defaults to `iree-compile` beside this Python.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

__all__ = ["BATCH", "COLS", "ROWS", "WIDTH", "build", "compile_cpu", "expected_output", "rowsum_mlir", "weights"]

BATCH = 32
WIDTH = 512

MLIR = f"""
module @mlp {{
  util.global private @w1 = #flow.parameter.named<"model"::"w1"> : tensor<{WIDTH}x{WIDTH}xf32>
  util.global private @w2 = #flow.parameter.named<"model"::"w2"> : tensor<{WIDTH}x{WIDTH}xf32>
  func.func @main(%x: tensor<{BATCH}x{WIDTH}xf32>) -> tensor<{BATCH}x{WIDTH}xf32> {{
    %w1 = util.global.load @w1 : tensor<{WIDTH}x{WIDTH}xf32>
    %w2 = util.global.load @w2 : tensor<{WIDTH}x{WIDTH}xf32>
    %zero = arith.constant 0.0 : f32
    %empty = tensor.empty() : tensor<{BATCH}x{WIDTH}xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<{BATCH}x{WIDTH}xf32>) -> tensor<{BATCH}x{WIDTH}xf32>
    %h = linalg.matmul ins(%x, %w1 : tensor<{BATCH}x{WIDTH}xf32>, tensor<{WIDTH}x{WIDTH}xf32>)
                       outs(%acc : tensor<{BATCH}x{WIDTH}xf32>) -> tensor<{BATCH}x{WIDTH}xf32>
    %y = linalg.matmul ins(%h, %w2 : tensor<{BATCH}x{WIDTH}xf32>, tensor<{WIDTH}x{WIDTH}xf32>)
                       outs(%acc : tensor<{BATCH}x{WIDTH}xf32>) -> tensor<{BATCH}x{WIDTH}xf32>
    return %y : tensor<{BATCH}x{WIDTH}xf32>
  }}
}}
"""


ROWS, COLS = 1024, 4096  # the why-slow module's argument: 16 MiB of f32, more to upload than to add up


def rowsum_mlir(rows: int = ROWS, cols: int = COLS) -> str:
    """`rowsum.main(x: ROWSxCOLS f32) -> ROWS f32`: little work per byte of argument."""
    return f"""
module @rowsum {{
  func.func @main(%x: tensor<{rows}x{cols}xf32>) -> tensor<{rows}xf32> {{
    %zero = arith.constant 0.0 : f32
    %empty = tensor.empty() : tensor<{rows}xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<{rows}xf32>) -> tensor<{rows}xf32>
    %sum = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                            iterator_types = ["parallel", "reduction"]}}
        ins(%x : tensor<{rows}x{cols}xf32>) outs(%acc : tensor<{rows}xf32>) {{
      ^bb0(%in: f32, %out: f32):
        %add = arith.addf %in, %out : f32
        linalg.yield %add : f32
    }} -> tensor<{rows}xf32>
    return %sum : tensor<{rows}xf32>
  }}
}}
"""


TINY_MLIR = """
module @tiny {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = arith.addf %x, %x : tensor<4xf32>
    return %y : tensor<4xf32>
  }
}
"""


def weights() -> dict[str, np.ndarray]:
    """Small exact values (multiples of 1/64), so the output can be checked exactly."""
    rng = np.random.default_rng(45)
    return {name: (rng.integers(-2, 3, size=(WIDTH, WIDTH)) / 64).astype(np.float32) for name in ("w1", "w2")}


def program_input() -> np.ndarray:
    return (np.arange(BATCH * WIDTH, dtype=np.float32).reshape(BATCH, WIDTH) % 7) - 3


def expected_output() -> np.ndarray:
    w = weights()
    return program_input() @ w["w1"] @ w["w2"]


def default_compiler() -> str:
    beside = os.path.join(os.path.dirname(sys.executable), "iree-compile")
    return beside if os.path.exists(beside) else (shutil.which("iree-compile") or "iree-compile")


def compile_cpu(text: str, name: str, out_dir: str, compiler: str | None) -> str:
    """`text` compiled for the CPU as OUT_DIR/NAME.vmfb (its source beside it); returns the .vmfb's path."""
    source = os.path.join(out_dir, f"{name}.mlir")
    vmfb = os.path.join(out_dir, f"{name}.vmfb")
    with open(source, "w") as f:
        f.write(text)
    subprocess.run(
        [
            compiler or default_compiler(),
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu",
            "--iree-llvmcpu-target-cpu=generic",  # runs on any x86-64 (the GPU machines' too)
            source,
            "-o",
            vmfb,
        ],
        check=True,
    )
    return vmfb


def build(out_dir: str, compiler: str | None = None) -> tuple[str, str]:
    """Write model.vmfb and model.irpa (and rowsum.vmfb, the why-slow programs' module, and tiny.vmfb) into
    `out_dir`; returns (vmfb, irpa)."""
    import iree.runtime as rt

    os.makedirs(out_dir, exist_ok=True)
    irpa = os.path.join(out_dir, "model.irpa")
    vmfb = compile_cpu(MLIR, "model", out_dir, compiler)
    compile_cpu(rowsum_mlir(), "rowsum", out_dir, compiler)
    compile_cpu(TINY_MLIR, "tiny", out_dir, compiler)  # calls as short as IREE makes them: the watcher's load
    index = rt.ParameterIndex()
    for name, value in weights().items():
        index.add_buffer(name, value.tobytes())
    index.create_archive_file(irpa)
    return vmfb, irpa


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--compiler")
    args = parser.parse_args()
    vmfb, irpa = build(args.out_dir, args.compiler)
    print(json.dumps({"vmfb": vmfb, "irpa": irpa}))


if __name__ == "__main__":
    main()
