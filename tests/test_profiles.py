"""Kernel timings from IREE's HAL-native profiling on local-task and lavapipe Vulkan."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import assert_one_line_error, run_gputop, run_json
from gputop.core.errors import ProfileError
from gputop.core.profiling.ireeprof.ireeperf import parse_ireeperf, read_profile
from gputop.core.profiling.ireeprof.tools import runtime_tool

DISPATCHES = {
    "mlp_dispatch_0_matmul_256x1024x1024_f32",
    "mlp_dispatch_1_matmul_256x512x1024_f32",
    "mlp_dispatch_2_matmul_256x256x512_f32",
}


def iree_profile_groups(path: Path) -> dict[str, dict[str, float]]:
    """What `iree-profile dispatch` itself says about the same file."""
    proc = subprocess.run(
        [runtime_tool("iree-profile"), "dispatch", "--format=jsonl", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    groups = {}
    for line in proc.stdout.splitlines():
        row = json.loads(line)
        if row["type"] in ("dispatch_group", "host_dispatch_group"):
            groups[row["key"]] = row
    return groups


@pytest.mark.parametrize("device", ["local-task", "vulkan"])
def test_profile_pass_matches_iree_profile(device: str, request: pytest.FixtureRequest) -> None:
    if device == "vulkan":
        request.getfixturevalue("vulkan_device")
    iterations = 3 if device == "local-task" else 2
    proc, report = run_json("demo:mlp", "--device", device, "-n", str(iterations), "--profile")
    assert proc.returncode == 0, proc.stderr
    kernels = {k["name"]: k for k in report["kernels"]}
    assert set(kernels) == DISPATCHES
    for kernel in kernels.values():
        assert kernel["count"] == iterations and kernel["per_call"] == 1.0
        assert 0 < kernel["min_us"] <= kernel["p50_us"] <= kernel["max_us"]
        assert kernel["source"] == "ireeprof"
        assert kernel["workgroup_count"] and kernel["workgroup_size"]
    assert sum(k["share"] for k in kernels.values()) == pytest.approx(1.0)
    timing = {k["timing"] for k in kernels.values()}
    assert timing == ({"device timestamps"} if device == "vulkan" else {"host execution (CPU device)"})
    # The same numbers iree-profile reports for the same file.
    bundle = Path(report["profile"]["profile_path"])
    for name, group in iree_profile_groups(bundle).items():
        ours = kernels[name]
        assert ours["count"] == group["count"]
        assert ours["total_us"] * 1e3 == pytest.approx(group["total_ns"], abs=1)
        assert ours["min_us"] * 1e3 == pytest.approx(group["min_ns"], abs=1)
        assert ours["max_us"] * 1e3 == pytest.approx(group["max_ns"], abs=1)
    # Per call: the synced wall time and the kernel time beside it.
    assert report["call_kernel_ms"] > 0 and report["call_wall_ms"] > 0
    assert report["call_gap_ms"] == pytest.approx(report["call_wall_ms"] - report["call_kernel_ms"])
    # The Chrome trace: valid JSON, one complete event per dispatch (beside the calls and their breakdown).
    trace = json.loads(Path(report["profile"]["trace_path"]).read_text())
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X" and e.get("cat") == "dispatch"]
    assert len(spans) == 3 * iterations
    assert {e["name"] for e in spans} == DISPATCHES
    assert all(e["dur"] > 0 and e["ts"] >= 0 for e in spans)
    assert all(e["args"]["workgroup_count"] and e["args"]["timing"] for e in spans)


def test_profile_info_command(tmp_path: Path) -> None:
    _, report = run_json("demo:mlp", "--device", "cpu", "-n", "2", "--profile")
    bundle = report["profile"]["profile_path"]
    proc = run_gputop("profile-info", bundle, "--json", "-")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert {k["name"] for k in data["kernels"]} == DISPATCHES
    text = run_gputop("profile-info", bundle)
    assert "mlp_dispatch_0_matmul_256x1024x1024_f32" in text.stdout


def test_truncated_profile_is_a_clear_error(tmp_path: Path) -> None:
    _, report = run_json("demo:mlp", "--device", "cpu", "-n", "1", "--profile")
    whole = Path(report["profile"]["profile_path"]).read_bytes()
    cut = tmp_path / "cut.ireeprof"
    cut.write_bytes(whole[: len(whole) // 3])
    with pytest.raises(ProfileError, match=r"cut\.ireeprof"):
        read_profile(cut)
    proc = run_gputop("profile-info", str(cut))
    assert_one_line_error(proc, 5, "cut.ireeprof")


def test_not_a_profile(tmp_path: Path) -> None:
    junk = tmp_path / "junk.ireeprof"
    junk.write_bytes(b"RIFF" + bytes(200))
    proc = run_gputop("profile-info", str(junk))
    assert_one_line_error(proc, 5, "junk.ireeprof")
    empty = tmp_path / "empty.ireeprof"
    empty.write_bytes(b"")
    assert_one_line_error(run_gputop("profile-info", str(empty)), 5, "empty profile")


@pytest.mark.parametrize(
    "text",
    [
        "not json at all",
        '{"record_type": "dispatch_event"}',  # no schema record
        '{"record_type":"schema","format":"ireeperf-jsonl"}\n{"record_type":"dispatch_event","key":"k"}',
    ],
)
def test_export_parser_rejects_bad_records(text: str) -> None:
    with pytest.raises(ProfileError):
        parse_ireeperf(text)
