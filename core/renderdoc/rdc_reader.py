"""What a RenderDoc capture holds, read by RenderDoc's own Python module in a helper process.

RenderDoc's module (Debian's python3-renderdoc) is built for one Python
(3.11 on bookworm), opening a capture in the process that captured it
crashes, and a replay can hang in a driver: so this file runs as a script,
under whichever interpreter imports `renderdoc`, in a process of its own that
the caller can kill. It imports nothing of gputop's (that interpreter may not
have gputop, or numpy) and prints JSON lines: the structure first (no replay
needed: the calls as recorded, so it works for a capture from any GPU), then,
if asked, what a replay measured. A caller that loses the replay to a
timeout still has the structure.

Run as: python -I rdc_reader.py [--module-dir DIR]... [--replay --passes N] CAPTURE
or `--probe` to say whether this interpreter can import the module.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import signal
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "ACTION_PREFIXES",
    "COMPUTE",
    "RENDERDOC_VENDOR",
    "SOFTWARE_NAMES",
    "VENDORS",
    "VENDORS_SOFTWARE",
    "WHOLE_SIZE",
    "Buffer",
    "CommandBufferState",
    "Dispatch",
    "StructureReader",
    "driver_version",
    "main",
    "read_structure",
    "replay",
    "vendor_name",
]

COMPUTE = 1  # VK_PIPELINE_BIND_POINT_COMPUTE
WHOLE_SIZE = 0xFFFFFFFFFFFFFFFF  # VK_WHOLE_SIZE
VENDORS = {0x10DE: "NVIDIA", 0x1002: "AMD", 0x8086: "Intel", 0x13B5: "ARM", 0x5143: "Qualcomm", 0x1010: "Imagination"}
VENDORS_SOFTWARE = {0x10005: "Mesa (software)", 0x1AE0: "Google SwiftShader (software)"}
# RenderDoc's GPUVendor for a PCI vendor id: how a local GPU is matched with the captured one.
RENDERDOC_VENDOR = {0x10DE: "nVidia", 0x1002: "AMD", 0x8086: "Intel", 0x13B5: "ARM", 0x5143: "Qualcomm"}
SOFTWARE_NAMES = ("llvmpipe", "lavapipe", "swiftshader", "softpipe")
ACTION_PREFIXES = (
    "vkCmdDispatch",
    "vkCmdCopy",
    "vkCmdFillBuffer",
    "vkCmdUpdateBuffer",
    "vkCmdClear",
    "vkCmdBlit",
    "vkCmdResolve",
    "vkCmdDraw",
    "vkCmdExecuteCommands",
    "vkCmdBeginDebugUtilsLabelEXT",
    "vkCmdDebugMarkerBeginEXT",
    "vkQueueSubmit",
)


@dataclass
class Buffer:
    binding: int
    bytes: int | None
    set: int = 0
    offset: int = 0
    buffer: str = ""
    buffer_bytes: int | None = None


@dataclass
class Dispatch:
    index: int
    name: str
    workgroup_count: list[int] | None
    buffers: list[Buffer] = field(default_factory=list)
    pipeline: str = ""
    debug_name: str | None = None
    chunk: int = 0
    event_id: int | None = None
    gpu_duration_us: float | None = None
    gpu_duration_us_min: float | None = None


@dataclass
class CommandBufferState:
    pipeline: str = ""
    pushed: dict[tuple[int, int], tuple[str, int, int]] = field(default_factory=dict)
    sets: dict[int, str] = field(default_factory=dict)


def _child(obj: Any, *path: str) -> Any:
    for name in path:
        if obj is None:
            return None
        obj = obj.FindChild(name)
    return obj


def _int(obj: Any, *path: str, default: int | None = None) -> int | None:
    found = _child(obj, *path)
    return int(found.AsInt()) if found is not None else default


def _rid(obj: Any, *path: str) -> str:
    found = _child(obj, *path)
    return str(found.AsResourceId()) if found is not None else ""


def _items(obj: Any) -> list[Any]:
    return [obj.GetChild(i) for i in range(obj.NumChildren())] if obj is not None else []


def driver_version(vendor: int, version: int) -> str:
    if vendor == 0x10DE:  # NVIDIA packs 10.8.8.6 bits
        return f"{version >> 22}.{(version >> 14) & 0xFF}.{(version >> 6) & 0xFF}"
    return f"{version >> 22}.{(version >> 12) & 0x3FF}.{version & 0xFFF}"


class StructureReader:
    """One pass over the capture's chunks: resources first, then the frame's commands in order."""

    def __init__(self) -> None:
        self.buffer_sizes: dict[str, int] = {}
        self.entry_points: dict[str, str] = {}
        self.debug_names: dict[str, str] = {}
        self.set_contents: dict[str, dict[int, tuple[str, int, int]]] = {}
        self.command_buffers: dict[str, CommandBufferState] = {}
        self.physical: dict[str, dict[str, Any]] = {}
        self.device_physical = ""
        self.dispatches: list[Dispatch] = []
        self.actions: list[str] = []

    def read(self, chunks: Any) -> None:
        for index, chunk in enumerate(chunks):
            handler = getattr(self, "_" + chunk.name, None)
            if handler is not None:
                handler(index, chunk)
            if chunk.name.startswith(ACTION_PREFIXES):
                self.actions.append(self._describe(chunk))
        for dispatch in self.dispatches:
            dispatch.debug_name = self.debug_names.get(dispatch.pipeline)

    def captured_on(self) -> dict[str, Any] | None:
        props = self.physical.get(self.device_physical) or next(iter(self.physical.values()), None)
        return props

    # -- resources -------------------------------------------------------------------------
    def _vkEnumeratePhysicalDevices(self, index: int, chunk: Any) -> None:
        props = _child(chunk, "physProps")
        if props is None:
            return
        vendor = _int(props, "vendorID", default=0) or 0
        name = _child(props, "deviceName")
        self.physical[_rid(chunk, "PhysicalDevice")] = {
            "vendor_id": vendor,
            "name": name.AsString() if name is not None else "",
            "driver": driver_version(vendor, _int(props, "driverVersion", default=0) or 0),
            "type": (_child(props, "deviceType").AsString() if _child(props, "deviceType") is not None else ""),
        }

    def _vkCreateDevice(self, index: int, chunk: Any) -> None:
        self.device_physical = _rid(chunk, "physicalDevice")

    def _vkCreateBuffer(self, index: int, chunk: Any) -> None:
        size = _int(chunk, "CreateInfo", "size")
        if size is not None:
            self.buffer_sizes[_rid(chunk, "Buffer")] = size

    def _vkCreateComputePipelines(self, index: int, chunk: Any) -> None:
        # RenderDoc records one pipeline per chunk; an array of create infos is read all the same.
        infos = _child(chunk, "CreateInfo")
        pipelines = _child(chunk, "Pipeline")
        if infos is not None and infos.FindChild("stage") is None:
            pairs = zip(_items(infos), _items(pipelines), strict=False)
        else:
            pairs = zip([infos], [pipelines], strict=False)
        for info, pipeline in pairs:
            name = _child(info, "stage", "pName")
            if pipeline is not None and name is not None:
                self.entry_points[str(pipeline.AsResourceId())] = name.AsString()

    def _vkSetDebugUtilsObjectNameEXT(self, index: int, chunk: Any) -> None:
        name = _child(chunk, "ObjectName")
        if name is not None:
            self.debug_names[_rid(chunk, "Object")] = name.AsString()

    def _vkDebugMarkerSetObjectNameEXT(self, index: int, chunk: Any) -> None:
        self._vkSetDebugUtilsObjectNameEXT(index, chunk)

    def _vkUpdateDescriptorSets(self, index: int, chunk: Any) -> None:
        for write in _items(_child(chunk, "pDescriptorWrites")):
            contents = self.set_contents.setdefault(_rid(write, "dstSet"), {})
            for binding, info in self._buffer_infos(write):
                contents[binding] = info

    # -- commands --------------------------------------------------------------------------
    def _state(self, chunk: Any) -> CommandBufferState:
        return self.command_buffers.setdefault(_rid(chunk, "commandBuffer"), CommandBufferState())

    def _vkBeginCommandBuffer(self, index: int, chunk: Any) -> None:
        self.command_buffers[_rid(chunk, "commandBuffer")] = CommandBufferState()

    def _vkCmdBindPipeline(self, index: int, chunk: Any) -> None:
        if _int(chunk, "pipelineBindPoint") == COMPUTE:
            self._state(chunk).pipeline = _rid(chunk, "pipeline")

    def _vkCmdPushDescriptorSetKHR(self, index: int, chunk: Any) -> None:
        if _int(chunk, "pipelineBindPoint") != COMPUTE:
            return
        state = self._state(chunk)
        set_index = _int(chunk, "set", default=0) or 0
        for write in _items(_child(chunk, "pDescriptorWrites")):
            for binding, info in self._buffer_infos(write):
                state.pushed[(set_index, binding)] = info

    def _vkCmdBindDescriptorSets(self, index: int, chunk: Any) -> None:
        if _int(chunk, "pipelineBindPoint") != COMPUTE:
            return
        state = self._state(chunk)
        first = _int(chunk, "firstSet", default=0) or 0
        for offset, item in enumerate(_items(_child(chunk, "pDescriptorSets"))):
            state.sets[first + offset] = str(item.AsResourceId())
            state.pushed = {key: value for key, value in state.pushed.items() if key[0] != first + offset}

    def _vkCmdDispatch(self, index: int, chunk: Any) -> None:
        self._dispatch(index, chunk, [_int(chunk, axis, default=0) or 0 for axis in ("x", "y", "z")])

    def _vkCmdDispatchBase(self, index: int, chunk: Any) -> None:
        counts = [_int(chunk, f"groupCount{axis}", default=0) or 0 for axis in "XYZ"]
        self._dispatch(index, chunk, counts)

    def _vkCmdDispatchBaseKHR(self, index: int, chunk: Any) -> None:
        self._vkCmdDispatchBase(index, chunk)

    def _vkCmdDispatchIndirect(self, index: int, chunk: Any) -> None:
        self._dispatch(index, chunk, None)  # the counts are in a buffer: only a replay knows them

    def _dispatch(self, index: int, chunk: Any, counts: list[int] | None) -> None:
        state = self._state(chunk)
        bound: dict[tuple[int, int], tuple[str, int, int]] = {}
        for set_index, descriptor_set in state.sets.items():
            for binding, info in self.set_contents.get(descriptor_set, {}).items():
                bound[(set_index, binding)] = info
        bound.update(state.pushed)
        buffers = []
        for (set_index, binding), (buffer, offset, size) in sorted(bound.items()):
            whole = self.buffer_sizes.get(buffer)
            seen: int | None = size
            if size == WHOLE_SIZE:  # "the rest of the buffer"
                seen = whole - offset if whole is not None else None
            buffers.append(Buffer(binding, seen, set_index, offset, buffer, whole))
        name = self.entry_points.get(state.pipeline) or f"dispatch {len(self.dispatches)}"
        self.dispatches.append(Dispatch(len(self.dispatches), name, counts, buffers, state.pipeline, None, index))

    @staticmethod
    def _buffer_infos(write: Any) -> list[tuple[int, tuple[str, int, int]]]:
        binding = _int(write, "dstBinding", default=0) or 0
        element = _int(write, "dstArrayElement", default=0) or 0
        found = []
        for offset, info in enumerate(_items(_child(write, "pBufferInfo"))):
            found.append(
                (
                    binding + element + offset,
                    (_rid(info, "buffer"), _int(info, "offset", default=0) or 0, _int(info, "range", default=0) or 0),
                )
            )
        return found

    def _describe(self, chunk: Any) -> str:
        name = chunk.name
        if name.startswith("vkCmdDispatch") and self.dispatches:
            last = self.dispatches[-1]
            counts = "x".join(str(c) for c in last.workgroup_count) if last.workgroup_count else "indirect"
            return f"{name} {counts} {last.name}"
        if name == "vkCmdFillBuffer":
            return f"{name} {_int(chunk, 'fillSize')} bytes"
        if name == "vkCmdBeginDebugUtilsLabelEXT":
            label = _child(chunk, "Label", "pLabelName")
            return f"{name} {label.AsString() if label is not None else ''}".rstrip()
        if name.startswith("vkCmdCopyBuffer"):
            regions = _child(chunk, "pRegions") or _child(chunk, "pCopyBufferInfo", "pRegions")
            total = sum(_int(region, "size", default=0) or 0 for region in _items(regions))
            return f"{name} {total} bytes"
        return name


def read_structure(rd: Any, capture: Any) -> tuple[StructureReader, dict[str, Any]]:
    data = capture.GetStructuredData()
    chunks = data.chunks
    if len(chunks) == 0:
        raise ValueError("corrupt or truncated: no structured data in it")
    reader = StructureReader()
    reader.read(chunks)
    captured = reader.captured_on()
    return reader, {
        "kind": "structure",
        "api": capture.DriverName(),
        "chunks": len(chunks),
        "captured_on": _describe_device(captured) if captured else None,
        "dispatch_list": [asdict(d) for d in reader.dispatches],
        "actions": reader.actions,
    }


def _describe_device(props: dict[str, Any]) -> str:
    vendor = props["vendor_id"]
    vendor_name = VENDORS.get(vendor) or VENDORS_SOFTWARE.get(vendor) or f"vendor 0x{vendor:x}"
    return f"{props['name']} ({vendor_name}, driver {props['driver']})"


def vendor_name(vendor: Any) -> str:
    """RenderDoc's GPUVendor as its name ("nVidia", "Software").

    GPUVendor is an IntEnum, whose str() is its number ("6") from Python 3.11 on: comparing that
    with "nVidia" called the H200 a GPU of another vendor when replaying its own capture.
    """
    name = getattr(vendor, "name", None)
    return name if isinstance(name, str) else str(vendor).split(".")[-1]


def _local_gpus(rd: Any, capture: Any) -> list[tuple[str, str, bool]]:
    """(name, RenderDoc vendor, software) of each GPU RenderDoc could replay on here."""
    gpus = []
    for gpu in capture.GetAvailableGPUs():
        vendor = vendor_name(gpu.vendor)
        software = vendor == "Software" or any(word in gpu.name.lower() for word in SOFTWARE_NAMES)
        gpus.append((gpu.name + (f" ({gpu.driver})" if gpu.driver else ""), vendor, software))
    return gpus


def replay(rd: Any, capture: Any, reader: StructureReader, passes: int) -> dict[str, Any]:
    """Replay the frame `passes` times, reading RenderDoc's GPU duration of every dispatch."""
    captured = reader.captured_on()
    captured_text = _describe_device(captured) if captured else "an unknown GPU"
    gpus = _local_gpus(rd, capture)
    if not gpus:
        return {"kind": "replay", "ok": False, "device": None, "reason": "no Vulkan device here to replay on"}
    wanted = RENDERDOC_VENDOR.get(captured["vendor_id"]) if captured else None
    same = [g for g in gpus if wanted is not None and g[1] == wanted]
    why_not = None
    if captured and captured["vendor_id"] in VENDORS_SOFTWARE:
        same = [g for g in gpus if g[2]]
    if not same:
        here = ", ".join(name + (" (software)" if software else "") for name, _, software in gpus)
        kind = "a software device" if all(g[2] for g in gpus) else "no GPU of its vendor"
        why_not = f"vendor mismatch: captured on {captured_text}; this machine has {kind}: {here}"
    device = (same or gpus)[0][0]
    started = time.monotonic()
    status, controller = capture.OpenCapture(rd.ReplayOptions(), None)
    if not status.OK():
        message = " ".join(status.Message().split("\n")[0:1]).strip() or str(status.code)
        reason = (
            f"{why_not}; RenderDoc refuses: {message}"
            if why_not
            else f"RenderDoc cannot replay it on {device}: {message}"
        )
        return {"kind": "replay", "ok": False, "device": device, "reason": reason}
    try:
        by_chunk = {d.chunk: d for d in reader.dispatches}
        events: dict[int, Dispatch] = {}
        stack = list(controller.GetRootActions())
        while stack:
            action = stack.pop(0)
            stack[:0] = list(action.children)
            if not (action.flags & rd.ActionFlags.Dispatch) or not action.events:
                continue
            dispatch = by_chunk.get(action.events[-1].chunkIndex)
            if dispatch is None or dispatch.event_id is not None:
                continue  # a resubmitted command buffer: RenderDoc times its first execution only
            dispatch.event_id = action.eventId
            if dispatch.workgroup_count is None:
                dispatch.workgroup_count = list(action.dispatchDimension)
            events[action.eventId] = dispatch
        samples: dict[int, list[float]] = {event: [] for event in events}
        for _ in range(passes):
            for result in controller.FetchCounters([rd.GPUCounter.EventGPUDuration]):
                if result.eventId in samples:
                    samples[result.eventId].append(result.value.d * 1e6)
        for event, values in samples.items():
            if values:
                events[event].gpu_duration_us = round(statistics.median(values), 3)
                events[event].gpu_duration_us_min = round(min(values), 3)
    finally:
        controller.Shutdown()
    timed = sum(1 for d in reader.dispatches if d.gpu_duration_us is not None)
    ok = timed == len(reader.dispatches) and timed > 0
    reason = (
        f"median of {passes} replays of the captured frame, each dispatch between two GPU timestamps"
        if ok
        else f"the replay timed {timed} of {len(reader.dispatches)} dispatches"
    )
    if why_not and ok:
        reason += f" ({why_not}: these are times on {device})"
    return {
        "kind": "replay",
        "ok": ok,
        "device": device,
        "reason": reason,
        "passes": passes,
        "seconds": round(time.monotonic() - started, 3),
        "dispatches": [
            {
                key: getattr(d, key)
                for key in ("index", "event_id", "workgroup_count", "gpu_duration_us", "gpu_duration_us_min")
            }
            for d in reader.dispatches
        ],
    }


