"""Device affinity of every argument and result, and multi-device runs on local:0,local:1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import assert_one_line_error, run_gputop, run_json
from gputop.core.module.targets import LOCAL_FLAGS
from gputop.core.multidevice.affinity import affinity_flags, analyse

TWO_LOCAL = affinity_flags(["local:0", "local:1"], [LOCAL_FLAGS, LOCAL_FLAGS])


def by_key(records: list[dict]) -> dict[tuple[str, int], dict]:
    return {(r["kind"], r["index"]): r for r in records}


def test_flags_name_devices_in_order() -> None:
    assert TWO_LOCAL[:2] == (
        "--iree-hal-target-device=device_a=local[0]",
        "--iree-hal-target-device=device_b=local[1]",
    )


def test_pipeline_runs_on_two_devices_with_two_affinities() -> None:
    proc, report = run_json("demo:pipeline", "--devices", "local:0,local:1", "-n", "2")
    assert proc.returncode == 0, proc.stderr
    assert report["check"]["passed"]
    records = by_key(report["exports"])
    assert {r["export_affinity"] for r in records.values()} == {"device_a", "device_b"}
    assert records[("result", 0)]["export_affinity"] == records[("result", 0)]["producer_affinity"] == "device_b"
    assert all(r["flag"] is None for r in records.values())
    assert report["device_names"] == {"device_a": "local-task:0", "device_b": "local-task:1"}
    # The intermediate (256x512 f32) moves from device_a to device_b.
    assert any(t["source"] == "device_a" and t["target"] == "device_b" and t["bytes"] == 256 * 512 * 4
               for t in report["transfers"])  # fmt: skip
    # ... and one profiled call (iree-benchmark-module, HAL queue events) copied exactly that.
    assert [t["observed_bytes"] for t in report["transfers"]] == [256 * 512 * 4]
    assert all(r["observed_transfer_bytes"] == 0 for r in records.values())
    assert [d["device_id"] for d in report["memory"]["devices"]] == ["local-task:0", "local-task:1"]


def test_hidden_transfer_is_flagged_on_exactly_that_result() -> None:
    proc, report = run_json("demo:hidden-transfer", "--devices", "local:0,local:1", "-n", "1")
    assert proc.returncode == 0, proc.stderr
    assert report["check"]["passed"]
    records = by_key(report["exports"])
    hidden = [r for r in records.values() if r["flag"] == "hidden_transfer"]
    assert [(r["kind"], r["index"]) for r in hidden] == [("result", 0)]
    result = records[("result", 0)]
    assert (result["declared"], result["export_affinity"], result["producer_affinity"]) == (
        "device_a",
        "device_a",
        "device_b",
    )
    assert result["transfer_bytes"] == 256 * 256 * 4
    # The argument pinned to device_a is consumed on device_b: a transfer with its byte count.
    argument = records[("argument", 0)]
    assert argument["flag"] == "transfer" and argument["transfer_bytes"] == 256 * 512 * 4
    assert argument["producer_affinity"] == "device_b"
    # The runtime cross-check: device_b's copy of x ran; the export hands the result over, no copy runs.
    assert argument["observed_transfer_bytes"] == 256 * 512 * 4
    assert result["observed_transfer_bytes"] is None


def test_undeclared_results_are_reported_as_undeclared(tmp_path: Path) -> None:
    source = tmp_path / "undeclared.mlir"
    source.write_text(
        """
