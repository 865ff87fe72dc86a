"""The counters pass (issue 30): ncu's real output read back, joined to the Kernels table, and every refusal.

This machine has no NVIDIA GPU and no ncu, so the pass's parsing is tested on
real Nsight Compute reports captured on an H200 (`tests/data/ncu/`, its README
says how), its joins on a real H200 profile of the same module
(`bench/results/.../roofline_mlp_cuda.json`), and its refusals on the real
engine here: `gputop run --counters`, the TUI's `n` and the control request,
on the CPU, where each says in one line why not and what to use instead.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from test_neighbours import cuda_mlp
from tui_pilot import wait_for

from conftest import run_gputop, run_json
from gputop.core.module.compile import compile_module
from gputop.core.module.demos import DEMOS
from gputop.core.module.targets import LOCAL_FLAGS
from gputop.core.profiling.ncu.kernel_counters import counter_value, read_counters, summary_from_counters, with_counters
from gputop.core.profiling.ncu.ncu_command import (
    METRICS,
    NCU_ENV,
    PERMISSION,
    counters_command,
    find_ncu,
    ncu_failure,
    newest,
    one_call_command,
    parse_version,
)
from gputop.core.profiling.work.dispatch_work import ModuleWork
from gputop.core.profiling.work.efficiency import KernelEfficiency
from gputop.core.profiling.work.ir_count import module_work
from gputop.core.profiling.work.name_work import work_from_name
from gputop.core.records.base import to_json
from gputop.core.records.calls import CallStats
from gputop.core.records.counters import CountersPass, KernelCounters
from gputop.core.records.devices import DeviceInfo
from gputop.core.records.profile import ProfileSummary
from gputop.core.records.progress import Phases
from gputop.core.run import RunConfig, Session
from gputop.core.run.counters_pass import CountersRunner
from gputop.core.run.flow import RunContext
from gputop.core.run.profiling import ProfilePasses
from gputop.core.run.requests import Controls, why_no_counters
from gputop.core.run.state import RunState
from gputop.core.run.viewer_ops import answer
from gputop.core.snapshot import RunSnapshot
from gputop.core.store.replay import snapshot_from_json, value_from_json
from gputop.core.store.report import snapshot_report
from gputop.core.store.writer import SessionWriter
from gputop.core.watch import nvml
from gputop.tui.app import GputopApp
from gputop.tui.bridge import ReplaySource
from gputop.tui.panes.kernels import KernelsPane
from gputop.tui.screens.roofline import estimate_point, render_roofline
from gputop.tui.text import run_report

NCU = Path(__file__).parent / "data" / "ncu"
H200_PROFILE = (
    Path(__file__).parents[1] / "bench" / "results" / "h200-2026-11-23" / "issue19" / "roofline_mlp_cuda.json"
)
SOURCE = "ncu 2025.3.1.0"
PASS_WALL_S = 3.5  # the capture kept no wall time of its pass: a figure for the fixture only, never a measurement


def counters_of(module: str) -> dict[str, KernelCounters]:
    raw, details = ((NCU / f"{module}_{page}.csv").read_text() for page in ("raw", "details"))
    return {k.name: k for k in read_counters(raw, details, SOURCE)}


def matmul_flops(name: str) -> int:
    """2·M·N·K from `..._matmul_MxNxK_f32`, by hand."""
    match = re.search(r"matmul_(\d+)x(\d+)x(\d+)_", name)
    assert match, name
    m, n, k = (int(g) for g in match.groups())
    return 2 * m * n * k


# -- ncu's numbers and pages ----------------------------------------------------------------------------


def test_numbers_as_ncu_prints_them() -> None:
    na = (NCU / "unknown_metric.txt").read_text().split("(!)")[1].split()[0]  # ncu's own word for it
    assert na == "n/a"
    assert counter_value("287,488") == 287488.0
    assert counter_value("3,199,410,062.33") == pytest.approx(3199410062.33)
    assert counter_value(na) is None and counter_value(f"(!) {na}") is None and counter_value("") is None
    assert counter_value("1.5", "Kbyte") == 1500.0  # a report printed in other than base units


def test_fma_counted_twice_on_the_two_matmuls() -> None:
    """mm2's FFMA counts are 268,435,456 and 67,108,864: FLOPs twice those, nothing else on the FP pipes."""
    kernels = counters_of("mm2")
    first = kernels["mm2_dispatch_0_matmul_256x1024x1024_f32"]
    second = kernels["mm2_dispatch_1_matmul_256x256x1024_f32"]
    assert (first.flops, second.flops) == (2 * 268_435_456, 2 * 67_108_864)
    assert (first.flops_fp32, first.flops_fp16, first.flops_fp64) == (first.flops, 0, 0)
    assert first.time_us == pytest.approx(287.488) and first.launches == 1
    assert (first.dram_read_bytes, first.dram_write_bytes, first.l2_bytes) == (7680, 0, 44_538_560)
    assert (first.sm_pct, first.dram_pct, first.compute_memory_pct) == (3.59, 0.0, 45.4)
    assert first.occupancy_pct == 12.49 and first.registers_per_thread == 51 and first.shared_bytes_per_block == 0
    assert (first.block_size, first.grid_size) == (256, 64) and (second.block_size, second.grid_size) == (256, 16)
    assert first.sm_mhz == pytest.approx(1979.9, abs=0.1)
    assert first.verdict == (
        "This kernel grid is too small to fill the available resources on this device, "
        "resulting in only 0.1 full waves across all SMs."
    )
    rules = {r.name: r for r in first.rules}
    assert set(rules) == {"LaunchConfiguration", "AchievedOccupancy", "TheoreticalOccupancy"}
    assert (rules["LaunchConfiguration"].speedup_pct, rules["LaunchConfiguration"].speedup_type) == (51.52, "global")
    assert all("\n" not in r.text and r.text.endswith(".") for r in first.rules)
    # The capture asked for no tensor-path counters: they are absent, not 0, and the FLOPs still stand.
    assert first.tensor_ops is None and first.tensor_type is None
    assert {f"sm__ops_path_tensor_src_{t}.sum" for t in ("fp16", "fp8", "int8")} <= set(first.absent)


