"""FLOPs and bytes per dispatch, counted from the executable sources the real compiler dumps.

The truth here is the hand count: for each op, the loop nest a person writes
down from the op's definition (2·M·N·K for a matmul, 2·N·F·OH·OW·C·KH·KW for a
convolution, the body's arithmetic times the elements for a generic), and the
tensors' sizes for the bytes. On the H200, `bench/gpu/roofline.sh` checks the
same counts against Nsight Compute's instruction and DRAM counters.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import run_gputop, run_json
from gputop.core.module.compile import compile_module
from gputop.core.module.demos import DEMOS
from gputop.core.module.targets import LOCAL_FLAGS
from gputop.core.profiling.work.dispatch_work import DispatchWork, ModuleWork, sources_dir_for, work_file_for
from gputop.core.profiling.work.ir_count import module_work

F32 = 4


def matmul(m: int, n: int, k: int) -> tuple[int, int, int]:
    """(FLOPs, bytes read, bytes written) of an f32 M x K by K x N matmul, by hand."""
    return 2 * m * n * k, (m * k + k * n) * F32, m * n * F32


MLP = {  # name: (flops, bytes read, bytes written); the ReLU's max is no FLOP
    "mlp_dispatch_0_matmul_256x1024x1024_f32": matmul(256, 1024, 1024),
    "mlp_dispatch_1_matmul_256x512x1024_f32": matmul(256, 512, 1024),
    "mlp_dispatch_2_matmul_256x256x512_f32": matmul(256, 256, 512),
}
CONV = {  # 1x64x128x128 * 256x64x3x3, stride 1, no padding: output 1x256x126x126
    "conv_dispatch_0_conv_256x126x126x64x3x3_f32": (
        2 * 256 * 126 * 126 * 64 * 3 * 3,
        (64 * 128 * 128 + 256 * 64 * 3 * 3) * F32,
        256 * 126 * 126 * F32,
    ),
}

OPS = Path(__file__).parent / "data" / "work_ops.mlir"
OPS_HAND_COUNT = {  # function: (flops or None, bytes read, bytes written, a label it must carry)
    "batch_matmul": (2 * 4 * 64 * 16 * 32, (4 * 64 * 32 + 4 * 32 * 16) * F32, 4 * 64 * 16 * F32, "batch_matmul"),
    # 1x33x33x8 * 3x3x8x16, stride 2, dilation 2: OH = OW = (33 - 2*(3-1) - 1) // 2 + 1 = 15
    "conv_strided_dilated": (
        2 * 15 * 15 * 16 * 3 * 3 * 8,
        (33 * 33 * 8 + 3 * 3 * 8 * 16) * F32,
        15 * 15 * 16 * F32,
        "conv",
    ),
    # 2 groups of 4 input and 8 output channels, 10x10 -> 8x8
    "conv_grouped": (
        2 * 2 * 8 * 8 * 8 * 4 * 3 * 3,
        (2 * 4 * 10 * 10 + 2 * 8 * 4 * 3 * 3) * F32,
        2 * 8 * 8 * 8 * F32,
        "conv",
    ),
    "conv_depthwise": (2 * 8 * 8 * 8 * 3 * 3, (10 * 10 * 8 + 3 * 3 * 8) * F32, 8 * 8 * 8 * F32, "conv"),
    "conv_3d": (
        2 * 4 * 4 * 4 * 8 * 3 * 3 * 3 * 4,
        (6 * 6 * 6 * 4 + 3 * 3 * 3 * 4 * 8) * F32,
        4 * 4 * 4 * 8 * F32,
        "conv",
    ),
    # exp(a * b + c), then a max (no FLOP): mul, add, exp per element
    "elementwise": (3 * 16 * 16, 3 * 16 * 16 * F32, 16 * 16 * F32, "elementwise"),
    "row_sum": (16 * 64, 16 * 64 * F32, 16 * F32, "reduction"),
    "transpose": (0, 32 * 64 * F32, 32 * 64 * F32, "copy"),
    # linalg.softmax's decomposition: subtract, exp, sum, divide per element (the max is no FLOP)
    "softmax": (4 * 4 * 128, 4 * 128 * F32, 4 * 128 * F32, "softmax"),
    "matmul_f16": (2 * 32 * 16 * 64, (32 * 64 + 64 * 16) * 2, 32 * 16 * 2, "matmul"),
    "sort": (None, 64 * F32, 64 * F32, "unknown: iree_linalg_ext.sort is not counted"),
}


def compiled(name: str, source: bytes) -> Path:
    return compile_module(Path(f"{name}.mlir"), LOCAL_FLAGS, source_bytes=source).vmfb_path


def by_function(work: ModuleWork, function: str) -> DispatchWork:
    found = [w for name, w in work.dispatches.items() if name.startswith(f"{function}_dispatch_")]
    assert len(found) == 1, (function, list(work.dispatches))
    return found[0]


@pytest.mark.parametrize(("demo", "hand"), [("mlp", MLP), ("conv", CONV)])
def test_demo_flops_and_bytes_equal_the_hand_count(demo: str, hand: dict[str, tuple[int, int, int]]) -> None:
    vmfb = compiled(demo, DEMOS[demo].source())
    work = module_work(vmfb)
    assert work.reason is None
    assert sources_dir_for(vmfb).is_dir(), "the compile keeps the executable sources beside the module"
    assert set(work.dispatches) == set(hand)
    for name, (flops, read, written) in hand.items():
        dispatch = work.dispatches[name]
        assert (dispatch.flops, dispatch.bytes_read, dispatch.bytes_written) == (flops, read, written), name
        assert dispatch.contraction and dispatch.dtype == "f32"
    # Counted once: the cache keeps the counts beside the module, and reading them back gives the same.
    assert work_file_for(vmfb).is_file()
    assert module_work(vmfb).dispatches == work.dispatches


def test_every_kind_of_op_is_counted_by_hand() -> None:
    work = module_work(compiled("work_ops", OPS.read_bytes()))
    for function, (flops, read, written, label) in OPS_HAND_COUNT.items():
        dispatch = by_function(work, function)
        assert dispatch.flops == flops, (function, dispatch)
        assert (dispatch.bytes_read, dispatch.bytes_written) == (read, written), (function, dispatch)
        assert label in dispatch.label, (function, dispatch.label)
    assert by_function(work, "matmul_f16").dtype == "f16" and by_function(work, "matmul_f16").contraction
    assert not by_function(work, "elementwise").contraction


def test_a_module_cached_without_its_sources_gets_them_dumped() -> None:
    """Modules cached by an older gputop have no sources: the cache hit dumps them without compiling."""
    vmfb = compiled("mlp", DEMOS["mlp"].source())
    shutil.rmtree(sources_dir_for(vmfb))
    work_file_for(vmfb).unlink(missing_ok=True)
    again = compile_module(Path("mlp.mlir"), LOCAL_FLAGS, source_bytes=DEMOS["mlp"].source())
    assert again.cache_hit and again.vmfb_path == vmfb
    assert module_work(vmfb).dispatches["mlp_dispatch_0_matmul_256x1024x1024_f32"].flops == 2 * 256 * 1024 * 1024


def test_a_precompiled_module_says_it_has_no_sources_until_its_work_file_is_beside_it(tmp_path: Path) -> None:
    cached = compiled("mlp", DEMOS["mlp"].source())
    module_work(cached)  # the work file exists in the cache
    vmfb = tmp_path / "mlp_local.vmfb"
    shutil.copyfile(cached, vmfb)
    missing = module_work(vmfb)
    assert not missing.dispatches and missing.reason and "no executable sources" in missing.reason
    shutil.copyfile(work_file_for(cached), work_file_for(vmfb))
    assert module_work(vmfb).dispatches == module_work(cached).dispatches


def test_profile_names_join_the_exports() -> None:
    """Kernel names from CUDA or SPIR-V may spell `$` or `.` as `_`: the join compares letters and digits."""
    dispatch = DispatchWork("main$async_dispatch_3_matmul_8x8x8_f32", 1024, 512, 256, ("matmul",), "f32", True)
    work = ModuleWork({dispatch.name: dispatch}, source="test")
    assert work.lookup("main$async_dispatch_3_matmul_8x8x8_f32") is dispatch
    assert work.lookup("main_async_dispatch_3_matmul_8x8x8_f32") is dispatch
    assert work.lookup("main$async_dispatch_4_matmul_8x8x8_f32") is None


def test_run_reports_work_and_efficiency_per_kernel() -> None:
    proc = run_gputop("run", "demo:mlp", "--device", "local-task", "-n", "2", "--profile", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    kernels = {k["name"]: k for k in report["kernels"]}
    assert set(kernels) == set(MLP)
    for name, (flops, read, written) in MLP.items():
        kernel = kernels[name]
        assert (kernel["flops"], kernel["bytes_read"], kernel["bytes_written"]) == (flops, read, written)
        assert kernel["bytes"] == read + written
        assert kernel["intensity"] == pytest.approx(flops / (read + written))
        assert kernel["achieved_tflops"] == pytest.approx(flops / (kernel["avg_us"] * 1e-6) / 1e12)
        assert kernel["achieved_gbps"] == pytest.approx((read + written) / (kernel["avg_us"] * 1e-6) / 1e9)
        assert kernel["pct_peak_compute"] == pytest.approx(100 * kernel["achieved_tflops"] / kernel["peak_tflops"])
        assert kernel["bound"] in ("compute", "memory")
        assert kernel["work"].startswith("fill+matmul")
    profile = report["profile"]
    # A CPU device: its peaks from cores, SIMD and clock; no GPU clock, and the reason in its place.
    assert profile["clocks"] is None and "CPU device" in profile["clocks_reason"]
    assert profile["peaks"]["f32_tflops"] > 0 and "cores" in profile["peaks"]["source"]
    ridge = profile["peaks"]["f32_tflops"] * 1e12 / (profile["peaks"]["bandwidth_gbps"] * 1e9)
    for kernel in kernels.values():
        assert kernel["bound"] == ("compute" if kernel["intensity"] >= ridge else "memory")
    assert "executable sources" in profile["work_source"]
    assert {k["work_source"] for k in kernels.values()} == {"ir"}
    # The warm-up makes no call without a GPU clock, and says why.
    assert "warm-up skipped" in proc.stderr and "no GPU clock" in proc.stderr
    assert report["calls"]["count"] == 2


def test_lavapipe_is_measured_against_the_cpu(vulkan_device: str) -> None:
    """lavapipe runs on the CPU: its roofline is the CPU's."""
    proc, report = run_json("demo:mlp", "--device", vulkan_device, "-n", "1", "--profile")
    assert proc.returncode == 0, proc.stderr
    assert "cores" in report["profile"]["peaks"]["source"]
    assert "software GPU" in report["profile"]["clocks_reason"]
    assert {k["flops"] for k in report["kernels"]} == {flops for flops, _, _ in MLP.values()}
