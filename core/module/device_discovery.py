"""Every device gputop can use, from every source, and how `--device` picks one.

Users should not have to know which library sees which device. This module
asks IREE's drivers (local-task, local-sync, vulkan, cuda, hip), OpenCL
platforms, NVML and the host, and returns one `DeviceInfo` row per device.
A backend whose library is missing still gets a row, marked unavailable with
the one-line reason, so `gputop devices` answers "why is my GPU not listed?".
"""

from __future__ import annotations

import platform
import re
from collections.abc import Iterable
from dataclasses import replace

import psutil

from gputop.core.errors import DeviceUnavailableError, UsageError
from gputop.core.module.targets import compile_target_for
from gputop.core.processes import first_line
from gputop.core.records.devices import DeviceInfo
from gputop.core.watch import nvml

__all__ = [
    "ALIASES",
    "GPU_BACKENDS",
    "IREE_BACKENDS",
    "best_device",
    "host_cpu_name",
    "host_device",
    "iree_devices",
    "list_devices",
    "nvml_devices",
    "opencl_devices",
    "resolve_device",
    "resolve_opencl_device",
    "target_flags_for_spec",
    "vulkan_driver_created",
]

IREE_BACKENDS = ("local-task", "local-sync", "vulkan", "cuda", "hip")
GPU_BACKENDS = ("cuda", "vulkan", "hip")
ALIASES = {"cpu": "local-task", "local": "local-task"}


class _VulkanInstanceSeen:
    """Whether this process has asked IREE for its Vulkan driver, which creates a Vulkan instance.

    A fact about the whole process, not about one run: RenderDoc must be loaded
    before the first instance to capture anything, so a run that wants it asks
    `vulkan_driver_created()` first. Only `iree_devices` sets it.
    """

    created = False


def vulkan_driver_created() -> bool:
    """Whether a Vulkan instance already exists in this process (RenderDoc would come too late)."""
    return _VulkanInstanceSeen.created


_DEVICE_ID = re.compile(r"^(?P<backend>[a-z][a-z-]*)(?::(?P<index>\d+))?$")


