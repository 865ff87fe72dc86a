"""One IREE module loaded on one or more HAL devices, called and read back.

This is the only place that touches `iree.runtime` objects during a run. It
splits a run into the phases gputop reports (device and module load,
parameters, context creation, calls) so each can be timed on its own, picks
the fastest way to bring parameters in on each backend, and reads results
back through a host staging buffer where the direct path is broken (lavapipe
refuses to import host pointers that are not 4096-byte aligned).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from gputop.core.errors import RuntimeFailure, UsageError
from gputop.core.files import require_file
from gputop.core.module.results import FunctionResults, function_results
from gputop.core.module.signature import FunctionSignature, signature_of
from gputop.core.params.archive import PARAMETER_SUFFIXES, ParameterEntry, archive_kind, read_archive
from gputop.core.params.streamed_load import ParameterStream, StreamOptions
from gputop.core.processes import first_line
from gputop.core.records.devices import DeviceInfo
from gputop.core.records.memory import PoolStats

__all__ = [
    "PARAMETER_MODES",
    "PARAMETER_SUFFIXES",
    "IreeModuleRun",
    "parameter_mode_for",
    "parse_pool_statistics",
]

# How parameters reach the device: gputop's own streamed loader, or one of IREE's (`auto` picks per device).
PARAMETER_MODES = ("auto", "streamed", "mmap", "file_async")
_POOL_LINE = re.compile(
    r"^\s*(?P<type>[A-Z_|]+):\s+(?P<peak>\d+)B peak /\s+(?P<alloc>\d+)B allocated /"
    r"\s+(?P<freed>\d+)B freed /\s+(?P<live>\d+)B live"
)


def parameter_mode_for(device: DeviceInfo) -> str:
    """How to bring parameter files in on `device`, fastest measured first (bench/params.py, BENCHMARKS.md).

    CPU devices and software Vulkan (lavapipe) live in host memory, where IREE
    maps the file and copies nothing: mmap (236 MiB model, 64 tensors: 2 ms on
    local-task, 35 ms on lavapipe, against 0.27 s and 1.2 s streamed). GPUs
    with their own memory get gputop's streamed loader: IREE's paths there
    stage one 64 MiB chunk at a time (CUDA) or through 1 MiB slots (Vulkan) and
    freeze the process while they do (param_stream.py says why).
    """
    if device.kind == "gpu" and device.backend in ("cuda", "vulkan", "hip"):
        return "streamed"
    return "mmap"


def _vm_error_line(text: str) -> str:
    """The line that says what went wrong: a Python loader's own exception line, else IREE's first line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if "Exception raised from Python module" in line:
            for later in reversed(lines):
                if re.match(r"^[A-Za-z_.]*(Error|Exception): ", later):
                    return re.sub(r"; while calling import;?$", "", later.split(": ", 1)[1])
    return first_line(text)


def _caused_by_the_model(message: str) -> bool:
    """Failures that IREE's loaders would meet too: a missing key, no room, a stop, the wrong module."""
    marks = ("NOT_FOUND", "no parameter found", "RESOURCE_EXHAUSTED", "OUT_OF_RANGE", "CANCELLED", "INCOMPATIBLE")
    return any(mark in message for mark in marks)


def parse_pool_statistics(device_id: str, text: str) -> tuple[PoolStats, ...]:
    """Rows of `HalAllocator.formatted_statistics`, one per memory type."""
    rows = []
    for line in text.splitlines():
        match = _POOL_LINE.match(line)
        if match:
            rows.append(
                PoolStats(
                    device_id=device_id,
                    memory_type=match.group("type"),
                    peak_bytes=int(match.group("peak")),
                    allocated_bytes=int(match.group("alloc")),
                    freed_bytes=int(match.group("freed")),
                    live_bytes=int(match.group("live")),
                )
            )
    return tuple(rows)


