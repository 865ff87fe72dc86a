"""Compiling in a child process: cache, diagnostics, compiler crashes."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import assert_one_line_error, run_gputop
from gputop.core.errors import CompileError
from gputop.core.module.compile import compile_module
from gputop.core.module.demos import DEMOS
from gputop.core.module.diagnostics import parse_diagnostics
from gputop.core.module.targets import LOCAL_FLAGS

BAD_MLIR = """func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %b = arith.addf %a, %a : tensor<4xf32
  return %b : tensor<4xf32>
}
"""


@pytest.fixture()
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GPUTOP_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_second_compile_is_a_cache_hit(fresh_cache: Path, tmp_path: Path) -> None:
    source = tmp_path / "mlp.mlir"
    source.write_bytes(DEMOS["mlp"].source())
    first = compile_module(source, LOCAL_FLAGS)
    assert not first.cache_hit and first.compile_s > 0
    assert first.vmfb_path.stat().st_size > 0
    second = compile_module(source, LOCAL_FLAGS)
    assert second.cache_hit and second.compile_s == 0.0
    assert second.vmfb_path == first.vmfb_path
    # Different flags are a different module.
    other = compile_module(source, (*LOCAL_FLAGS, "--iree-opt-level=O1"))
    assert not other.cache_hit and other.vmfb_path != first.vmfb_path


def test_malformed_mlir_gives_line_and_column(fresh_cache: Path, tmp_path: Path) -> None:
    source = tmp_path / "bad.mlir"
    source.write_text(BAD_MLIR)
    with pytest.raises(CompileError) as info:
        compile_module(source, LOCAL_FLAGS)
    assert "bad.mlir:2:40" in info.value.message
    assert "expected '>'" in info.value.message
    assert info.value.log_path and Path(info.value.log_path).exists()
    assert "\n" not in str(info.value)


def test_compiler_crash_becomes_an_error(fresh_cache: Path, tmp_path: Path) -> None:
    source = tmp_path / "mlp.mlir"
    source.write_bytes(DEMOS["mlp"].source())
    with pytest.raises(CompileError) as info:
        compile_module(source, ("--iree-hal-target-device=vulkan", "--iree-vulkan-target=sm_90"))
    message = info.value.message
    assert "crashed" in message and "ampere" in message, message


def test_cuda_sm_90_is_explained(fresh_cache: Path, tmp_path: Path) -> None:
    source = tmp_path / "mlp.mlir"
    source.write_bytes(DEMOS["mlp"].source())
    with pytest.raises(CompileError) as info:
        compile_module(source, ("--iree-hal-target-device=cuda", "--iree-cuda-target=sm_90"))
    assert "missing GPU target" in info.value.message
    assert "sm_80" in info.value.message
    kinds = {d.kind for d in info.value.diagnostics}
    assert "unsupported_target" in kinds


def test_shared_memory_overflow_is_recognised(tmp_path: Path) -> None:
    """The real compiler's resource check, on the seed's numbers (606208 vs 65536 bytes)."""
    source = tmp_path / "smem.mlir"
    source.write_text(
        "module {\n"
        "  func.func @conv_dispatch_0_conv_2d_nchw_fchw_1x256x126x126x64x3x3_f32() {\n"
        "    %alloc = memref.alloc() : memref<606208xi8, #gpu.address_space<workgroup>>\n"
        "    return\n  }\n}\n"
    )
    from iree.compiler.tools.binaries import find_tool

    proc = subprocess.run(
        [
            find_tool("iree-opt"),
            "--pass-pipeline=builtin.module(func.func(iree-codegen-gpu-check-resource-usage))",
            str(source),
        ],
        capture_output=True,
        text=True,
        env={**os.environ},
    )
    assert proc.returncode != 0
    [diag] = parse_diagnostics(proc.stderr)
    assert diag.kind == "shared_memory_exceeded"
    assert diag.used_bytes == 606208 and diag.limit_bytes == 65536
    assert diag.dispatch == "conv_dispatch_0_conv_2d_nchw_fchw_1x256x126x126x64x3x3_f32"
    assert "9.2x over" in diag.one_line()


def test_parse_op_spelling_of_shared_memory() -> None:
    text = (
        "model.mlir:3:5: error: 'func.func' op uses 98304 bytes of shared memory; "
        "exceeded the limit of 16384 bytes\n"
        'model.mlir:3:5: note: see current operation: "func.func"() <{sym_name = "m_dispatch_4_matmul"}>'
    )
    [diag] = parse_diagnostics(text)
    assert (diag.kind, diag.used_bytes, diag.limit_bytes, diag.dispatch) == (
        "shared_memory_exceeded",
        98304,
        16384,
        "m_dispatch_4_matmul",
    )


def test_a_needed_workaround_is_remembered(fresh_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A compile that met a known compiler failure goes straight to the working flags next time.

    The failure is real (the compiler rejects an unknown CPU) and so is the fix (a later
    occurrence of the flag wins); only the table naming it is this test's own.
    """
    from gputop.core.module import compile as compile_mod

    workaround = compile_mod.Workaround(
        LOCAL_FLAGS[0], "Unknown CPU for target architecture", "--iree-llvmcpu-target-cpu=host", "no such CPU"
    )
    monkeypatch.setattr(compile_mod, "WORKAROUNDS", (workaround,))
    source = tmp_path / "mlp.mlir"
    source.write_bytes(DEMOS["mlp"].source())
    flags = (*(f for f in LOCAL_FLAGS if "target-cpu" not in f), "--iree-llvmcpu-target-cpu=nonsense")

    first = compile_module(source, flags, log_dir=tmp_path / "logs")
    assert first.workaround and "compiled again with --iree-llvmcpu-target-cpu=host" in first.workaround
    assert first.flags == (*flags, workaround.flag) and not first.cache_hit
    failed_log = tmp_path / "logs" / f"compile-{compile_mod.cache_key_for(source.read_bytes(), flags)[:12]}.log"
    assert "Unknown CPU" in failed_log.read_text()
    failed_log.unlink()

    second = compile_module(source, flags, log_dir=tmp_path / "logs")
    assert second.cache_hit and second.vmfb_path == first.vmfb_path
    assert second.workaround and "(remembered)" in second.workaround
    assert not failed_log.exists(), "the failing compile ran again"

    # Without the cache, the compiler is asked again (the failure may be gone in a new build).
    third = compile_module(source, flags, log_dir=tmp_path / "logs", use_cache=False)
    assert failed_log.exists() and third.workaround and "compiled again" in third.workaround


