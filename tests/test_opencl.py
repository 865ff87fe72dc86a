"""OpenCL run specs on PoCL: results, device-timed kernels, enqueue vs synced time, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import assert_one_line_error, run_gputop, run_json

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "opencl"

pytestmark = pytest.mark.usefixtures("opencl_device")


@pytest.mark.parametrize("spec", ["saxpy.toml", "reduction.toml"])
def test_example_specs_are_correct_and_timed(spec: str, opencl_device: str) -> None:
    proc, report = run_json(str(EXAMPLES / spec), "--device", opencl_device, "-n", "3")
    assert proc.returncode == 0, proc.stderr
    assert report["check"]["passed"], report["check"]
    [kernel] = report["kernels"]
    assert kernel["source"] == "opencl" and kernel["count"] == 3
    assert 0 < kernel["min_us"] <= kernel["max_us"]
    assert report["device"]["id"] == opencl_device
    [memory] = report["memory"]["devices"]
    assert memory["pools"][0]["live_bytes"] > 0


def test_enqueue_returns_before_the_work_is_done(opencl_device: str) -> None:
    proc, report = run_json(str(EXAMPLES / "saxpy.toml"), "--device", opencl_device, "-n", "3")
    assert proc.returncode == 0, proc.stderr
    # 16M floats: the enqueue returns long before the synced call ends.
    assert report["enqueue"]["p50_ms"] < report["calls"]["p50_ms"]
    assert report["enqueue"]["count"] == report["calls"]["count"] == 3


def test_chain_demo_reports_the_three_timings(opencl_device: str) -> None:
    proc, report = run_json("demo:opencl-chain", "--device", opencl_device, "-n", "2")
    assert proc.returncode == 0, proc.stderr
    stages = report["stages"]
    for key in ("a_synced_ms", "b_synced_ms", "a_then_b_synced_ms", "a_kernel_ms", "b_kernel_ms"):
        assert stages[key] > 0
    # A is the heavy stage; timed without a sync, its work shows up in B's time.
    assert stages["a_kernel_ms"] > stages["b_kernel_ms"]
    assert stages["a_enqueue_only_ms"] < stages["a_synced_ms"]
    assert stages["b_after_unsynced_a_ms"] > stages["b_synced_ms"]
    assert {k["name"] for k in report["kernels"]} == {"stage_a", "stage_b"}


def write_spec(tmp_path: Path, source: str, kernel_args: str, extra: str = "", shape: int = 1024) -> Path:
    (tmp_path / "k.cl").write_text(source)
    spec = tmp_path / "spec.toml"
    spec.write_text(
        f"""
source = "k.cl"
[[buffers]]
name = "a"
shape = [{shape}]
init = "ones"
[[kernels]]
name = "k"
args = {kernel_args}
global_size = [1024]
{extra}
"""
    )
    return spec


def test_build_error_shows_the_line(tmp_path: Path, opencl_device: str) -> None:
    spec = write_spec(tmp_path, "__kernel void k(__global float* a) {\n  a[0] = undefined_name;\n}\n", '["a"]')
    proc = run_gputop("run", str(spec), "--device", opencl_device)
    line = assert_one_line_error(proc, 3, "k.cl:2:")
    assert "undefined_name" in line and "full log:" in line


def test_wrong_argument_count(tmp_path: Path, opencl_device: str) -> None:
    spec = write_spec(tmp_path, "__kernel void k(__global float* a, const float b) { a[0] = b; }", '["a"]')
    proc = run_gputop("run", str(spec), "--device", opencl_device)
    assert_one_line_error(proc, 2, "takes 2 arguments, the spec gives 1")


def test_buffer_too_large(tmp_path: Path, opencl_device: str) -> None:
    spec = write_spec(tmp_path, "__kernel void k(__global float* a) { a[0] = 1; }", '["a"]', shape=2**40)
    proc = run_gputop("run", str(spec), "--device", opencl_device)
    assert_one_line_error(proc, 2, "buffer a needs")


def test_bad_spec_fields(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "__kernel void k(__global float* a) { }", '["nope"]')
    proc = run_gputop("run", str(spec))
    assert_one_line_error(proc, 2, "no buffer named 'nope'")
    broken = tmp_path / "broken.toml"
    broken.write_text("source = [unterminated")
    assert_one_line_error(run_gputop("run", str(broken)), 2, "not valid TOML")


def test_opencl_spec_needs_an_opencl_device(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "__kernel void k(__global float* a) { a[0] = 1; }", '["a"]')
    proc = run_gputop("run", str(spec), "--device", "local-task")
    assert_one_line_error(proc, 2, "OpenCL run specs run on opencl:N devices")
