"""RenderDoc: the in-application binding, lavapipe's baseline failure, and capture files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import assert_one_line_error, run_gputop, run_json

FIXTURE = Path(__file__).parent / "data" / "scale_vulkan_h200.rdc"  # made by gputop on an H200


def renderdoc_or_skip() -> None:
    if not Path("/usr/lib/librenderdoc.so").exists():
        pytest.skip("RenderDoc is not installed (apt-get install librenderdoc renderdoccmd)")


def test_binding_reports_api_1_6_0() -> None:
    renderdoc_or_skip()
    # In a child process: loading RenderDoc changes how that process creates Vulkan instances.
    code = "from gputop.core.renderdoc import load_renderdoc; r = load_renderdoc(); print(r.version, r.attached)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "(1, 6, 0) False"


def test_lavapipe_baseline_is_explained_and_auto_runs_on(vulkan_device: str) -> None:
    renderdoc_or_skip()
    proc, report = run_json("demo:mlp", "--device", vulkan_device, "-n", "1", "--capture", "1")
    assert proc.returncode == 0, proc.stderr
    assert report["check"]["passed"] and report["captures"] == []
    assert "Vulkan 1.3 baseline" in report["renderdoc"]
    assert "bufferDeviceAddressCaptureReplay" in report["renderdoc"]


def test_renderdoc_on_fails_clearly_on_lavapipe(vulkan_device: str) -> None:
    renderdoc_or_skip()
    proc = run_gputop("run", "demo:mlp", "--device", vulkan_device, "--renderdoc", "on", "-n", "1")
    assert_one_line_error(proc, 4, "RenderDoc cannot capture here", "baseline")


def test_capture_info_on_a_real_capture() -> None:
    if not Path("/usr/bin/renderdoccmd").exists():
        pytest.skip("renderdoccmd is not installed")
    proc = run_gputop("capture-info", str(FIXTURE), "--json", "-")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    # The fixture captured one call of the one-dispatch `scale` module (tests/test_params.py).
    assert info["dispatches"] == 1 and info["api"] == "Vulkan"
    assert info["dispatch_names"] == ["scale_dispatch_0_elementwise_8_f32"]
    assert info["bytes"] == FIXTURE.stat().st_size


def test_truncated_and_foreign_files(tmp_path: Path) -> None:
    if not Path("/usr/bin/renderdoccmd").exists():
        pytest.skip("renderdoccmd is not installed")
    cut = tmp_path / "cut.rdc"
    cut.write_bytes(FIXTURE.read_bytes()[: FIXTURE.stat().st_size // 2])
    assert_one_line_error(run_gputop("capture-info", str(cut)), 5, "cut.rdc")
    foreign = tmp_path / "photo.rdc"
    foreign.write_bytes(b"\x89PNG" + bytes(500))
    assert_one_line_error(run_gputop("capture-info", str(foreign)), 5, "not a RenderDoc capture")
    assert_one_line_error(run_gputop("capture-info", str(tmp_path / "absent.rdc")), 2, "no such file")


def test_capture_on_a_cpu_run_says_why() -> None:
    proc, report = run_json("demo:mlp", "--device", "cpu", "-n", "1", "--capture", "1")
    assert proc.returncode == 0
    assert report["captures"] == [] and "not on Vulkan" in report["renderdoc"]
