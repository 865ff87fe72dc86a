"""RenderDoc: the in-application binding, lavapipe's baseline failure, and capture files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import assert_one_line_error, run_gputop, run_json

FIXTURE = Path(__file__).parent / "data" / "scale_vulkan_h200.rdc"  # made by gputop on an H200
# Hand-written Vulkan compute captured on lavapipe (tests/data/lavapipe_compute/): it replays here.
LAVAPIPE = Path(__file__).parent / "data" / "lavapipe_compute.rdc"


def module_or_skip() -> None:
    proc = (
        subprocess.run(["/usr/bin/python3.11", "-c", "import renderdoc"], capture_output=True, text=True, check=False)
        if Path("/usr/bin/python3.11").exists()
        else None
    )
    if proc is None or proc.returncode != 0:
        pytest.skip("RenderDoc's Python module is not installed (apt-get install python3-renderdoc)")


def renderdoc_or_skip() -> None:
    if not Path("/usr/lib/librenderdoc.so").exists():
        pytest.skip("RenderDoc is not installed (apt-get install librenderdoc renderdoccmd)")


def test_binding_reports_api_1_6_0() -> None:
    renderdoc_or_skip()
    # In a child process: loading RenderDoc changes how that process creates Vulkan instances.
    code = "from gputop.core.renderdoc.in_app import load_renderdoc; r = load_renderdoc(); print(r.version, r.attached)"
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
    module_or_skip()
    proc = run_gputop("capture-info", str(FIXTURE), "--json", "-")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    # The fixture captured one call of the one-dispatch `scale` module (tests/test_params.py):
    # tensor<8xf32> in, a scalar, tensor<8xf32> out, so three bindings of 8 x 4 bytes, one workgroup.
    assert info["dispatches"] == 1 and info["api"] == "Vulkan"
    assert info["dispatch_names"] == ["scale_dispatch_0_elementwise_8_f32"]
    assert info["bytes"] == FIXTURE.stat().st_size
    assert info["reader"].startswith("renderdoc 1.24 module") and info["reader_note"] is None
    assert info["captured_on"].startswith("NVIDIA H200 (NVIDIA, driver 580.")
    [dispatch] = info["dispatch_list"]
    assert {"index", "name", "workgroup_count", "buffers"} <= dispatch.keys()
    assert dispatch["index"] == 0 and dispatch["name"] == "scale_dispatch_0_elementwise_8_f32"
    assert dispatch["workgroup_count"] == [1, 1, 1]
    assert [(b["binding"], b["bytes"]) for b in dispatch["buffers"]] == [(0, 32), (1, 32), (2, 32)]
    # IREE suballocates one 64 MiB arena: the three slices sit in one VkBuffer at different offsets.
    assert {b["buffer_bytes"] for b in dispatch["buffers"]} == {64 << 20}
    assert sorted(b["offset"] for b in dispatch["buffers"]) == [0, 256, 512]
    assert "vkCmdDispatch 1x1x1 scale_dispatch_0_elementwise_8_f32" in info["actions"]


def test_the_module_and_renderdoccmd_agree(tmp_path: Path) -> None:
    """Two readers of the same file: RenderDoc's Python module and `renderdoccmd convert` (XML)."""
    module_or_skip()
    if not Path("/usr/bin/renderdoccmd").exists():
        pytest.skip("renderdoccmd is not installed")
    for capture in (FIXTURE, LAVAPIPE):
        by_module = json.loads(run_gputop("capture-info", str(capture), "--no-replay", "--json", "-").stdout)
        empty = tmp_path / "no-module-here"
        empty.mkdir(exist_ok=True)
        env = {"GPUTOP_RENDERDOC_PYTHON": sys.executable, "GPUTOP_RENDERDOC_PYTHONPATH": str(empty)}
        by_tool = json.loads(run_gputop("capture-info", str(capture), "--no-replay", "--json", "-", env=env).stdout)
        assert by_tool["reader"] == "renderdoccmd" and by_module["reader"] != "renderdoccmd"
        assert by_module["dispatches"] == by_tool["dispatches"] == len(by_module["dispatch_list"])
        assert by_module["dispatch_names"] == by_tool["dispatch_names"]