def _emit(record: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--module-dir", action="append", default=[])
    parser.add_argument("--probe", action="store_true")
    parser.add_argument("--replay", action="store_true")
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--deadline", type=float, default=0.0, help="seconds after which this process ends itself")
    parser.add_argument("capture", nargs="?")
    args = parser.parse_args(argv)
    if args.deadline > 0:
        # The caller kills us at its deadlines; this is for a caller that died first (SIGKILL, SIGTERM).
        signal.alarm(max(1, math.ceil(args.deadline)))
    sys.path.extend(args.module_dir)
    try:
        rd = importlib.import_module("renderdoc")
    except ImportError as exc:
        _emit({"kind": "error", "missing_module": True, "python": sys.version.split()[0], "message": str(exc)})
        return 3
    version = sys.version.split()[0]
    # Importing is not enough: under some other Pythons the module imports, then aborts here.
    rd.InitialiseReplay(rd.GlobalEnvironment(), [])
    capture = rd.OpenCaptureFile()
    if args.probe or not args.capture:
        capture.Shutdown()
        rd.ShutdownReplay()
        _emit({"kind": "probe", "renderdoc": rd.GetVersionString(), "python": version, "module": rd.__file__})
        return 0
    try:
        status = capture.OpenFile(args.capture, "", None)
        if not status.OK():
            _emit({"kind": "error", "message": f"RenderDoc cannot open it ({status.Message().splitlines()[0]})"})
            return 1
        try:
            reader, structure = read_structure(rd, capture)
        except ValueError as exc:
            _emit({"kind": "error", "message": str(exc)})
            return 1
        structure["reader"] = f"renderdoc {rd.GetVersionString()} module, Python {version} ({sys.executable})"
        _emit(structure)
        if args.replay:
            try:
                _emit(replay(rd, capture, reader, max(1, args.passes)))
            except Exception as exc:  # a replay failure must not lose the structure already sent
                _emit({"kind": "replay", "ok": False, "device": None, "reason": f"the replay failed: {exc}"})
    finally:
        capture.Shutdown()
        rd.ShutdownReplay()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