I64_DISPATCH = """
func.func @f(%a: tensor<64xi64>, %b: tensor<64xi64>) -> tensor<64xi64> {
  %e = tensor.empty() : tensor<64xi64>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                                        affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<64xi64>, tensor<64xi64>) outs(%e : tensor<64xi64>) {
  ^bb0(%x: i64, %y: i64, %o: i64):
    %m = arith.muli %x, %y : i64
    %d = arith.divsi %m, %y : i64
    linalg.yield %d : i64
  } -> tensor<64xi64>
  return %r : tensor<64xi64>
}
"""


def test_an_error_in_a_dispatch_source_quotes_that_file_and_keeps_it(tmp_path: Path, vulkan_device: str) -> None:
    """i64 on the default SPIR-V target fails in a dumped dispatch source: the one-line error names that
    file where it is kept (not a deleted .partial folder) and quotes its line, not the module's line
    of the same number."""
    source = tmp_path / "i64.mlir"
    padding = "".join(f"// the module's own line {n}\n" for n in range(1, 31))
    source.write_text(padding + I64_DISPATCH)
    folder = tmp_path / "session"
    proc = run_gputop(
        "run", str(source), "--device", vulkan_device, "-n", "1", "--no-cache", "--session-dir", str(folder)
    )
    line = assert_one_line_error(proc, 3, "_dispatch_0.mlir:")
    assert "the module's own line" not in line and ".partial" not in line, line
    match = re.search(r"(/\S+_dispatch_0\.mlir):(\d+):\d+:", line)
    assert match, line
    kept = Path(match.group(1))
    assert kept.is_file() and kept.parent.parent == folder, kept
    quoted = kept.read_text().splitlines()[int(match.group(2)) - 1].strip()
    assert f"`{quoted[:40]}" in line, (quoted, line)
