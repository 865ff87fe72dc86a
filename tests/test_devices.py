"""Device listing from every source, `--device` resolution, and `gputop devices`."""

from __future__ import annotations

import json

import pytest

from conftest import assert_one_line_error, run_gputop
from gputop.core.errors import DeviceUnavailableError, UsageError
from gputop.core.module.device_discovery import best_device, list_devices, resolve_device


def test_listing_has_every_source() -> None:
    rows = {r.id: r for r in list_devices()}
    assert rows["local-task"].available and rows["local-task"].compile_target
    assert rows["local-sync"].available
    assert "host" in rows and rows["host"].memory_total_bytes
    for backend in ("cuda", "hip", "opencl", "nvml", "vulkan"):
        assert any(r.backend == backend for r in rows.values()), backend


def test_cuda_and_hip_are_unavailable_with_the_missing_library() -> None:
    rows = {r.id: r for r in list_devices()}
    if rows["cuda:0"].available:
        pytest.skip("this machine has CUDA")
    assert "libcuda.so" in (rows["cuda:0"].reason or "")
    assert "amdhip64" in (rows["hip:0"].reason or "")
    assert not rows["hip:0"].available and rows["hip:0"].compile_target is None


def test_lavapipe_is_listed_as_software_vulkan(vulkan_device: str) -> None:
    row = resolve_device("vulkan")
    assert row.id == vulkan_device == "vulkan:0"
    assert row.kind in ("software-gpu", "gpu")
    assert row.compile_target == ("--iree-hal-target-device=vulkan",)
    assert row.memory_total_bytes and row.memory_total_bytes > 0
    # The device's own name, and the driver once, in driver_info: IREE's listed name repeats the driver.
    assert row.driver_info and row.driver_info not in row.name, (row.name, row.driver_info)
    assert row.name.count("llvmpipe") <= 1 and len(row.name) <= 48, row.name


def test_pocl_is_an_opencl_device(opencl_device: str) -> None:
    rows = {r.id: r for r in list_devices()}
    assert rows[opencl_device].available
    assert "Portable Computing Language" in rows[opencl_device].name


def test_aliases_and_default() -> None:
    assert resolve_device("cpu").id == "local-task"
    assert resolve_device("local-sync").id == "local-sync"
    best = best_device()
    # With no real GPU the CPU wins over software Vulkan.
    if best.kind != "gpu":
        assert best.id == "local-task"


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ("vulcan", DeviceUnavailableError),
        ("vulkan:7", DeviceUnavailableError),
        ("cuda", DeviceUnavailableError),
        ("vulkan:x", UsageError),
        ("nvml:0", UsageError),
    ],
)
def test_bad_device_specs(spec: str, error: type[Exception]) -> None:
    if spec == "cuda" and resolve_device_available("cuda"):
        pytest.skip("this machine has CUDA")
    with pytest.raises(error):
        resolve_device(spec)


def resolve_device_available(spec: str) -> bool:
    try:
        resolve_device(spec)
    except Exception:
        return False
    return True


def test_devices_command_json() -> None:
    proc = run_gputop("devices", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    keys = {"id", "backend", "name", "memory_total_bytes", "compile_target", "available", "reason"}
    assert all(keys <= row.keys() for row in rows)
    ids = [row["id"] for row in rows]
    assert "local-task" in ids and "host" in ids
    cuda = next(row for row in rows if row["backend"] == "cuda")
    assert cuda["available"] or cuda["reason"]


def test_devices_command_table() -> None:
    proc = run_gputop("devices")
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[0].split()[:3] == ["ID", "BACKEND", "AVAILABLE"]
    assert "local-task" in proc.stdout


def test_unknown_device_on_the_command_line() -> None:
    proc = run_gputop("run", "demo:mlp", "--device", "tpu:3")
    assert_one_line_error(proc, 4, "no device 'tpu:3'")
