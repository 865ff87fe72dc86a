"""Work read from dispatch names against work counted from the IR, on every module the suite compiles.

A `.vmfb` compiled elsewhere has no executable sources, only its dispatch
names. The truth for what a name says is the IR count of the same dispatch
(`tests/test_work.py` checks that count against hand counts): wherever the
name is enough, the two must be equal. Where they differ, the difference is
listed below with its cause: work fused beside the op the name gives, or an
operand the compiler folded away. A name that says too little must say why.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import onnx
import pytest
from test_bad_input import ALLOCATE_MLIR, PARAM_MLIR
from test_compile import I64_DISPATCH
from test_onnx import SINGLE_LAYER
from test_params import SCALE_MLIR
from test_signals import BIG_MATMUL

from conftest import run_json
from gputop.core.module.compile import compile_module
from gputop.core.module.demos import DEMOS
from gputop.core.module.targets import LOCAL_FLAGS
from gputop.core.multidevice.affinity import affinity_flags
from gputop.core.onnx.onnx_import import COMPILE_FLAGS as ONNX_FLAGS
from gputop.core.onnx.onnx_import import import_onnx
from gputop.core.profiling.work.dispatch_work import ModuleWork, sources_dir_for, work_file_for
from gputop.core.profiling.work.efficiency import rate_kernel
from gputop.core.profiling.work.ir_count import module_work
from gputop.core.profiling.work.name_work import dispatch_summary, work_from_name
from gputop.core.profiling.work.peaks import gpu_peaks
from gputop.core.records.profile import KernelTiming
from gputop.core.wording import limits_line
from gputop.tui.text import run_report

DATA = Path(__file__).parent / "data"
ONNX_DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
F32 = 4

# (module pattern, dispatch name pattern): why the name says less than the IR there. Each must still differ.
NAME_SAYS_LESS = {
    ("name_ops", "matmul_bias_dispatch"): "a bias add fused after the matmul: M*N FLOPs and N floats more",
    ("name_ops", "matmul_accumulating_dispatch"): "no fill: the matmul adds into its output, read as an input",
    ("test_Linear", "matmul"): "Gemm's bias, fused after the matmul",
    # The ONNX test models' weights are splat constants: the compiler folds them into the dispatch, which then
    # reads nothing from memory for them. Transposing one at load time becomes a fill.
    ("light_resnet50", "matmul_1x1000x2048"): "a splat weight folded away, and the classifier's bias fused",
    (".", "^_initializer_.*_transpose_"): "the transpose of a splat constant at load, folded into a fill",
}
# Every kind of name whose work is read, each met in name_ops.mlir (or a demo) and equal there.
READ_KINDS = {
    "matmul", "matmul_like", "batch_matmul", "matvec", "vecmat", "batch_matvec", "batch_vecmat", "dot",
    "matvec_like", "transpose", "softmax",
}  # fmt: skip


def two_local(count: int) -> tuple[str, ...]:
    return affinity_flags([f"local:{i}" for i in range(count)], [LOCAL_FLAGS] * count)


def suite_modules() -> dict[str, tuple[bytes, tuple[str, ...]]]:
    """The MLIR modules the suite compiles for local-task (those that compile), by a name for each."""
    modules = {
        f"demo:{name}": (demo.source(), two_local(demo.devices) if demo.devices > 1 else LOCAL_FLAGS)
        for name, demo in DEMOS.items()
    }
    modules["work_ops"] = ((DATA / "work_ops.mlir").read_bytes(), LOCAL_FLAGS)
    modules["name_ops"] = ((DATA / "name_ops.mlir").read_bytes(), LOCAL_FLAGS)
    for path in sorted((DATA / "affinity").rglob("*.mlir")):
        if "refused" not in path.parts:
            text = path.read_text(encoding="utf-8")
            modules[f"affinity/{path.stem}"] = (text.encode(), two_local(3 if "@device_c" in text else 2))
    for name, text in {
        "big_matmul": BIG_MATMUL,
        "i64_dispatch": I64_DISPATCH,
        "scale_parameter": SCALE_MLIR,
        "mul_parameter": PARAM_MLIR,
        "allocate": ALLOCATE_MLIR,
    }.items():
        modules[name] = (text.encode(), LOCAL_FLAGS)
    return modules


MODULES = suite_modules()
ONNX_MODELS = {
    **{name: ONNX_DATA / "pytorch-converted" / name / "model.onnx" for name in SINGLE_LAYER},
    "light_squeezenet": ONNX_DATA / "light" / "light_squeezenet.onnx",
    "light_resnet50": ONNX_DATA / "light" / "light_resnet50.onnx",
}


def assert_names_read_as_the_ir_counts(module: str, work: ModuleWork) -> set[str]:
    """Each dispatch's work from its name equals its IR count where the name gives it, save the listed
    differences; a name that gives nothing says why. The kinds read equal to the IR are returned."""
    equal_kinds: set[str] = set()
    for name, ir in work.dispatches.items():
        named = work_from_name(name)
        assert named.source == "name" and ir.source == "ir"
        if named.flops is None:
            assert named.unknown and named.label.startswith("unknown: "), name
            continue
        from_name = (named.flops, named.bytes_read, named.bytes_written)
        from_ir = (ir.flops, ir.bytes_read, ir.bytes_written)
        if named.bytes is None:  # a convolution named by its op: FLOPs only, and why not its bytes
            assert named.unknown, name
            from_name, from_ir = from_name[:1], from_ir[:1]
        if any(re.match(where, module) and re.search(what, name) for where, what in NAME_SAYS_LESS):
            assert from_name != from_ir, f"{name} now reads as the IR counts: drop it from NAME_SAYS_LESS"
            continue
        assert from_name == from_ir, (name, named, ir)
        if ir.flops:  # the type and kind that pick the device's peak for it
            assert (named.dtype, named.contraction) == (ir.dtype, ir.contraction), name
        equal_kinds.add(named.ops[0])
    return equal_kinds


@pytest.mark.parametrize("module", list(MODULES))
def test_names_read_as_the_ir_counts(module: str) -> None:
    source, flags = MODULES[module]
    vmfb = compile_module(Path(f"{module.replace(':', '_').replace('/', '_')}.mlir"), flags, source_bytes=source)
    work = module_work(vmfb.vmfb_path)
    kinds = assert_names_read_as_the_ir_counts(module, work)
    if module == "name_ops":
        assert kinds == READ_KINDS - {"softmax", "transpose"}, kinds
    if module == "work_ops":
        assert kinds == {"batch_matmul", "matmul", "softmax", "transpose"}, kinds
    if module == "demo:mlp":
        assert kinds == {"matmul"} and len(work.dispatches) == 3


@pytest.mark.parametrize("model", list(ONNX_MODELS))
def test_onnx_models_names_read_as_the_ir_counts(model: str, tmp_path: Path) -> None:
    imported = import_onnx(ONNX_MODELS[model], tmp_path)
    work = module_work(compile_module(imported.mlir, (*LOCAL_FLAGS, *ONNX_FLAGS)).vmfb_path)
    assert work.dispatches
    assert_names_read_as_the_ir_counts(model, work)


def test_named_ops_the_compiler_no_longer_emits_and_names_that_say_nothing() -> None:
    """IREE 3.13 generalizes the suite's convolutions and poolings before naming dispatches (they come out
    `conv_`); a named one (`conv_2d_nhwc_hwcf_...`) has its FLOPs in its loops, its input's size depends on
    strides. These names are hand-written, in IREE's format; so are those that say nothing usable."""
    conv = work_from_name("net_dispatch_4_conv_2d_nhwc_hwcf_2x16x16x16x3x3x8_f32")
    assert conv.flops == 2 * 2 * 16 * 16 * 16 * 3 * 3 * 8 and conv.bytes is None and conv.contraction
    assert conv.label.startswith("conv_2d_nhwc_hwcf; bytes unknown: ") and "strides" in conv.label
    # Rated on its FLOPs alone: a rate and a share of the compute peak, no intensity and no bound.
    h200 = gpu_peaks("NVIDIA H200")
    timing = KernelTiming(conv.name, 1, 50.0, 50.0, 50.0, 50.0, 50.0, 1.0, 1.0, None, None, "cupti", "device")
    rated = rate_kernel(timing, conv, h200, "")
    assert rated.pct_peak_compute and rated.intensity is None and rated.bound is None
    assert (rated.work_source, rated.work) == ("name", conv.label)
    assert work_from_name("net_dispatch_5_pooling_nhwc_sum_1x16x16x8x3x3_f32").flops == 16 * 16 * 8 * 3 * 3
    assert work_from_name("net_dispatch_6_pooling_nchw_max_2x8x16x16x3x3_f32").flops == 0
    # A backend may spell `$async` as `_async`; the summary is what follows the dispatch number.
    assert dispatch_summary("main_graph_async_dispatch_12_matmul_8x8x8_f16") == "matmul_8x8x8_f16"
    assert work_from_name("main$async_dispatch_3_matmul_8x8x8_f32").flops == 1024
    for name, why in {
        "saxpy": "not an IREE dispatch name",
        "m_dispatch_0_slow_memcpy": "no size",
        "m_dispatch_1_unpack_elementwise_64x64_f32_pack": "packed operands",
        "m_dispatch_2_matmul_like_2x32x48x64_f32": "which loops index which operand",
        "m_dispatch_3_sort_64xf32_dispatch_tensor_store": "not counted",
        "m_dispatch_4_reduction_16x64_f32": "not which are reduced",
    }.items():
        work = work_from_name(name)
        assert work.bytes is None and why in (work.unknown or ""), (name, work)
    assert work_from_name("m_dispatch_2_matmul_like_2x32x48x64_f32").flops == 2 * 2 * 32 * 48 * 64