def test_measured_flops_equal_the_estimates_from_names_and_from_the_ir() -> None:
    """On the H200's matmuls the counted FLOPs are 2·M·N·K, what the dispatch name and the IR count say."""
    compiled = compile_module(Path("demo_mlp.mlir"), LOCAL_FLAGS, source_bytes=DEMOS["mlp"].source())
    ir = module_work(compiled.vmfb_path)
    mlp = counters_of("mlp")
    assert set(mlp) == set(ir.dispatches) and len(mlp) == 3  # the same dispatches, named alike on both targets
    for module in ("mm2", "mlp"):
        for name, measured in counters_of(module).items():
            named = work_from_name(name)
            assert measured.flops == named.flops == matmul_flops(name), name
            if module == "mlp":
                assert measured.flops == ir.dispatches[name].flops, name
    assert mlp["mlp_dispatch_0_matmul_256x1024x1024_f32"].flops == 2 * 256 * 1024 * 1024


def test_na_and_missing_metrics_are_absent_never_zero() -> None:
    """A metric an older chip lacks (its column gone) or that ncu answers n/a for is None and named absent."""
    rows = (NCU / "mm2_raw.csv").read_text().splitlines()
    header = rows[0].split('","')
    write = header.index("dram__bytes_write.sum")
    gone = header.index("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum")
    changed = []
    for number, line in enumerate(rows):
        cells = line.split('","')
        if number >= 2:
            cells[write] = "n/a"
        changed.append('","'.join(cell for index, cell in enumerate(cells) if index != gone))
    kernels = {k.name: k for k in read_counters("\n".join(changed), "", SOURCE)}
    first = kernels["mm2_dispatch_0_matmul_256x1024x1024_f32"]
    assert first.dram_write_bytes is None and first.dram_read_bytes == 7680
    assert first.flops_fp32 is None and first.flops is None and first.flops_fp16 == 0
    assert {"dram__bytes_write.sum", "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"} <= set(first.absent)
    assert first.time_us == pytest.approx(287.488) and first.verdict is None and first.rules == ()


