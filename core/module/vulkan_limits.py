"""The Vulkan limits that decide whether a parameter can be placed, read through the loader.

IREE's `dump_device_info` lists heaps and features but not the limits that
make a large parameter fail: `maxMemoryAllocationSize` (IREE 3.13 puts each
parameter in one allocation and refuses larger ones unless it has sparse
binding), `maxBufferSize` and `maxStorageBufferRange` (the most one dispatch
can bind), nor the heap budget of `VK_EXT_memory_budget`. This module asks
the Vulkan loader for them with ctypes: a throwaway instance, one
`vkGetPhysicalDeviceProperties2` per physical device, and the memory budget
where the extension exists. Devices are matched to IREE's by their UUID.

The instance is created only on request and after IREE has created its own,
so a RenderDoc layer loaded before IREE's first instance still sees every
call (see `devices.vulkan_driver_created`).
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass

__all__ = ["VulkanLimits", "limits_for_uuid", "vulkan_limits"]

_API_1_1 = (1 << 22) | (1 << 12)
_ST_APPLICATION_INFO = 0
_ST_INSTANCE_CREATE_INFO = 1
_ST_PROPERTIES_2 = 1000059001
_ST_MEMORY_PROPERTIES_2 = 1000059006
_ST_ID_PROPERTIES = 1000071004
_ST_MAINTENANCE_3_PROPERTIES = 1000168000
_ST_MAINTENANCE_4_PROPERTIES = 1000413001
_ST_MEMORY_BUDGET_PROPERTIES = 1000237000
_HEAP_DEVICE_LOCAL = 0x1
# VkPhysicalDeviceProperties: five uint32, deviceName[256], pipelineCacheUUID[16], then the
# 8-aligned VkPhysicalDeviceLimits whose eighth uint32 is maxStorageBufferRange.
_PROPERTIES_SIZE = 824
_NAME_OFFSET = 20
_LIMITS_OFFSET = 296
_STORAGE_RANGE_OFFSET = _LIMITS_OFFSET + 7 * 4


class _ApplicationInfo(ctypes.Structure):
    _fields_ = [
        ("sType", ctypes.c_uint32),
        ("pNext", ctypes.c_void_p),
        ("pApplicationName", ctypes.c_char_p),
        ("applicationVersion", ctypes.c_uint32),
        ("pEngineName", ctypes.c_char_p),
        ("engineVersion", ctypes.c_uint32),
        ("apiVersion", ctypes.c_uint32),
    ]


class _InstanceCreateInfo(ctypes.Structure):
    _fields_ = [
        ("sType", ctypes.c_uint32),
        ("pNext", ctypes.c_void_p),
        ("flags", ctypes.c_uint32),
        ("pApplicationInfo", ctypes.POINTER(_ApplicationInfo)),
        ("enabledLayerCount", ctypes.c_uint32),
        ("ppEnabledLayerNames", ctypes.c_void_p),
        ("enabledExtensionCount", ctypes.c_uint32),
        ("ppEnabledExtensionNames", ctypes.c_void_p),
    ]


class _Properties2(ctypes.Structure):
    _fields_ = [
        ("sType", ctypes.c_uint32),
        ("pNext", ctypes.c_void_p),
        ("properties", ctypes.c_ubyte * _PROPERTIES_SIZE),
    ]


class _IdProperties(ctypes.Structure):
    _fields_ = [
        ("sType", ctypes.c_uint32),
        ("pNext", ctypes.c_void_p),
        ("deviceUUID", ctypes.c_ubyte * 16),
        ("driverUUID", ctypes.c_ubyte * 16),
        ("deviceLUID", ctypes.c_ubyte * 8),
        ("deviceNodeMask", ctypes.c_uint32),
        ("deviceLUIDValid", ctypes.c_uint32),
    ]


class _Maintenance3Properties(ctypes.Structure):
    _fields_ = [
        ("sType", ctypes.c_uint32),
        ("pNext", ctypes.c_void_p),
        ("maxPerSetDescriptors", ctypes.c_uint32),
        ("maxMemoryAllocationSize", ctypes.c_uint64),
    ]


class _Maintenance4Properties(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_uint32), ("pNext", ctypes.c_void_p), ("maxBufferSize", ctypes.c_uint64)]


class _MemoryHeap(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint64), ("flags", ctypes.c_uint32)]


class _MemoryType(ctypes.Structure):
    _fields_ = [("propertyFlags", ctypes.c_uint32), ("heapIndex", ctypes.c_uint32)]


class _MemoryProperties2(ctypes.Structure):
    _fields_ = [
        ("sType", ctypes.c_uint32),
        ("pNext", ctypes.c_void_p),
        ("memoryTypeCount", ctypes.c_uint32),
        ("memoryTypes", _MemoryType * 32),
        ("memoryHeapCount", ctypes.c_uint32),
        ("memoryHeaps", _MemoryHeap * 16),
    ]


class _MemoryBudget(ctypes.Structure):
    _fields_ = [
        ("sType", ctypes.c_uint32),
        ("pNext", ctypes.c_void_p),
        ("heapBudget", ctypes.c_uint64 * 16),
        ("heapUsage", ctypes.c_uint64 * 16),
    ]


class _ExtensionProperties(ctypes.Structure):
    _fields_ = [("extensionName", ctypes.c_char * 256), ("specVersion", ctypes.c_uint32)]


@dataclass(frozen=True)
class VulkanLimits:
    """What one Vulkan physical device allows, from the loader (sizes in bytes)."""

    name: str
    uuid: str  # 32 hex digits, as IREE's dump_device_info prints device_uuid
    max_memory_allocation_size: int
    max_storage_buffer_range: int
    max_buffer_size: int | None  # VK_KHR_maintenance4 (Vulkan 1.3), else None
    device_local_heap_bytes: int
    device_local_budget_bytes: int | None  # VK_EXT_memory_budget: what may still be allocated, else None


_cache_lock = threading.Lock()
_cache: list[VulkanLimits] | str | None = None


def vulkan_limits() -> list[VulkanLimits]:
    """Every physical device's limits (budgets are read fresh); raises RuntimeError when Vulkan is absent."""
    return _query()