func.func @f(%x: tensor<64x64xf32> {iree.abi.affinity = #hal.device.promise<@device_b>}) -> tensor<64x64xf32> {
  %y = arith.addf %x, %x : tensor<64x64xf32>
  return %y : tensor<64x64xf32>
}
"""
    )
    records, _ = analyse(source, TWO_LOCAL, tmp_path / "out")
    [result] = [r for r in records if r.kind == "result"]
    assert result.declared is None and result.flag == "undeclared"
    # IREE 3.13 exports an undeclared result where it was produced.
    assert result.export_affinity == "device_b" == result.producer_affinity


def test_single_device_module_exports_everything_on_its_device(tmp_path: Path) -> None:
    from gputop.core.module.demos import DEMOS

    records, transfers = analyse(Path("mlp.mlir"), LOCAL_FLAGS, tmp_path, source_bytes=DEMOS["mlp"].source())
    assert len(records) == 5 and not transfers
    assert {r.export_affinity for r in records} == {"__device_0"}
    assert {r.producer_affinity for r in records if r.kind == "result"} == {"__device_0"}


def test_affinity_command_table_and_json() -> None:
    proc = run_gputop("affinity", "demo:hidden-transfer", "--devices", "local:0,local:1", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    keys = {"function", "kind", "index", "declared", "export_affinity", "producer_affinity", "transfer_bytes", "flag",
            "observed_transfer_bytes"}  # fmt: skip
    assert all(keys <= r.keys() for r in data["exports"])
    assert all({"source", "target", "bytes", "op", "observed_bytes"} <= t.keys() for t in data["transfers"])
    assert data["observation"]["observed"] and data["observation"]["unexplained_copies"] == []
    text = run_gputop("affinity", "demo:hidden-transfer", "--devices", "local:0,local:1").stdout
    assert "HIDDEN TRANSFER" in text and "device_b (local:1)" in text and "OBSERVED" in text
    assert "observed 524288 bytes" in text
    # Devices this machine lacks still compile for their backend's target; nothing is observed.
    proc = run_gputop("affinity", "demo:pipeline", "--devices", "cuda:0,cuda:1", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["flags"][0] == "--iree-hal-target-device=device_a=cuda[0]"
    assert not data["observation"]["observed"] and data["observation"]["notes"][0].startswith("not observed:")
    assert all(r["observed_transfer_bytes"] is None for r in data["exports"])


def test_affinity_static_skips_the_profiled_call() -> None:
    proc = run_gputop("affinity", "demo:pipeline", "--devices", "local:0,local:1", "--static", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["observation"] == {"observed": False, "notes": ["not observed: --static"]}
    assert [t["observed_bytes"] for t in data["transfers"]] == [None]
    assert all(r["observed_transfer_bytes"] is None for r in data["exports"])


def test_exports_pane_shows_the_observed_bytes() -> None:
    from gputop.core.session import RunConfig, Session
    from gputop.tui.panes.exports import export_rows

    session = Session(RunConfig(target="demo:hidden-transfer", devices=("local:0", "local:1"), iterations=1))
    session.start()
    assert session.wait(600) and session.error is None, session.error
    rows = export_rows(session.snapshot)
    messages = [e.message for e in session.snapshot.events]
    assert "transfers observed: one profiled call copied 524288 bytes in 1 copy on device_b" in messages
    assert not any("did not plan" in m or "transfers not observed" in m for m in messages)
    argument, result = rows["hidden_transfer/argument/0"], rows["hidden_transfer/result/0"]
    assert str(argument[3]) == "moved between devices 512.0 KiB (seen 512.0 KiB)"
    assert str(result[3]) == "! hidden transfer 256.0 KiB"  # an export hands it over: no profile sees it
    assert (argument[1], argument[2]) == ("local-task:0", "local-task:1")


def test_malformed_affinity_attribute(tmp_path: Path) -> None:
    source = tmp_path / "bad_affinity.mlir"
    source.write_text(
        """
func.func @f(%x: tensor<4xf32> {iree.abi.affinity = #hal.device.promise<@device_z>}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
"""
    )
    proc = run_gputop("affinity", str(source), "--devices", "local:0,local:1")
    assert_one_line_error(proc, 2, "f argument 0 is pinned to device_z", "device_a, device_b")
    source.write_text(source.read_text().replace("<@device_z>", "<device_a>"))
    proc = run_gputop("affinity", str(source), "--devices", "local:0,local:1")
    assert_one_line_error(proc, 3, "bad_affinity.mlir")


def test_two_vulkan_devices_run_through_the_shipped_tools(vulkan_device: str) -> None:
    # In one Python process IREE 3.13 refuses two Vulkan devices; gputop drives iree-run-module instead.
    proc, report = run_json("demo:pipeline", "--devices", f"{vulkan_device},{vulkan_device}", "-n", "2")
    assert proc.returncode == 0, proc.stderr
    assert report["check"]["passed"] and report["calls"]["count"] == 2
    assert {r["export_affinity"] for r in report["exports"]} == {"device_a", "device_b"}


@pytest.mark.parametrize("devices", ["local:0", "local:0,"])
def test_devices_needs_two(devices: str) -> None:
    assert_one_line_error(run_gputop("run", "demo:pipeline", "--devices", devices), 2, "two or more devices")


def test_affinity_without_the_compiler_is_one_line() -> None:
    # The GPU machines carry IREE's runtime but not its compiler: the analysis says so, no traceback.
    code = (
        "import sys; sys.modules['iree.compiler'] = None\n"
        "from gputop.tui.cli import main\n"
        "sys.argv = ['gputop', 'affinity', 'demo:hidden-transfer', '--devices', 'cuda:0,cuda:1']\n"
        "sys.exit(main())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert_one_line_error(proc, 3, "affinity analysis needs IREE's compiler (iree-base-compiler)")


CORPUS = Path(__file__).parent / "data" / "affinity"


def test_static_analysis_refuses_devices_the_flags_do_not_declare() -> None:
    """IREE's own test names (@dev_a): iree-compile prints errors yet exits 0; gputop fails with one line."""
    source = CORPUS / "refused" / "wrong_device_names.mlir"
    proc = run_gputop("affinity", str(source), "--devices", "local:0,local:1", "--static", "--json", "-")
    line = assert_one_line_error(proc, 3, "promised device that was not declared", "@dev_a")
    assert "--devices provides device_a, device_b" in line
    assert proc.stdout == ""  # no table of devices that do not exist


def _crashing_compiler(folder: Path) -> dict[str, str]:
    """An `iree-compile` that runs the real one for the stream phase and dies of SIGSEGV on the full
    compile unless given --iree-opt-const-eval=false (as one of IREE's crashes does)."""
    from gputop.core.module.compile import find_compiler

    tool = folder / "bin" / "iree-compile"
    tool.parent.mkdir()
    tool.write_text(
        "#!/bin/sh\n"
        'case "$*" in *--compile-to=stream*|*--iree-opt-const-eval=false*) '
        f'exec {find_compiler()} "$@";; esac\n'
        "kill -SEGV $$\n"
    )
    tool.chmod(0o755)
    return {"IREE_TOOL_PATH": str(tool.parent), "GPUTOP_CACHE_DIR": str(folder / "cache")}


def test_a_crash_of_the_full_compile_keeps_the_static_table(tmp_path: Path) -> None:
    env = _crashing_compiler(tmp_path)
    source = str(CORPUS / "transfer_export.mlir")
    proc = run_gputop("affinity", source, "--devices", "local:0,local:1", "--json", "-", env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [r["flag"] for r in data["exports"]] == [None, "transfer"]  # the table the stream phase gave
    assert data["observation"]["observed"] is False
    [note] = data["observation"]["notes"]
    assert note.startswith("not observed: the compiler crashed (signal 11)") and "--static" in note, note
    # The flag that avoids the crash reaches both compiles.
    proc = run_gputop(
        "affinity", source, "--devices", "local:0,local:1", "--compile-flag=--iree-opt-const-eval=false",
        "--json", "-", env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["observation"]["observed"] is True
    assert "--iree-opt-const-eval=false" in data["flags"]
    assert [r["observed_transfer_bytes"] for r in data["exports"]] == [0, 16384]


def test_a_crash_of_the_stream_phase_says_signal(tmp_path: Path) -> None:
    env = _crashing_compiler(tmp_path)
    tool = Path(env["IREE_TOOL_PATH"]) / "iree-compile"
    tool.write_text("#!/bin/sh\nkill -SEGV $$\n")
    proc = run_gputop("affinity", str(CORPUS / "transfer_export.mlir"), "--devices", "local:0,local:1", env=env)
    assert_one_line_error(proc, 3, "the compiler crashed (signal 11)")


ARGUMENTS = CORPUS / "arguments"


def _iree_run_module(source: Path, tmp_path: Path, *inputs: str) -> str:
    """What IREE's own iree-run-module prints for the same module on two local-task devices."""
    from gputop.core.module.compile import compile_module
    from gputop.core.profiling.ireeprof.tools import runtime_tool

    vmfb = compile_module(source, TWO_LOCAL, log_dir=tmp_path).vmfb_path
    proc = subprocess.run(
        [runtime_tool("iree-run-module"), f"--module={vmfb}", "--device=local-task", "--device=local-task",
         *(f"--input={value}" for value in inputs)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("flag", ["true", "True", "1", "i1=1"])
def test_scalar_arguments_of_every_width(flag: str, tmp_path: Path) -> None:
    """i32, i64, f32 and i1 scalars beside a tensor: gputop computes what iree-run-module prints."""
    source = ARGUMENTS / "scalars.mlir"
    proc, report = run_json(
        str(source), "--devices", "local:0,local:1", "-n", "1",
        "-i", "4xf32=1,2,3,4", "-i", "3", "-i", "i64=4", "-i", "0.5", "-i", flag,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    tensor, total = report["outputs"]
    assert (tensor["min"], tensor["max"], tensor["mean"]) == (7.5, 9.0, 8.25)  # x * 0.5 + 3 + 4
    assert (total["dtype"], total["shape"], total["mean"]) == ("int64", [], 7.0)
    # iree-run-module takes the i1 as an i32 (it refuses `true`): the same numbers.
    printed = _iree_run_module(source, tmp_path, "4xf32=1,2,3,4", "3", "4", "0.5", "1")
    assert "4xf32=7.5 8 8.5 9" in printed and "i64=7" in printed
    assert [r["kind"] for r in report["exports"]] == ["argument", "result"]  # scalars never cross devices


def test_scalar_arguments_random_and_refused() -> None:
    source = str(ARGUMENTS / "scalars.mlir")
    proc, report = run_json(source, "--devices", "local:0,local:1", "-n", "1")  # random scalars, seed 0
    assert proc.returncode == 0, proc.stderr
    assert [i["dtype"] for i in report["inputs"]] == ["float32", "int32", "int64", "float32", "bool"]
    base = ("run", source, "--devices", "local:0,local:1", "-n", "1", "-i", "4xf32=1", "-i", "3", "-i", "4")
    proc = run_gputop(*base, "-i", "0.5", "-i", "maybe")
    assert_one_line_error(proc, 2, "scalars argument 4 is an i1: give 0, 1, true or false")
    proc = run_gputop(*base, "-i", "i32=0.5", "-i", "1")
    assert_one_line_error(proc, 2, "scalars argument 3 is a scalar f32")
    proc = run_gputop(*base[:-2], "-i", "1.5", "-i", "0.5", "-i", "1")
    assert_one_line_error(proc, 2, "i64 takes whole numbers")


def test_a_buffer_view_argument_runs_as_iree_run_module_runs_it(tmp_path: Path) -> None:
    import numpy as np

    source = ARGUMENTS / "buffer_view.mlir"
    assert "4xi32=3 5 7 9" in _iree_run_module(source, tmp_path, "4xi32=1,2,3,4")
    expected = tmp_path / "expected.npy"
    np.save(expected, np.array([3, 5, 7, 9], np.int32))
    proc, report = run_json(
        str(source), "--devices", "local:0,local:1", "-n", "1", "-i", "4xi32=1,2,3,4", "--check", str(expected)
    )
    assert proc.returncode == 0, proc.stderr
    assert report["check"]["passed"]
    # Its argument is declared by the pin on its hal.tensor.import, its result by the pin on its export.
    assert [(r["kind"], r["declared"], r["flag"]) for r in report["exports"]] == [
        ("argument", "device_a", None),
        ("result", "device_a", None),
    ]
    proc = run_gputop("run", str(source), "--devices", "local:0,local:1", "-n", "1")
    assert_one_line_error(proc, 2, "buffer_view argument 0 is a !hal.buffer_view", "give it with --input")


def test_buffer_and_fence_arguments_are_refused_in_one_line() -> None:
    source = str(CORPUS / "refused" / "aliased_storage.mlir")
    proc = run_gputop("run", source, "--devices", "local:0,local:1", "-n", "1", "-i", "4xi32=1", "-i", "4xi32=0")
    assert_one_line_error(proc, 2, "aliased_storage argument 1 is a !hal.buffer")


RECORDED = Path(__file__).parent.parent / "bench" / "results" / "h100x2-2026-11-25" / "issue35" / "run-logs"


@pytest.mark.parametrize(
    ("log", "expected"),
    [
        ("pipeline_cuda2_pipeline_run.log", "INVALID_ARGUMENT; while invoking native function hal.device.queue.deall"),
        ("fan_out_cuda2_fan_out_run.log", "INVALID_ARGUMENT; while invoking native function hal.device.queue.alloca"),
        ("passthrough_cuda2_passthrough_run.log", "INVALID_ARGUMENT; in @passthrough"),
    ],
)
def test_a_failed_tool_call_is_told_in_one_short_line(log: str, expected: str) -> None:
    """iree-run-module's output on two real H100s (recorded): the status line, never the signature or backtrace."""
    from gputop.core.runners.tool_runner import tool_status

    text = (RECORDED / log).read_text()
    output = text.split("\n", 2)[2]  # the recorded command and its timing line come first
    status = tool_status(output)
    assert status.startswith(expected), status
    assert "\n" not in status and len(status) < 160 and "tensor<" not in status


def test_the_plan_carries_the_analysis_to_a_machine_without_the_compiler(tmp_path: Path) -> None:
    """`to_plan` / `from_plan` (bench/prepare_two_gpu_bundle.py writes it, the GPU machines read it): through JSON
    the same records, transfers and planned copies come back, so the copies match there as here."""
    from dataclasses import replace

    from gputop.core.module.demos import DEMOS
    from gputop.core.multidevice.affinity import FunctionAffinity, analyse_module

    [function] = analyse_module(
        Path("hidden-transfer.mlir"), TWO_LOCAL, tmp_path, source_bytes=DEMOS["hidden-transfer"].source()
    ).functions
    back = FunctionAffinity.from_plan(json.loads(json.dumps(function.to_plan())))
    assert not any(function.sizes)  # static sizes: the plan leaves out only formulas, of which there are none
    assert back == replace(function, sizes=())