def test_a_vmfb_without_sources_reads_its_matmuls_work_from_their_names(tmp_path: Path) -> None:
    """The module compiled by gputop, its bare `.vmfb` run elsewhere: the same FLOPs and bytes per matmul."""
    source = tmp_path / "mlp.mlir"
    source.write_bytes(DEMOS["mlp"].source())
    bare = tmp_path / "elsewhere" / "mlp.vmfb"
    bare.parent.mkdir()
    shutil.copyfile(compile_module(source, LOCAL_FLAGS).vmfb_path, bare)
    assert not sources_dir_for(bare).exists() and not work_file_for(bare).exists()
    proc, from_names = run_json(str(bare), "--device", "local-task", "-n", "1", "--profile")
    assert proc.returncode == 0, proc.stderr
    proc, from_ir = run_json(str(source), "--device", "local-task", "-n", "1", "--profile")
    assert proc.returncode == 0, proc.stderr
    named = {k["name"]: k for k in from_names["kernels"]}
    counted = {k["name"]: k for k in from_ir["kernels"]}
    assert set(named) == set(counted) and len(named) == 3
    for name, kernel in named.items():
        for key in ("flops", "bytes_read", "bytes_written", "bytes"):
            assert kernel[key] == counted[name][key] and kernel[key], (name, key)
        assert (kernel["work_source"], counted[name]["work_source"]) == ("name", "ir")
        assert kernel["bound"] in ("compute", "memory") and kernel["pct_peak_compute"] is not None
    assert from_names["profile"]["work_source"].startswith("the dispatch names: mlp.vmfb has no executable sources")
    text = run_report(from_names)
    assert "mlp_dispatch_0_matmul_256x1024x1024_f32 *" in text and "* work read from the dispatch name" in text
    assert "FLOPs unknown" not in text and "unknown   " not in text
    counted_text = run_report(from_ir)
    assert "_f32 *" not in counted_text and "work read from the dispatch name" not in counted_text


def test_a_vmfb_without_sources_says_per_kernel_why_a_name_is_not_enough(tmp_path: Path) -> None:
    """demo:conv's one dispatch is named `conv_...`, as a pooling would be: unknown, and why, per kernel."""
    bare = tmp_path / "conv.vmfb"
    shutil.copyfile(compile_module(Path("conv.mlir"), LOCAL_FLAGS, source_bytes=DEMOS["conv"].source()).vmfb_path, bare)
    proc, report = run_json(str(bare), "--device", "local-task", "-n", "1", "--profile")
    assert proc.returncode == 0, proc.stderr
    [kernel] = report["kernels"]
    assert kernel["flops"] is None and kernel["work_source"] == "name"
    assert kernel["work"].startswith("unknown: conv: IREE names poolings conv_ too")
    assert "FLOPs unknown: conv: IREE names poolings conv_ too" in limits_line(report["profile"], report["kernels"])
    text = run_report(report)
    assert f"unknown   {kernel['name']}: conv: IREE names poolings conv_ too" in text
    assert "work      the dispatch names: conv.vmfb has no executable sources beside it" in text
    assert "has no executable sources beside it: FLOPs and bytes unknown" not in text + proc.stderr