def test_without_the_module_renderdoccmd_stands_in_with_one_line(tmp_path: Path) -> None:
    if not Path("/usr/bin/renderdoccmd").exists():
        pytest.skip("renderdoccmd is not installed")
    # This interpreter without Debian's dist-packages folder cannot import the module: the case of a
    # GPU machine whose Python the module was not built for.
    env = {"GPUTOP_RENDERDOC_PYTHON": sys.executable, "GPUTOP_RENDERDOC_PYTHONPATH": str(tmp_path)}
    proc = run_gputop("capture-info", str(FIXTURE), "--json", "-", env=env)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    note = proc.stderr.strip()
    assert "\n" not in note and note == f"gputop: {info['reader_note']}"
    assert "No module named 'renderdoc'" in note and sys.executable in note and "renderdoccmd" in note
    assert info["reader"] == "renderdoccmd" and info["dispatch_list"] == [] and info["dispatches"] == 1
    assert info["replay"]["ok"] is False and "no working renderdoc Python module" in info["replay"]["reason"]
    text = run_gputop("capture-info", str(FIXTURE), env=env).stdout
    assert [line for line in text.splitlines() if line.startswith("note")] == [f"note         {info['reader_note']}"]
    assert "scale_dispatch_0_elementwise_8_f32" in text


