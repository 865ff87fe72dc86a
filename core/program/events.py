"""What a watched program's events say, as gputop's records: its devices and its loads.

The watcher reports what the program called (`VmModule.mmap`, `ParameterIndex.load`,
`HalDriver.create_device_by_uri`) with what it could read of the arguments;
here that becomes a `DeviceInfo` and a `ProgramLoad`, and the Log's line for it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gputop.core.records.devices import DeviceInfo
from gputop.core.records.program import ProgramLoad
from gputop.core.units import human_bytes, seconds
from gputop.core.watch import nvml

__all__ = ["GPU_DRIVERS", "PROVIDER_APIS", "device_from_event", "load_from_event", "load_line", "with_nvml_gpu"]

GPU_DRIVERS = ("cuda", "vulkan", "hip", "metal")
PROVIDER_APIS = ("create_provider", "create_io_parameters_module")  # hand loaded parameters on: no bytes move


def device_from_event(event: dict[str, Any], known: list[DeviceInfo]) -> DeviceInfo:
    """The device a `device` phase made, numbered after the program's earlier devices of its driver."""
    uri = str(event.get("uri") or event.get("driver") or "device")
    driver = str(event.get("driver") or uri.split(":")[0].split("://")[0])
    return DeviceInfo(
        id=f"{driver}:{sum(1 for d in known if d.backend == driver)}",
        backend=driver,
        name=str(event.get("name") or uri),
        memory_total_bytes=None,
        compile_target=None,
        available=True,
        kind="gpu" if driver in GPU_DRIVERS else "cpu",
        uri=uri,
    )


def with_nvml_gpu(info: DeviceInfo) -> DeviceInfo:
    """A GPU device of the program named as NVML names it (its name and UUID), so that its memory, clocks and
    neighbours are read from the right GPU: by the ordinal in its URI (`cuda://1`, `vulkan:1`), else the first.

    IREE's URIs carry no UUID and the watcher reads nothing from the device (that would touch the program's
    device from another thread), so the ordinal is the best match there is; where NVML is missing, as it was.
    """
    if info.kind != "gpu" or nvml.nvml_unavailable_reason() is not None:
        return info
    gpus = nvml.list_gpus()
    digits = "".join(ch for ch in (info.uri or "").rsplit("/", 1)[-1].rsplit(":", 1)[-1] if ch.isdigit())
    ordinal = int(digits) if digits else 0
    gpu = next((g for g in gpus if g.index == ordinal), gpus[0] if gpus else None)
    if gpu is None:
        return info
    return replace(info, name=gpu.name, uuid=gpu.uuid, memory_total_bytes=gpu.memory_total_bytes)


def load_from_event(kind: str, event: dict[str, Any], spent: float) -> ProgramLoad | None:
    """A `module` or `parameters` phase as a load; None for a provider made from parameters loaded already."""
    if kind == "parameters" and event.get("api") in PROVIDER_APIS:
        return None
    files = tuple(str(f) for f in (event.get("files") or ([event["path"]] if event.get("path") else [])))
    api = event.get("api") or (f"VmModule.{event.get('how')}" if kind == "module" else "")
    return ProgramLoad(
        kind=kind,
        api=str(api),
        how=event.get("how") if kind == "module" else event.get("mode"),
        files=files,
        bytes=int(event.get("bytes") or 0),
        seconds=spent,
        through=event.get("through"),
        name=event.get("module"),
        tensors=event.get("tensors"),
    )


def load_line(load: ProgramLoad) -> str:
    """The Log's line for a load: what, by which call, how, how big, how long."""
    if load.kind == "module":
        how = f" ({load.how})" if load.how else ""
        return (
            f"program: module {load.name or '?'} loaded by {load.api}{how}, {human_bytes(load.bytes)} "
            f"in {seconds(load.seconds)}"
        )
    through = f", through {load.through}" if load.through else ""
    mode = f" (mode {load.how})" if load.how else ""
    return f"program: parameters {human_bytes(load.bytes)} by {load.api}{mode}{through} in {seconds(load.seconds)}"