def limits_for_uuid(uuid: str | None) -> VulkanLimits | None:
    """The limits of the device with this UUID (IREE's `device_uuid`, or a `GPU-...` path), None if unknown."""
    if not uuid:
        return None
    bare = uuid.lower().removeprefix("gpu-").replace("-", "")
    try:
        devices = _query()
    except RuntimeError:
        return None
    for device in devices:
        if device.uuid == bare:
            return device
    return None


def _query() -> list[VulkanLimits]:
    global _cache
    with _cache_lock:
        if isinstance(_cache, str):
            raise RuntimeError(_cache)
        try:
            return _read_all()
        except (OSError, RuntimeError, AttributeError) as exc:
            _cache = f"no Vulkan loader or device: {exc}"
            raise RuntimeError(_cache) from None


def _read_all() -> list[VulkanLimits]:
    vk = ctypes.CDLL("libvulkan.so.1")
    for name in ("vkCreateInstance", "vkEnumeratePhysicalDevices", "vkEnumerateDeviceExtensionProperties"):
        getattr(vk, name).restype = ctypes.c_int32
    vk.vkGetPhysicalDeviceProperties2.restype = None
    vk.vkGetPhysicalDeviceMemoryProperties2.restype = None
    vk.vkDestroyInstance.restype = None
    app = _ApplicationInfo(_ST_APPLICATION_INFO, None, b"gputop", 1, b"gputop", 1, _API_1_1)
    info = _InstanceCreateInfo(_ST_INSTANCE_CREATE_INFO, None, 0, ctypes.pointer(app), 0, None, 0, None)
    instance = ctypes.c_void_p()
    result = vk.vkCreateInstance(ctypes.byref(info), None, ctypes.byref(instance))
    if result != 0:
        raise RuntimeError(f"vkCreateInstance failed ({result})")
    try:
        count = ctypes.c_uint32(0)
        vk.vkEnumeratePhysicalDevices(instance, ctypes.byref(count), None)
        handles = (ctypes.c_void_p * count.value)()
        vk.vkEnumeratePhysicalDevices(instance, ctypes.byref(count), handles)
        return [_read_device(vk, ctypes.c_void_p(handle)) for handle in handles[: count.value]]
    finally:
        vk.vkDestroyInstance(instance, None)


def _read_device(vk: ctypes.CDLL, device: ctypes.c_void_p) -> VulkanLimits:
    maintenance4 = _Maintenance4Properties(_ST_MAINTENANCE_4_PROPERTIES, None, 0)
    maintenance3 = _Maintenance3Properties(_ST_MAINTENANCE_3_PROPERTIES, _address(maintenance4), 0, 0)
    ids = _IdProperties(_ST_ID_PROPERTIES, _address(maintenance3))
    properties = _Properties2(_ST_PROPERTIES_2, _address(ids))
    vk.vkGetPhysicalDeviceProperties2(device, ctypes.byref(properties))
    raw = bytes(properties.properties)
    api_version = int.from_bytes(raw[0:4], "little")
    name = raw[_NAME_OFFSET : _NAME_OFFSET + 256].split(b"\0", 1)[0].decode(errors="replace")
    storage_range = int.from_bytes(raw[_STORAGE_RANGE_OFFSET : _STORAGE_RANGE_OFFSET + 4], "little")
    has_budget = b"VK_EXT_memory_budget" in _device_extensions(vk, device)
    budget = _MemoryBudget(_ST_MEMORY_BUDGET_PROPERTIES, None)
    memory = _MemoryProperties2(_ST_MEMORY_PROPERTIES_2, _address(budget) if has_budget else None)
    vk.vkGetPhysicalDeviceMemoryProperties2(device, ctypes.byref(memory))
    local = [i for i in range(memory.memoryHeapCount) if memory.memoryHeaps[i].flags & _HEAP_DEVICE_LOCAL]
    minor = (api_version >> 12) & 0x3FF
    major = (api_version >> 22) & 0x7F
    max_buffer = int(maintenance4.maxBufferSize) if (major, minor) >= (1, 3) else 0
    return VulkanLimits(
        name=name,
        uuid=bytes(ids.deviceUUID).hex(),
        max_memory_allocation_size=int(maintenance3.maxMemoryAllocationSize),
        max_storage_buffer_range=storage_range,
        # Only filled in by drivers of Vulkan 1.3 or with VK_KHR_maintenance4.
        max_buffer_size=max_buffer or None,
        device_local_heap_bytes=sum(int(memory.memoryHeaps[i].size) for i in local),
        device_local_budget_bytes=sum(int(budget.heapBudget[i]) for i in local) if has_budget else None,
    )


def _address(structure: ctypes.Structure) -> ctypes.c_void_p:
    """The pointer a `pNext` field takes."""
    return ctypes.cast(ctypes.pointer(structure), ctypes.c_void_p)


def _device_extensions(vk: ctypes.CDLL, device: ctypes.c_void_p) -> set[bytes]:
    count = ctypes.c_uint32(0)
    vk.vkEnumerateDeviceExtensionProperties(device, None, ctypes.byref(count), None)
    found = (_ExtensionProperties * count.value)()
    vk.vkEnumerateDeviceExtensionProperties(device, None, ctypes.byref(count), found)
    return {found[i].extensionName for i in range(count.value)}