def test_renderdocs_vendors_are_compared_by_name() -> None:
    """On the H200 its own capture's replay said "vendor mismatch ... no GPU of its vendor: NVIDIA H200":
    str() of RenderDoc's GPUVendor (an IntEnum) is its number under the module's Python 3.11."""
    module_or_skip()
    reader = Path(__file__).resolve().parents[1] / "core" / "renderdoc"
    code = (  # renderdoc first: the folder holds gputop's own in_app.py beside rdc_reader.py
        f"import sys, renderdoc as rd; sys.path.append({str(reader)!r}); import rdc_reader as r; "
        "print(r.vendor_name(rd.GPUVendor.nVidia), r.vendor_name(rd.GPUVendor.Software), str(rd.GPUVendor.nVidia))"
    )
    proc = subprocess.run(
        ["/usr/bin/python3.11", "-I", "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    nvidia, software, as_str = proc.stdout.split()
    assert (nvidia, software) == ("nVidia", "Software") and as_str != "nVidia"  # what the old code compared


def test_replay_of_an_h200_capture_is_refused_here_with_the_reason() -> None:
    module_or_skip()
    info = json.loads(run_gputop("capture-info", str(FIXTURE), "--json", "-").stdout)
    replay = info["replay"]
    assert replay["ok"] is False and replay["device"] is not None
    # Our reason (vendors compared from the capture's own record) and RenderDoc's own refusal.
    assert replay["reason"].startswith("vendor mismatch: captured on NVIDIA H200")
    assert "software device" in replay["reason"] and "RenderDoc refuses" in replay["reason"]
    assert "bufferDeviceAddressCaptureReplay" in replay["reason"]
    assert info["gpu_durations_us"] == [] and info["dispatch_list"][0]["gpu_duration_us"] is None


def test_a_lavapipe_capture_replays_here_with_gpu_times(vulkan_device: str) -> None:
    module_or_skip()
    proc = run_gputop("capture-info", str(LAVAPIPE), "--passes", "3", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    replay = info["replay"]
    assert replay["ok"] is True and "llvmpipe" in replay["device"] and replay["passes"] == 3
    scale, add = info["dispatch_list"]
    # What main.c recorded: 4096 and 2048 floats in workgroups of 64, the second dispatch bound to
    # the first half (8 KiB) of the 16 KiB output slice, its pipeline given a debug name.
    assert (scale["name"], scale["workgroup_count"]) == ("demo_dispatch_0_scale_4096_f32", [64, 1, 1])
    assert (add["name"], add["workgroup_count"]) == ("demo_dispatch_1_add_2048_f32", [32, 1, 1])
    assert [(b["binding"], b["bytes"], b["offset"]) for b in add["buffers"]] == [(0, 16384, 0), (1, 8192, 16384)]
    assert add["debug_name"] == "add one, in place" and scale["debug_name"] is None
    for dispatch in (scale, add):
        assert dispatch["event_id"] is not None
        assert 0 < dispatch["gpu_duration_us_min"] <= dispatch["gpu_duration_us"] < 1e6
    assert info["gpu_durations_us"] == [scale["gpu_duration_us"], add["gpu_duration_us"]]
    assert info["actions"][:2] == ["vkCmdBeginDebugUtilsLabelEXT demo", "vkCmdFillBuffer 16384 bytes"]


def test_a_replay_past_its_deadline_is_killed_and_the_structure_kept(vulkan_device: str) -> None:
    module_or_skip()
    proc = run_gputop("capture-info", str(LAVAPIPE), "--replay-timeout", "0.001", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["replay"]["ok"] is False
    assert info["replay"]["reason"] == (
        "the replay did not finish in 0.001 s and was killed (a hang in the driver or RenderDoc)"
    )
    assert [d["workgroup_count"] for d in info["dispatch_list"]] == [[64, 1, 1], [32, 1, 1]]


def test_the_verifier_process_reads_for_a_run() -> None:
    module_or_skip()
    from gputop.core.renderdoc.capture_files import CaptureVerifier

    verifier = CaptureVerifier()
    try:
        plain = verifier.verify(FIXTURE)
        assert plain.replay is None and plain.dispatch_list[0].workgroup_count == (1, 1, 1)
        replayed = verifier.verify(FIXTURE, replay=True)
        assert replayed.replay is not None and "vendor mismatch" in replayed.replay.reason
    finally:
        verifier.close()


def test_truncated_and_foreign_files(tmp_path: Path) -> None:
    if not Path("/usr/bin/renderdoccmd").exists():
        pytest.skip("renderdoccmd is not installed")
    cut = tmp_path / "cut.rdc"
    cut.write_bytes(FIXTURE.read_bytes()[: FIXTURE.stat().st_size // 2])
    assert_one_line_error(run_gputop("capture-info", str(cut)), 5, "cut.rdc")
    no_module = {"GPUTOP_RENDERDOC_PYTHON": sys.executable, "GPUTOP_RENDERDOC_PYTHONPATH": str(tmp_path)}
    assert_one_line_error(run_gputop("capture-info", str(cut), env=no_module), 5, "cut.rdc", "renderdoccmd")
    foreign = tmp_path / "photo.rdc"
    foreign.write_bytes(b"\x89PNG" + bytes(500))
    assert_one_line_error(run_gputop("capture-info", str(foreign)), 5, "not a RenderDoc capture")
    assert_one_line_error(run_gputop("capture-info", str(tmp_path / "absent.rdc")), 2, "no such file")


def test_capture_on_a_cpu_run_says_why() -> None:
    proc, report = run_json("demo:mlp", "--device", "cpu", "-n", "1", "--capture", "1")
    assert proc.returncode == 0
    assert report["captures"] == [] and "not on Vulkan" in report["renderdoc"]


async def test_after_a_switch_to_lavapipe_the_captures_pane_gives_the_real_reason(vulkan_device: str) -> None:
    """The device list opened Vulkan in the process, so RenderDoc is "too late"; but lavapipe cannot be
    captured under RenderDoc at all (below IREE's Vulkan 1.3 baseline), and that is what a restart would
    not fix: the pane must say so rather than suggest loading earlier."""
    renderdoc_or_skip()
    from tui_pilot import calls, choose_device, live_app, wait_for

    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 0)
        await choose_device(app, pilot, vulkan_device)
        await wait_for(
            pilot,
            lambda: app.snapshot is not None and app.snapshot.device is not None
            and app.snapshot.device.id == vulkan_device and bool(app.snapshot.renderdoc),
            timeout=300,
        )  # fmt: skip
        status = app.snapshot.renderdoc or ""
        assert "cannot capture here" in status and "baseline" in status, status
        assert "too late" not in status