def host_cpu_name() -> str:
    """A readable CPU model name ('AMD EPYC ...') with the logical core count."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model} ({psutil.cpu_count()} threads)"


def _iree_driver_names() -> set[str]:
    import iree.runtime as rt

    return set(rt.query_available_drivers())


def _parse_vulkan_info(text: str) -> dict[str, str | int]:
    """Pick name, type, vendor and device-local heap size out of dump_device_info text."""
    info: dict[str, str | int] = {}
    heaps = 0
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("name:") and "name" not in info:
            info["name"] = stripped.split(":", 1)[1].strip()  # the device's own name, without the driver's
        elif stripped.startswith("type:"):
            info["type"] = stripped.split(":", 1)[1].strip()
        elif stripped.startswith("vendor_id:"):
            info["vendor_id"] = int(stripped.split(":", 1)[1].strip(), 16)
        elif stripped.startswith("device_uuid:"):
            info["uuid"] = stripped.split(":", 1)[1].strip()
        elif stripped.startswith("driver_info:"):
            info["driver_info"] = stripped.split(":", 1)[1].strip()
        else:
            heap = re.match(r"\[\d+\] size=(\d+) flags=0x([0-9a-fA-F]+)", stripped)
            if heap and int(heap.group(2), 16) & 0x1:  # VK_MEMORY_HEAP_DEVICE_LOCAL_BIT
                heaps += int(heap.group(1))
    if heaps:
        info["memory"] = heaps
    return info


def iree_devices(backend: str) -> list[DeviceInfo]:
    """Rows for one IREE driver: its devices, or one unavailable row saying why."""
    try:
        import iree.runtime as rt
    except ImportError as exc:
        return [_missing(backend, f"iree-base-runtime is not installed ({exc})")]
    if backend not in _iree_driver_names():
        return [_missing(backend, f"this IREE runtime has no {backend} driver")]
    if backend in ("local-task", "local-sync"):
        mem = psutil.virtual_memory().total
        return [
            DeviceInfo(
                id=backend,
                backend=backend,
                name=f"{host_cpu_name()}",
                memory_total_bytes=mem,
                compile_target=compile_target_for(backend),
                available=True,
                kind="cpu",
            )
        ]
    try:
        driver = rt.get_driver(backend)
        if backend == "vulkan":
            _VulkanInstanceSeen.created = True
        found = driver.query_available_devices()
    except Exception as exc:  # IREE raises RuntimeError/ValueError with status text
        return [_missing(backend, first_line(str(exc)))]
    if not found:
        return [_missing(backend, f"the {backend} driver loaded but found no devices")]
    rows: list[DeviceInfo] = []
    for index, entry in enumerate(found):
        name = str(entry.get("name", f"{backend} device {index}"))
        details: dict[str, str | int] = {}
        try:
            details = _parse_vulkan_info(driver.dump_device_info(entry["device_id"]))
        except Exception:
            details = {}
        # IREE's listed name is "<device> (<driver> <driver_info>)": the device's own name, and the
        # driver once, in driver_info (`llvmpipe (LLVM 15.0.6, 256 bits)`, `Mesa 22.3.6 (LLVM 15.0.6)`).
        name = str(details.get("name") or name)
        vendor = details.get("vendor_id")
        software = details.get("type") == "cpu" or "llvmpipe" in name.lower()
        uuid = str(details.get("uuid") or entry.get("path") or "") or None
        memory = details.get("memory")
        gpu = nvml.match_gpu(uuid, name)
        if gpu is not None and memory is None:
            memory = gpu.memory_total_bytes
        rows.append(
            DeviceInfo(
                id=f"{backend}:{index}",
                backend=backend,
                name=name + (" [software]" if software else ""),
                memory_total_bytes=int(memory) if isinstance(memory, int) else None,
                compile_target=compile_target_for(backend, vendor_id=vendor if isinstance(vendor, int) else None),
                available=True,
                kind="software-gpu" if software else "gpu",
                uuid=uuid,
                driver_info=str(details.get("driver_info")) if details.get("driver_info") else None,
                uri=f"{backend}://{entry['path']}" if entry.get("path") else None,
            )
        )
    return rows


def opencl_devices() -> list[DeviceInfo]:
    """One row per OpenCL device across all platforms, numbered in that order."""
    try:
        import pyopencl as cl
    except ImportError as exc:
        return [_missing("opencl", f"pyopencl cannot be imported ({first_line(str(exc))})")]
    try:
        platforms = cl.get_platforms()
    except Exception as exc:  # pyopencl.LogicError when no ICD is installed
        return [
            _missing(
                "opencl",
                f"no OpenCL platform ({first_line(str(exc))}); install an ICD such as pocl-opencl-icd",
            )
        ]
    rows: list[DeviceInfo] = []
    for plat in platforms:
        try:
            devices = plat.get_devices()
        except Exception:
            continue
        for dev in devices:
            software = bool(dev.type & cl.device_type.CPU)
            rows.append(
                DeviceInfo(
                    id=f"opencl:{len(rows)}",
                    backend="opencl",
                    name=f"{dev.name.strip()} ({plat.name.strip()})",
                    memory_total_bytes=int(dev.global_mem_size),
                    compile_target=None,
                    available=True,
                    reason="OpenCL runs take a run spec, not an IREE module",
                    kind="cpu" if software else "gpu",
                    driver_info=f"{dev.version.strip()}, driver {dev.driver_version.strip()}",
                )
            )
    return rows or [_missing("opencl", "OpenCL platforms found but no devices")]


def nvml_devices() -> list[DeviceInfo]:
    """NVIDIA GPUs as NVML lists them: watched for memory, not run on directly."""
    reason = nvml.nvml_unavailable_reason()
    if reason is not None:
        return [_missing("nvml", reason)]
    return [
        DeviceInfo(
            id=f"nvml:{gpu.index}",
            backend="nvml",
            name=gpu.name,
            memory_total_bytes=gpu.memory_total_bytes,
            compile_target=None,
            available=True,
            reason="monitoring only: run on it as cuda:N or vulkan:N",
            kind="monitor",
            uuid=gpu.uuid,
            driver_info=f"driver {gpu.driver_version}",
        )
        for gpu in nvml.list_gpus()
    ]


def host_device() -> DeviceInfo:
    return DeviceInfo(
        id="host",
        backend="host",
        name=host_cpu_name(),
        memory_total_bytes=psutil.virtual_memory().total,
        compile_target=None,
        available=True,
        reason="host memory and CPU load; run on it as local-task",
        kind="host",
    )


def list_devices(backends: Iterable[str] | None = None) -> list[DeviceInfo]:
    """All rows from all sources (or only the named IREE backends)."""
    wanted = tuple(backends) if backends is not None else None
    rows: list[DeviceInfo] = []
    for backend in IREE_BACKENDS:
        if wanted is None or backend in wanted:
            rows.extend(iree_devices(backend))
    if wanted is None or "opencl" in wanted:
        rows.extend(opencl_devices())
    if wanted is None:
        rows.extend(nvml_devices())
        rows.append(host_device())
    return rows


def _rank(row: DeviceInfo) -> int:
    """Lower is better: real GPUs before the CPU, software Vulkan last."""
    if row.kind == "gpu":
        return GPU_BACKENDS.index(row.backend) if row.backend in GPU_BACKENDS else 5
    if row.backend == "local-task":
        return 10
    if row.backend == "local-sync":
        return 11
    return 20


def best_device(rows: list[DeviceInfo] | None = None) -> DeviceInfo:
    """The device a run uses when none is named: a GPU if there is one, else the CPU."""
    candidates = [r for r in (rows or list_devices(IREE_BACKENDS)) if r.runnable]
    if not candidates:
        raise DeviceUnavailableError("no device can run IREE modules here (is iree-base-runtime installed?)")
    return min(candidates, key=_rank)


def resolve_device(spec: str | None) -> DeviceInfo:
    """Turn a `--device` value into one runnable device, or say why not."""
    if spec is None or spec in ("", "auto", "best"):
        return best_device()
    spec = ALIASES.get(spec.strip().lower(), spec.strip().lower())
    match = _DEVICE_ID.match(spec)
    if match is None:
        raise UsageError(f"bad device {spec!r}: use local-task, cpu, vulkan, vulkan:N, cuda:N, hip:N or opencl:N")
    backend, index = match.group("backend"), match.group("index")
    backend = ALIASES.get(backend, backend)
    if backend == "opencl":
        raise UsageError(f"{spec}: OpenCL devices run OpenCL run specs, not IREE modules")
    if backend in ("nvml", "host"):
        raise UsageError(f"{spec} is watched, not run on: use cuda:N, vulkan:N or local-task")
    if backend not in IREE_BACKENDS:
        raise DeviceUnavailableError(
            f"no device {spec!r}: backends are {', '.join(IREE_BACKENDS)} (or cpu); see 'gputop devices'"
        )
    rows = iree_devices(backend)
    if backend in ("local-task", "local-sync"):
        # Each local device is a fresh set of worker threads: local-task:1 is a second one.
        return rows[0] if index is None else replace(rows[0], id=f"{backend}:{index}")
    wanted = f"{backend}:{index or 0}"
    if len(rows) == 1 and not rows[0].available:
        raise DeviceUnavailableError(f"{wanted} is unavailable: {rows[0].reason}")
    for row in rows:
        if row.id == wanted:
            return row
    present = ", ".join(r.id for r in rows if r.available) or "none"
    raise DeviceUnavailableError(f"{wanted} does not exist (available {backend} devices: {present})")


def resolve_opencl_device(spec: str | None) -> DeviceInfo:
    """An OpenCL device for a run spec: `opencl:N`, or the first (GPUs before CPUs)."""
    rows = opencl_devices()
    if len(rows) == 1 and not rows[0].available:
        raise DeviceUnavailableError(f"no OpenCL device: {rows[0].reason}")
    if spec is None or spec.strip().lower() in ("", "auto", "best", "opencl"):
        return min(rows, key=lambda r: 0 if r.kind == "gpu" else 1)
    wanted = spec.strip().lower()
    for row in rows:
        if row.id == wanted:
            return row
    if not wanted.startswith("opencl"):
        raise UsageError(f"OpenCL run specs run on opencl:N devices, not {spec!r}")
    raise DeviceUnavailableError(f"{wanted} does not exist (OpenCL devices: {', '.join(r.id for r in rows)})")


def _missing(backend: str, reason: str) -> DeviceInfo:
    return DeviceInfo(
        id=backend if backend in ("local-task", "local-sync") else f"{backend}:0",
        backend=backend,
        name=f"{backend} (unavailable)",
        memory_total_bytes=None,
        compile_target=None,
        available=False,
        reason=reason,
        kind="gpu" if backend in (*GPU_BACKENDS, "opencl", "nvml") else "cpu",
    )


def target_flags_for_spec(spec: str) -> tuple[str, ...]:
    """Compile flags for a device spec, also for devices this machine does not have.

    Affinity analysis only compiles, so `gputop affinity --devices cuda:0,cuda:1`
    works on a machine without CUDA: a missing device gets its backend's
    default target.
    """
    try:
        flags = resolve_device(spec).compile_target
        if flags:
            return flags
    except DeviceUnavailableError:
        pass
    backend = {"cpu": "local-task", "local": "local-task"}.get(spec.split(":")[0], spec.split(":")[0])
    if backend not in IREE_BACKENDS:
        raise UsageError(f"no device {spec!r}: backends are {', '.join(IREE_BACKENDS)}")
    return compile_target_for(backend)
