"""NVIDIA GPUs as NVML sees them: names, UUIDs, PCI bus ids and memory in use.

NVML is the only source of whole-device memory on NVIDIA GPUs that does not
need a CUDA context, and it works the same whether the run uses CUDA or
Vulkan. The library ships with the driver, so on machines without NVIDIA GPUs
every call here fails; callers get a reason string instead of an exception.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

__all__ = ["NvmlGpu", "list_gpus", "match_gpu", "memory_used", "nvml_unavailable_reason"]

_init_lock = threading.Lock()
_init_result: str | bool | None = False  # False: not tried; None: ok; str: reason


@dataclass(frozen=True)
class NvmlGpu:
    index: int
    name: str
    uuid: str
    memory_total_bytes: int
    driver_version: str
    pci_bus_id: str | None = None  # "00000000:19:00.0", as NVML and dcgm-exporter's `pci_bus_id` label give it


def nvml_unavailable_reason() -> str | None:
    """Initialise NVML once; None when it works, else why not, in one line."""
    global _init_result
    with _init_lock:
        if _init_result is False:
            try:
                import pynvml

                pynvml.nvmlInit()
                _init_result = None
            except ImportError:
                _init_result = "nvidia-ml-py is not installed"
            except Exception as exc:  # pynvml raises its own NVMLError family
                _init_result = f"NVML unavailable: {exc} (no NVIDIA driver on this machine)"
        return _init_result if isinstance(_init_result, str) else None


def list_gpus() -> list[NvmlGpu]:
    """Every GPU NVML sees; empty when NVML is unavailable."""
    if nvml_unavailable_reason() is not None:
        return []
    import pynvml

    gpus: list[NvmlGpu] = []
    driver = _text(pynvml.nvmlSystemGetDriverVersion())
    for index in range(pynvml.nvmlDeviceGetCount()):
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        info = pynvml.nvmlDeviceGetMemoryInfo(handle)
        gpus.append(
            NvmlGpu(
                index=index,
                name=_text(pynvml.nvmlDeviceGetName(handle)),
                uuid=_text(pynvml.nvmlDeviceGetUUID(handle)),
                memory_total_bytes=int(info.total),
                driver_version=driver,
                pci_bus_id=_pci_bus_id(handle),
            )
        )
    return gpus


def _pci_bus_id(handle: object) -> str | None:
    import pynvml

    try:
        return _text(pynvml.nvmlDeviceGetPciInfo(handle).busId)
    except Exception:  # an NVML too old for the field, or a GPU that does not answer: the label is left out
        return None


def memory_used(index: int) -> tuple[int, int] | None:
    """(used, total) bytes of GPU `index`, or None when NVML cannot tell."""
    if nvml_unavailable_reason() is not None:
        return None
    import pynvml

    try:
        info = pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(index))
    except Exception:
        return None
    return int(info.used), int(info.total)


def match_gpu(uuid: str | None, name: str | None) -> NvmlGpu | None:
    """The NVML GPU behind a runtime device, by UUID first, then by name."""
    gpus = list_gpus()
    if uuid:
        bare = uuid.lower().replace("-", "").removeprefix("gpu")
        for gpu in gpus:
            if gpu.uuid.lower().replace("-", "").removeprefix("gpu") == bare:
                return gpu
    if name:
        for gpu in gpus:
            if gpu.name in name:
                return gpu
    return None


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value