def test_launches_of_one_kernel_are_averaged() -> None:
    """A kernel launched twice in the call: one row, count kept, time the mean (the mm2 page, its launch doubled)."""
    lines = (NCU / "mm2_raw.csv").read_text().splitlines()
    again = lines[2].replace('"0","', '"2","', 1).replace('"287,488"', '"300,000"')
    kernels = {k.name: k for k in read_counters("\n".join([*lines, again]), "", SOURCE)}
    first = kernels["mm2_dispatch_0_matmul_256x1024x1024_f32"]
    assert first.launches == 2 and first.time_us == pytest.approx((287.488 + 300.0) / 2)
    assert first.flops == 2 * 268_435_456  # per launch


def test_ncu_version_failures_and_where_it_is_looked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_version((NCU / "ncu_version.txt").read_text()) == "2025.3.1.0"
    # A Vulkan device's work under ncu: no CUDA kernel to profile (captured on the H200).
    vulkan = ncu_failure((NCU / "vulkan_under_ncu.txt").read_text())
    assert vulkan is not None and vulkan.startswith("ncu profiled no kernels") and "\n" not in vulkan
    assert ncu_failure((NCU / "unknown_metric.txt").read_text()) is None  # profiled; that one counter is n/a
    # ncu's own words for counters reserved to admins (https://developer.nvidia.com/ERR_NVGPUCTRPERM).
    denied = (
        "==PROF== Connected to process 2409 (/tmp/site/iree/_runtime_libs/iree-run-module)\n"
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters "
        "on the target device 0.\n"
    )
    assert ncu_failure(denied) == PERMISSION and "NVreg_RestrictProfilingToAdminUsers=0" in PERMISSION
    assert "run gputop as root" in PERMISSION
    first_error = ncu_failure("EXEC @mm2\n==ERROR== first cause\n==ERROR== what followed\n", 1)
    assert first_error == "ncu: first cause"
    assert ncu_failure("result[0]: hal.buffer_view\nit ended badly\n", 3) == "ncu exited with 3: it ended badly"
    assert (
        newest([f"/opt/nvidia/nsight-compute/{v}/ncu" for v in ("2024.1.0", "2025.10.0", "2025.3.1")])
        == "/opt/nvidia/nsight-compute/2025.10.0/ncu"
    )
    monkeypatch.setenv(NCU_ENV, "/nonexistent/ncu")
    path, why = find_ncu()
    assert path is None and why is not None and why.startswith(f"{NCU_ENV}=/nonexistent/ncu: no such executable")


def test_the_command_keeps_the_run_s_clock_and_caches() -> None:
    command = counters_command("/usr/bin/ncu", ["iree-run-module", "--device=cuda"], Path("/s/counters-1"))
    text = " ".join(command)
    assert "--clock-control none --cache-control none" in text
    assert all(f"--section {s}" in text for s in ("SpeedOfLight", "Occupancy", "LaunchStats"))
    assert command[-2:] == ["iree-run-module", "--device=cuda"] and "-o /s/counters-1" in text
    metrics = (NCU / "metrics.txt").read_text().strip().split(",")
    assert set(metrics) < set(METRICS)  # what was captured, plus the tensor path's counters
    assert "sm__ops_path_tensor_src_bf16_dst_fp32.sum" in METRICS