class IreeModuleRun:
    """A module on its devices; methods are called in phase order by the session."""

    def __init__(self, devices: list[DeviceInfo]) -> None:
        import iree.runtime as rt

        self._rt = rt
        self.device_infos = devices
        self.devices: list[Any] = []
        self.instance: Any = None
        self.module: Any = None
        self.parameters_module: Any = None
        self.parameter_mode: str | None = None
        self.parameter_files: list[Path] = []
        self.parameter_entries: tuple[ParameterEntry, ...] = ()
        self.parameter_stream: ParameterStream | None = None
        self.parameter_fallback: str | None = None  # why the streamed loader gave way to IREE's, if it did
        self._scope = "model"
        self.context: Any = None
        self.invoker: Any = None
        self.signature: FunctionSignature | None = None
        self._device_args: list[Any] = []
        self._arg_list: Any = None
        self._vm_function: Any = None
        self._result_count = 1
        self._staging_readback = False

    # -- load ---------------------------------------------------------------
    def open_devices(self) -> None:
        rt = self._rt
        for info in self.device_infos:
            try:
                driver = rt.get_driver(info.backend)
                if info.backend.startswith("local"):
                    device = driver.create_default_device()
                else:
                    index = int(info.id.split(":")[1].split("#")[0])
                    entry = driver.query_available_devices()[index]
                    device = driver.create_device(entry)
            except Exception as exc:
                from gputop.core.errors import DeviceUnavailableError

                raise DeviceUnavailableError(f"{info.id}: cannot open device: {first_line(str(exc))}") from None
            self.devices.append(device)

    def load_module(self, vmfb: Path) -> None:
        rt = self._rt
        require_file(vmfb)
        self.instance = rt.VmInstance()
        try:
            self.module = rt.VmModule.mmap(self.instance, str(vmfb))
        except Exception as exc:
            raise RuntimeFailure(f"{vmfb}: not a valid IREE module ({first_line(str(exc))})") from None

    def read_parameters(self, paths: list[Path]) -> tuple[ParameterEntry, ...]:
        """Every parameter of the files, from their indexes only (nothing is loaded yet)."""
        entries: list[ParameterEntry] = []
        for path in paths:
            archive_kind(path)
            entries.extend(read_archive(path))
        self.parameter_files = list(paths)
        self.parameter_entries = tuple(entries)
        return self.parameter_entries

    def load_parameters(
        self,
        paths: list[Path],
        scope: str = "model",
        *,
        mode: str = "auto",
        on_progress: Callable[[int, int], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        options: StreamOptions | None = None,
    ) -> None:
        """Prepare the parameters module; the bytes move when `create_context` runs the module's initializer."""
        if not paths:
            return
        if self.parameter_files != list(paths):
            self.read_parameters(paths)
        if mode == "auto":
            mode = parameter_mode_for(self.device_infos[0])
        if mode == "streamed" and len(self.devices) > 1:
            mode, self.parameter_fallback = "mmap", "the streamed loader serves one device; IREE's mmap serves several"
        if mode == "streamed" and any(e.external for e in self.parameter_entries):
            mode, self.parameter_fallback = "mmap", "an archive names parameters in other files: IREE reads those"
        self.parameter_mode = mode
        self._scope = scope
        if self.parameter_stream is not None:
            self.parameter_stream.release_staging()
        if mode == "streamed":
            if options is None:
                # CUDA stages through imported memory (measured there: BENCHMARKS.md, issue 32); Vulkan and the
                # rest through the driver's own pinned allocations.
                options = StreamOptions(imported_staging=self.device_infos[0].backend == "cuda")
            self.parameter_stream = ParameterStream(
                self.devices[0],
                self.parameter_entries,
                scope=scope,
                options=options,
                on_progress=on_progress,
                should_stop=should_stop,
            )
            self.parameters_module = self.parameter_stream.module(self.instance)
        else:
            self.parameter_stream = None
            self.parameters_module = self._native_parameters(paths, scope, mode)

    def _native_parameters(self, paths: list[Path], scope: str, mode: str) -> Any:
        rt = self._rt
        index = rt.ParameterIndex()
        for path in paths:
            kind = PARAMETER_SUFFIXES[path.suffix]
            try:
                if mode == "mmap":
                    index.load(str(path))
                else:
                    index.load(str(path), mode=mode)
            except Exception as exc:
                raise RuntimeFailure(f"{path}: not a valid {kind} parameter file ({first_line(str(exc))})") from None
        return rt.create_io_parameters_module(self.instance, index.create_provider(scope=scope))

    def create_context(self, function: str | None) -> FunctionSignature:
        rt = self._rt
        hal_module = rt.create_hal_module(
            self.instance,
            devices=self.devices if len(self.devices) > 1 else None,
            device=self.devices[0] if len(self.devices) == 1 else None,
        )
        modules = [hal_module]
        if self.parameters_module is not None:
            modules.append(self.parameters_module)
        modules.append(self.module)
        try:
            self.context = rt.VmContext(self.instance, modules=modules)
        except Exception as exc:
            message = _vm_error_line(str(exc))
            if self.parameter_stream is not None and not _caused_by_the_model(message):
                # The streamed loader is gputop's own: if it fails for a reason of its own, IREE's path
                # still gets the run going, and the log says why.
                self.parameter_fallback = f"the streamed loader failed ({message}); IREE's mmap loads instead"
                self.load_parameters(self.parameter_files, self._scope, mode="mmap")
                return self.create_context(function)
            compiled_for = re.search(r'#hal\.device\.target<"(?P<target>[\w-]+)"', message)
            if "INCOMPATIBLE" in message and compiled_for:
                message = (
                    f"the module was compiled for {compiled_for.group('target')}, "
                    f"not for {self.device_infos[0].id} ({self.device_infos[0].backend}); recompile from the .mlir"
                )
            elif "executable format" in message or "no supported executable" in message.lower():
                message = f"the module was not compiled for {self.device_infos[0].id}: {message}"
            elif missing := re.search(r"no parameter found in index with key '([^']*)'", message):
                files = ", ".join(p.name for p in self.parameter_files) or "no parameter file (--params)"
                message = f"the module needs parameter '{missing.group(1)}', which is not in {files}"
            elif "'io_parameters' not registered" in message:
                message = "the module reads its weights from a parameter file: give it with --params FILE.irpa"
            elif "parameter" in message.lower() and "not found" in message.lower():
                message = f"a parameter the module needs is missing: {message}"
            raise RuntimeFailure(f"context creation failed: {message}") from None
        name = function or self.default_function()
        exported = self.exported_functions()
        if name not in exported:
            raise UsageError(f"no function {name!r} in the module (it exports: {', '.join(exported) or 'nothing'})")
        vm_function = self.module.lookup_function(name)
        self._vm_function = vm_function
        self.signature = signature_of(vm_function)
        self._result_count = max(1, len(self.signature.outputs))
        if self.signature.is_async:
            raise UsageError(f"{name} uses the async ABI; compile with the default (sync) execution model")
        self.invoker = rt.FunctionInvoker(self.context, self.devices[0], vm_function)
        return self.signature

    def exported_functions(self) -> list[str]:
        names = [n for n in self.module.function_names if not n.startswith("__")]
        # IREE adds "NAME$async" beside each sync export of imported models; callers want NAME.
        return [n for n in names if not (n.endswith("$async") and n.removesuffix("$async") in names)]

    def function_results(self) -> list[FunctionResults]:
        """Each exported function's results, read from the loaded module (its declarations and calling
        conventions), for the Exports pane of a one-device run."""
        return function_results(self.module, self.exported_functions())

    def default_function(self) -> str:
        names = self.exported_functions()
        if not names:
            raise UsageError("the module exports no function to call")
        return names[0]

    # -- calls --------------------------------------------------------------
    def upload(self, arrays: list[np.ndarray]) -> None:
        """Put the inputs on the device once, so steady calls time only the work.

        Each tensor (or `!hal.buffer_view` argument) becomes one buffer view,
        each scalar argument a VM value of its type (an i1 as the i32 0 or 1, as
        iree-run-module passes it); they are also packed once into the argument
        list that every steady call reuses, as iree-benchmark-module does.
        """
        rt = self._rt
        device = self.devices[0]
        kinds = self.signature.inputs if self.signature is not None and self.signature.declared else ()
        scalar = [index < len(kinds) and kinds[index].is_scalar for index in range(len(arrays))]
        args: list[Any] = []
        try:
            for a, is_scalar in zip(arrays, scalar, strict=True):
                if is_scalar:
                    value = np.asarray(a).item()
                    args.append(int(value) if isinstance(value, bool) else value)
                    continue
                view = device.allocator.allocate_buffer_copy(
                    memory_type=rt.MemoryType.DEVICE_LOCAL,
                    allowed_usage=rt.BufferUsage.DEFAULT,
                    device=device,
                    # ascontiguousarray makes a 0-d array 1-d: a scalar tensor input would be refused.
                    buffer=np.ascontiguousarray(a).reshape(a.shape),
                    element_type=rt.array_interop.map_dtype_to_element_type(a.dtype),
                )
                args.append(rt.DeviceArray(device, view))
        except Exception as exc:
            raise RuntimeFailure(f"cannot upload inputs: {first_line(str(exc))}") from None
        self._device_args = args
        self._arg_list = rt.VmVariantList(len(args))
        for arg in args:
            if isinstance(arg, float):
                self._arg_list.push_float(arg)
            elif isinstance(arg, int):
                self._arg_list.push_int(arg)
            else:
                self._arg_list.push_ref(arg._buffer_view)

    def call(self) -> list[Any]:
        """Call the function once, results as device arrays (the first call, whose outputs are read back).

        Sync-ABI calls return after the device signalled.
        """
        try:
            result = self.invoker(*self._device_args)
        except Exception as exc:
            raise RuntimeFailure(f"call failed: {_call_failure(exc)}") from None
        if result is None:
            return []
        return list(result) if isinstance(result, (tuple, list)) else [result]

    def steady_call(self) -> None:
        """One call as `iree-benchmark-module` makes it: invoke with the packed inputs, release the results.

        No Python objects are made per call (the function invoker builds an
        argument list and wraps every result): gputop's synced call time is the
        tool's, not the bindings' marshalling on top of it.
        """
        results = self._rt.VmVariantList(self._result_count)
        try:
            self.context.invoke(self._vm_function, self._arg_list, results)
        except Exception as exc:
            raise RuntimeFailure(f"call failed: {_call_failure(exc)}") from None
        del results  # the results are released inside the call's time, as the tool resizes its outputs to 0

    def timed_calls(self, calls: int) -> list[float]:
        """`calls` steady calls, each one's synced wall time in seconds."""
        walls = []
        for _ in range(calls):
            started = time.perf_counter()
            self.steady_call()
            walls.append(time.perf_counter() - started)
        return walls

    def read_back(self, results: list[Any]) -> list[np.ndarray]:
        return [self._to_numpy(r) for r in results]

    def _to_numpy(self, value: Any) -> np.ndarray:
        if not isinstance(value, self._rt.DeviceArray):
            return np.asarray(value)
        if not self._staging_readback:
            try:
                return np.array(value.to_host(), copy=True)
            except Exception as exc:
                if "minImportedHostPointerAlignment" not in str(exc):
                    raise RuntimeFailure(f"reading results failed: {first_line(str(exc))}") from None
                # lavapipe: importing numpy memory fails; use a staging buffer from now on.
                self._staging_readback = True
        return self._copy_through_staging(value)

    def _copy_through_staging(self, value: Any) -> np.ndarray:
        rt = self._rt
        view = value._buffer_view
        device = value._device
        source = view.get_buffer()
        staging = device.allocator.allocate_buffer(
            memory_type=int(rt.MemoryType.HOST_LOCAL | rt.MemoryType.DEVICE_VISIBLE),
            allowed_usage=int(rt.BufferUsage.TRANSFER_TARGET | rt.BufferUsage.MAPPING_SCOPED),
            allocation_size=source.byte_length(),
        )
        semaphore = device.create_semaphore(0)
        device.queue_copy(
            source,
            staging,
            wait_semaphores=rt.HalFence.create_at(semaphore, 0),
            signal_semaphores=rt.HalFence.create_at(semaphore, 1),
        )
        rt.HalFence.create_at(semaphore, 1).wait()
        mapped = staging.map()
        dtype = rt.HalElementType.map_to_dtype(view.element_type)
        return np.array(mapped.asarray(view.shape, dtype), copy=True)

    # -- memory and teardown ------------------------------------------------
    def pool_statistics(self) -> list[tuple[str, tuple[PoolStats, ...]]]:
        rows = []
        for info, device in zip(self.device_infos, self.devices, strict=False):
            try:
                text = device.allocator.formatted_statistics
            except Exception:
                continue
            rows.append((info.id, parse_pool_statistics(info.id, text)))
        return rows

    def allocated_device_bytes(self) -> dict[str, tuple[int, int]]:
        """Each device's allocator's device bytes allocated so far and their peak (`statistics`), by device id;
        a device whose statistics cannot be read is left out."""
        allocated = {}
        for info, device in zip(self.device_infos, self.devices, strict=False):
            try:
                stats = device.allocator.statistics
                allocated[info.id] = (int(stats["device_bytes_allocated"]), int(stats["device_bytes_peak"]))
            except Exception:
                continue
        return allocated

    def close(self) -> None:
        """Drop every runtime object, context first, so device memory is returned."""
        self._device_args = []
        self._arg_list = None
        self._vm_function = None
        self.invoker = None
        self.context = None
        if self.parameter_stream is not None:
            self.parameter_stream.release_staging()  # kept for the stream's later loads until now
        self.parameters_module = None
        self.module = None
        self.instance = None
        self.devices = []


def _call_failure(exc: Exception) -> str:
    message = first_line(str(exc))
    if "RESOURCE_EXHAUSTED" in message or "out of memory" in message.lower():
        message = f"the device ran out of memory: {message}"
    return message