def test_the_call_ncu_wraps_runs_the_module_with_its_inputs_and_parameters(tmp_path: Path) -> None:
    """The part of the command that needs no ncu, run here on the CPU: IREE's iree-run-module making the call
    with the run's inputs as .npy files and its parameter file in the `model` scope."""
    import iree.runtime as rt
    import numpy as np
    from test_params import SCALE_MLIR

    vmfb = compile_module(Path("scale.mlir"), LOCAL_FLAGS, source_bytes=SCALE_MLIR.encode()).vmfb_path
    index = rt.ParameterIndex()
    index.add_buffer("weight", np.arange(1, 9, dtype=np.float32).tobytes())
    archive = tmp_path / "weights.irpa"
    index.create_archive_file(str(archive))
    np.save(tmp_path / "input0.npy", np.full(8, 2.0, dtype=np.float32))
    cpu = DeviceInfo("local-task", "local-task", "CPU", None, (), True, kind="cpu")
    call = one_call_command(vmfb, cpu, "scale", [f"@{tmp_path / 'input0.npy'}"], [archive])
    assert (
        call[1:3] == ["--device=local-task", f"--parameters=model={archive}"]
        and call[-1] == "--output_max_element_count=0"
    )
    done = subprocess.run(call, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    without = subprocess.run(
        [arg for arg in call if not arg.startswith("--parameters")], capture_output=True, text=True
    )
    assert without.returncode != 0  # the parameter flag is what gave the module its weights


# -- joined to the Kernels table --------------------------------------------------------------------------


def h200_snapshot(counters: bool = True) -> RunSnapshot:
    """The H200's real CUPTI profile of demo:mlp (cuda) with the H200's real ncu counters of the same module."""
    report = json.loads(H200_PROFILE.read_text())
    kernels = [{**k, "work_source": k.get("work_source") or "ir"} for k in report["kernels"]]
    profile = value_from_json(ProfileSummary, {**report["profile"], "kernels": kernels})
    measured = CountersPass(
        source=SOURCE, command="ncu ...", wall_s=PASS_WALL_S, calls=1, kernels=tuple(counters_of("mlp").values())
    )
    return RunSnapshot(
        state="running",
        target=report["target"],
        function=report["function"],
        device=value_from_json(DeviceInfo, report["device"]),
        phases=value_from_json(Phases, report["phases"]),
        calls=CallStats(),
        memory=None,
        memory_history=(),
        diagnostics=(),
        events=(),
        session_dir="/tmp/h200",
        profile=with_counters(profile, measured) if counters else profile,
        counters_pass=measured if counters else None,
    )


def test_counters_join_the_kernels_by_name_and_keep_the_estimate() -> None:
    snapshot = h200_snapshot()
    assert snapshot.profile is not None
    kernels = {k.name: k for k in snapshot.profile.kernels}
    assert len(kernels) == 3 and all(k.counters is not None for k in kernels.values())
    first = kernels["mlp_dispatch_0_matmul_256x1024x1024_f32"]
    assert first.work_source == "counters" and first.estimate_source == "ir"
    assert first.flops == first.estimate_flops == 2 * 256 * 1024 * 1024  # measured equals the IR count
    assert first.bytes == 1024 + 512 and first.estimate_bytes == 6_291_456  # DRAM served next to nothing: L2
    assert first.achieved_tflops == pytest.approx(first.flops / first.avg_us / 1e6)  # at the profile's time
    assert first.bound == "compute" and first.pct_peak_compute == pytest.approx(2.80, abs=0.01)
    point = estimate_point(first)
    assert point is not None and point[0] == pytest.approx(first.flops / 6_291_456)
    # A kernel the counters lack keeps its estimate as it was; a profile without counters is unchanged.
    lone = replace(snapshot.profile, kernels=(*snapshot.profile.kernels, replace(first, name="other", counters=None)))
    plain = h200_snapshot(counters=False).profile
    assert with_counters(plain, None) is plain
    joined = with_counters(lone, snapshot.counters_pass)
    assert joined is not None and joined.kernels[-1].counters is None


def test_a_run_with_no_profile_gets_the_counters_own_table() -> None:
    table = summary_from_counters(counters_of("mm2").values(), "cuda:0")
    assert table is not None and table.source == "ncu" and table.calls == 1
    assert [k.name for k in table.kernels] == [
        "mm2_dispatch_1_matmul_256x256x1024_f32",  # the longer one first, as every Kernels table
        "mm2_dispatch_0_matmul_256x1024x1024_f32",
    ]
    device = DeviceInfo("cuda:0", "cuda", "NVIDIA H200", None, ("--iree-hal-target-device=cuda",), True)
    rated = KernelEfficiency(device, ModuleWork({}, source="", reason="no sources"), "NVIDIA H200").annotate(
        table, None, None
    )
    passed = CountersPass(
        source=SOURCE, command="", wall_s=PASS_WALL_S, calls=1, kernels=tuple(counters_of("mm2").values())
    )
    joined = with_counters(rated, passed)
    assert joined is not None
    for kernel in joined.kernels:
        assert kernel.work_source == "counters" and kernel.estimate_source == "name"
        assert kernel.flops == kernel.estimate_flops and kernel.pct_peak_compute is not None


def test_a_recorded_measured_run_opens_as_it_was() -> None:
    """samples.jsonl keeps the counters (gputop open, gputop attach's fallback read them back whole)."""
    snapshot = h200_snapshot()
    assert snapshot_from_json(json.loads(json.dumps(to_json(snapshot)))) == snapshot


def test_the_report_and_its_printout_say_the_pass() -> None:
    snapshot = h200_snapshot()
    report = snapshot_report(snapshot)
    assert report["counters_pass"]["calls"] == 1 and report["counters_pass"]["wall_s"] == PASS_WALL_S
    assert report["counters_pass"]["source"] == SOURCE and report["counters_pass"]["unmatched"] == []
    assert all(k["counters"]["source"] == SOURCE for k in report["kernels"])
    text = run_report({**report, "check": None, "compile": {}, "outputs": [], "phases": {}})
    lines = [line for line in text.splitlines() if "counters" in line or "verdict" in line]
    assert lines[0].startswith(f"counters  {SOURCE}: 1 call in 3.50 s wall"), lines
    assert "1.00x ir" in text and "verdict   mlp_dispatch_0_matmul_256x1024x1024_f32: This kernel grid" in text
    assert "          LaunchConfiguration, est. speedup 75.8% global: The grid for this launch" in text  # dispatch 1
    assert "AchievedOccupancy, est. speedup 75.0% local" in text  # dispatch 0: its rule of most promise


# -- when it cannot run: one line why, on every face ----------------------------------------------------------


def snapshot_on(device: DeviceInfo | None, **changes: object) -> RunSnapshot:
    base = RunSnapshot("running", "demo:mlp", "mlp", device, Phases(), CallStats(), None, (), (), ())
    return replace(base, **changes)  # type: ignore[arg-type]


def test_why_no_counters_says_what_there_is_instead(monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = DeviceInfo("cuda:0", "cuda", "NVIDIA H200", None, (), True)
    vulkan = DeviceInfo("vulkan:0", "vulkan", "NVIDIA H200", None, (), True)
    cpu = DeviceInfo("local-task", "local-task", "AMD EPYC", None, (), True, kind="cpu")
    said = why_no_counters(snapshot_on(vulkan), "iree")
    assert said is not None and "CUDA device" in said and "p, --profile" in said and "c, --capture" in said
    said = why_no_counters(snapshot_on(cpu), "iree")
    assert said is not None and "the CPU (local-task)" in said and "p, --profile" in said and "capture" not in said
    assert "OpenCL" in (why_no_counters(snapshot_on(cpu), "opencl") or "")
    assert "multi-device" in (why_no_counters(snapshot_on(cuda), "tool") or "")
    assert why_no_counters(snapshot_on(cuda, state="finished"), "iree") == "nothing to measure while finished"
    assert why_no_counters(snapshot_on(cuda, counting=True), "iree") == "a counters pass is already running"
    assert why_no_counters(snapshot_on(cuda), "iree", PERMISSION) == PERMISSION  # met once: said again at once
    monkeypatch.setenv(NCU_ENV, "/nonexistent/ncu")
    assert (why_no_counters(snapshot_on(cuda), "iree") or "").startswith(f"{NCU_ENV}=/nonexistent/ncu")


def test_a_pass_that_finds_no_ncu_says_so_on_its_own_thread(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The runner's own path (the pass itself, not its refusal): ncu gone between the request and the pass."""
    monkeypatch.setenv(NCU_ENV, "/nonexistent/ncu")
    config = RunConfig(target="demo:mlp", session_dir=tmp_path)
    writer = SessionWriter(tmp_path, to_json(config))
    state = RunState(config.target, tmp_path, writer)
    ctx = RunContext(config, state, Controls(), tmp_path)
    cuda = DeviceInfo("cuda:0", "cuda", "NVIDIA H200", None, ("--iree-hal-target-device=cuda",), True)
    vmfb = tmp_path / "mlp_cuda.vmfb"
    runner = CountersRunner(ctx, cuda, vmfb, ProfilePasses(ctx, [cuda], vmfb).rate_alone)
    try:
        runner.start("mlp", ["@in0.npy"])
        assert runner.wait(60)
        snapshot = state.snapshot
        assert not snapshot.counting and snapshot.counters_pass is not None
        assert (snapshot.counters_pass.error or "").startswith(f"{NCU_ENV}=/nonexistent/ncu: no such executable")
        assert snapshot.counters_pass.kernels == () and snapshot.profile is None
        warnings = [e.message for e in snapshot.events if e.level == "warning"]
        assert warnings == [f"counters: {snapshot.counters_pass.error}"]
        assert runner.refusal is None  # ncu may come back: the next pass looks again
    finally:
        writer.close(None, state="stopped", exit_code=0, published=state.published)


def test_gputop_run_counters_on_the_cpu_says_why_and_exits_as_profile_does(opencl_device: str) -> None:
    """The `--profile` flag's refusal (an OpenCL run: its kernels are timed every call) is a warning, exit 0;
    `--counters` refused answers the same way: one line on stderr, the reason in the report, exit 0."""
    profiled = run_gputop("run", "demo:opencl-chain", "--device", opencl_device, "-n", "2", "--profile")
    assert profiled.returncode == 0 and profiled.stderr.count("gputop: profile: ") == 1, profiled.stderr
    counted = run_gputop("run", "demo:opencl-chain", "--device", opencl_device, "-n", "2", "--counters")
    assert counted.returncode == profiled.returncode
    assert counted.stderr.count("gputop: counters: ") == 1 and "OpenCL" in counted.stderr, counted.stderr
    proc, report = run_json("demo:mlp", "--device", "local-task", "-n", "2", "--counters")
    assert proc.returncode == 0 and report["exit_code"] == 0
    said = report["counters_pass"]["error"]
    assert said.startswith("hardware counters need Nsight Compute and a CUDA device") and "local-task" in said
    assert report["counters_pass"]["calls"] == 0 and all(k.get("counters") is None for k in report["kernels"])
    text = run_gputop("run", "demo:mlp", "--device", "local-task", "-n", "2", "--counters")
    assert text.returncode == 0 and text.stderr.count("gputop: counters: ") == 1
    assert [line for line in text.stdout.splitlines() if line.startswith("counters")] == [
        f"counters  not taken: {said}"
    ]


def test_the_control_request_answers_with_the_same_reason() -> None:
    """What `gputop attach`, `gputop serve`'s viewers and the TUI's own engine get for `n` over control.sock."""
    session = Session(RunConfig(target="demo:mlp", device="local-task", iterations=None))
    session.start()
    try:
        for _ in range(600):
            if session.snapshot.state == "running" or session.done:
                break
            session.wait(0.1)
        assert session.snapshot.state == "running", session.snapshot.error
        reply = answer(session, {"op": "counters"})
        assert reply["ok"] is False and reply["reason"] == session.request_counters()
        assert reply["reason"].startswith("hardware counters need Nsight Compute") and "local-task" in reply["reason"]
    finally:
        session.stop()
        session.wait(60)


async def test_n_in_the_tui_on_the_cpu_says_why() -> None:
    from tui_pilot import calls, live_app

    app = live_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 0)
        await pilot.press("n")

        def said() -> list[str]:
            return [m for m in app.query_one("LogPane").messages if "counters:" in m]  # type: ignore[attr-defined]

        await wait_for(pilot, said, timeout=30)
        await pilot.pause(0.3)  # and nothing more said of it
        lines = said()
        assert len(lines) == 1 and "hardware counters need Nsight Compute" in lines[0], lines
        assert "the CPU (local-task)" in lines[0]
        assert app.query_one(KernelsPane).has_class("front")  # as p does, n brings Kernels forward


@pytest.mark.skipif(nvml.nvml_unavailable_reason() is not None, reason="needs an NVIDIA GPU with NVML")
@pytest.mark.skipif(find_ncu()[0] is None, reason="needs Nsight Compute (ncu)")
def test_a_counters_pass_on_the_gpu_measures_every_kernel() -> None:
    """H100/H200 (bench/gpu/counters.sh runs it): demo:mlp on CUDA, profiled and counted; FLOPs as the names say."""
    proc, report = run_json(*cuda_mlp(), "-n", "5", "--profile", "--counters")
    assert proc.returncode == 0, proc.stderr
    counters = report["counters_pass"]
    assert counters["error"] is None and counters["calls"] == 1 and counters["wall_s"] > 0, counters
    assert counters["source"].startswith("ncu 20") and counters["unmatched"] == []
    assert len(report["kernels"]) == 3
    for kernel in report["kernels"]:
        measured = kernel["counters"]
        assert measured["source"] == counters["source"] and measured["verdict"], kernel["name"]
        assert measured["flops"] == matmul_flops(kernel["name"]) == kernel["estimate_flops"], kernel["name"]
        assert kernel["work_source"] == "counters" and measured["time_us"] > 0 and measured["sm_mhz"] > 0


# -- what the faces draw of a measured run ------------------------------------------------------------------------


async def test_the_kernels_pane_shows_what_was_measured_at_80x24() -> None:
    app = GputopApp(ReplaySource([h200_snapshot()]))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.5)
        await pilot.press("3")
        table = app.query_one("#kernels-table")
        await wait_for(pilot, lambda: table.row_count == 3, timeout=5.0)  # type: ignore[attr-defined]
        shown = table.shown  # type: ignore[attr-defined]
        # What was measured comes before the spread; the kernel's `from` before both (DRAM gives way at 80 columns).
        assert {"kernel", "from", "avg", "FLOP", "vs est", "occ"} <= set(shown) and "min" not in shown, shown
        cells = table.row_cells("mlp_dispatch_0_matmul_256x1024x1024_f32")  # type: ignore[attr-defined]
        assert (cells["FLOP"], cells["vs est"], cells["occ"], cells["DRAM"]) == ("537", "1.00x", "12%", "1.54"), cells
        # (row_cells has every column, shown or not: DRAM's figure is kept for the wider layouts)
        verdict = str(app.query_one("#kernels-verdict").render())
        assert verdict.startswith("ncu on ") and "grid is too small" in verdict
        summary = str(app.query_one("#kernels-summary").render())
        assert f"counters {SOURCE}: 1 call, 3.50 s; rates measured" in summary
        pane = app.query_one(KernelsPane)
        assert pane.region.bottom <= 24 - 1  # above the footer


def test_the_roofline_draws_the_measured_point_beside_the_estimate() -> None:
    snapshot = h200_snapshot()
    chart = render_roofline(snapshot.profile, 110, 34, "mlp", snapshot.counters_pass)
    styles = {str(span.style) for span in chart.spans}
    assert "bold green" in styles and "dim yellow" in styles
    text = chart.plain
    assert f"measured ({SOURCE}: FLOPs, DRAM bytes)" in text and "est. 85.3 FLOP/B (ir), FLOPs 1.00x of it" in text
    plain = render_roofline(h200_snapshot(counters=False).profile, 110, 34, "mlp")
    assert "bold green" not in {str(span.style) for span in plain.spans}
