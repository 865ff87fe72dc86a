"""The wrappers of iree.runtime: each times a call of the program's and leaves a record for the agent's thread.

`VmContext.invoke` (a call: a tuple on the deque, about 1 us) and
`FunctionInvoker.__call__` (the call as the program sees it, and the results it holds
on to) are wrapped in place, as are the runtime's phases (instance, device, module,
parameters, context: a dict on the deque). A wrapper that fails stops recording its
area and puts its originals back; the program's arguments, results and exceptions
pass through untouched.
"""

from __future__ import annotations

import os
import sys
import time

from .describe import (
    argument,
    buffer_size,
    context_details,
    describe_add_buffer,
    describe_add_splat,
    describe_instance,
    describe_io_module,
    describe_module,
    describe_provider,
    describe_register,
    entry_bytes,
    file_size,
    parameters,
)
from .helpers import FAULT_POINT, READ, Patch, Tracked, fault
from .state import AgentState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any

    from .describe import Describe

__all__ = ["RuntimeWrappers"]

_HERE = os.path.dirname(os.path.abspath(__file__))  # the watcher's folder: frames from its files are its own


class RuntimeWrappers(AgentState):
    """The agent's wrappers of the runtime's classes and functions, and the describers that read its state."""

    def _wrap_runtime(self) -> None:
        runtime = self.runtime
        binding = sys.modules.get("iree.runtime._binding") or runtime
        self._patch_method(runtime.VmContext, "invoke", self._invoke_wrapper, area="calls")
        invoker = getattr(runtime, "FunctionInvoker", None)
        if invoker is not None:
            self._patch_method(invoker, "__call__", self._invoker_wrapper, area="results")
        device_array = getattr(runtime, "DeviceArray", None)
        if device_array is not None and "_transfer_to_host" in device_array.__dict__:
            self._patch_method(device_array, "_transfer_to_host", self._read_back_wrapper, area="results")
        self._patch_constructor(runtime.VmInstance, "instance", describe_instance)
        for name in ("create_device", "create_device_by_uri", "create_default_device"):
            self._patch_phase(runtime.HalDriver, name, "device", self._describe_device(name))
        for function_name in ("get_cached_hal_driver",):
            self._patch_function(binding, function_name, self._driver_wrapper, area="device")
        for name, how in (
            ("mmap", "mmap"),
            ("copy_buffer", "copy"),
            ("from_flatbuffer", "flatbuffer"),
            ("from_buffer", "buffer"),
            ("wrap_buffer", "wrap"),
        ):
            self._patch_phase(runtime.VmModule, name, "module", describe_module(how), static=True)
        index = runtime.ParameterIndex
        self._patch_phase(index, "load", "parameters", self._describe_index_load, before=len)
        self._patch_phase(index, "load_from_file_handle", "parameters", self._describe_index_load, before=len)
        self._patch_phase(index, "add_buffer", "parameters", describe_add_buffer)
        self._patch_phase(index, "add_splat", "parameters", describe_add_splat)
        self._patch_phase(index, "add_from_file_handle", "parameters", self._describe_add_from_file_handle)
        self._patch_phase(index, "create_provider", "parameters", describe_provider)
        self._patch_phase(runtime.FileHandle, "wrap_fd", "parameters", self._remember_fd, static=True)
        self._patch_function(
            binding,
            "create_io_parameters_module",
            lambda original: self._timed("parameters", original, describe_io_module, None, "phases"),
            area="phases",
        )
        self._patch_constructor(runtime.VmContext, "context", self._describe_context_create, weak=True)
        self._patch_phase(runtime.VmContext, "register_modules", "context", describe_register)

    def _patch_constructor(self, base: type, phase: str, describe: Describe, weak: bool = False) -> None:
        """Time construction through a subclass that takes the type's name in the runtime's modules.

        A nanobind type built for Python 3.12 or newer constructs through its own
        vectorcall, past `__init__`: assigning `base.__init__` in place is never called
        there (it is on 3.11). A Python subclass constructs the ordinary way, and the
        wrapper runs on every Python; with `weak` its instances also take weak references,
        which is how a context's end is seen. Instances are of the subclass, which has the
        base's name, module and doc, so `isinstance(x, VmContext)`, `type(x) is
        rt.VmContext` and its repr read as before.
        """
        timed = self._timed(phase, base.__dict__["__init__"], describe, None, "phases")
        _describe_wrapper(timed, base.__dict__["__init__"])
        namespace = {
            "__slots__": ("__weakref__",) if weak else (),
            "__init__": timed,
            "__module__": base.__module__,
            "__qualname__": base.__qualname__,
            "__doc__": base.__doc__,
        }
        subclass = type(base)(base.__name__, (base,), namespace)
        home = sys.modules.get(base.__module__) or self.runtime
        self._patch_function(home, base.__name__, lambda original: subclass, area="phases")

    def _patch_method(self, owner: type, name: str, make: Callable[[Any], Any], area: str) -> None:
        original = owner.__dict__[name]
        wrapper = make(original)
        _describe_wrapper(wrapper, original)
        self.patches.append(Patch(owner, name, original, area))
        setattr(owner, name, wrapper)

    def _patch_phase(
        self,
        owner: type,
        name: str,
        phase: str,
        describe: Describe,
        static: bool = False,
        before: Callable[[Any], Any] | None = None,
    ) -> None:
        original = owner.__dict__.get(name)
        if original is None:
            return  # an older or newer runtime without this entry point
        wrapper: Any = self._timed(phase, original, describe, before, "phases")
        _describe_wrapper(wrapper, original)
        self.patches.append(Patch(owner, name, original, "phases"))
        setattr(owner, name, staticmethod(wrapper) if static else wrapper)

    def _patch_function(self, home: ModuleType, name: str, make: Callable[[Any], Any], area: str) -> None:
        """Rebind a module-level function where it is defined and wherever the runtime's modules imported it."""
        original = getattr(home, name, None)
        if original is None:
            return
        wrapper = make(original)
        if not isinstance(wrapper, type):
            _describe_wrapper(wrapper, original)
        for module in [home, *[m for n, m in list(sys.modules.items()) if n.startswith("iree.runtime") and m]]:
            if getattr(module, name, None) is original:
                self.patches.append(Patch(module, name, original, area))
                setattr(module, name, wrapper)

    def _invoke_wrapper(self, original: Any) -> Callable[..., Any]:
        clock = time.perf_counter_ns
        append: Callable[[Any], None] = self.records.append
        if FAULT_POINT == "invoke":
            append = _raiser("invoke")
        stop = self.stop_recording
        named = self.names.get
        name = self._name_function
        agent = self

        def note(context: Any, args: tuple[Any, ...], kwargs: dict[str, Any], start: int, end: int) -> None:
            try:
                function = args[0] if args else kwargs["function"]
                tracked = named(id(function))
                if tracked is None or tracked.obj is not function:
                    tracked = name(function)
                append((tracked.label, id(context), start, end))
            except Exception as exc:
                stop("calls", exc, area="calls")

        outer = self.outer_call

        def invoke(context: Any, *args: Any, **kwargs: Any) -> Any:
            if agent.profile is not None:  # the one check a call pays outside a profile
                return profiled(context, args, kwargs)
            start = clock()
            result = original(context, *args, **kwargs)
            end = clock()
            try:  # `note`, inlined: a function call would add a tenth of the wrapper's cost to every call
                function = args[0] if args else kwargs["function"]
                tracked = named(id(function))
                if tracked is None or tracked.obj is not function:
                    tracked = name(function)
                waiting = getattr(outer, "record", None)
                if waiting is not None:  # inside a FunctionInvoker call: it times the call, arguments and all
                    waiting.append((tracked.label, id(context), start, end))
                else:
                    append((tracked.label, id(context), start, end))
                    agent.last_label = tracked.label
            except Exception as exc:
                stop("calls", exc, area="calls")
            return result

        def profiled(context: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            """A call while a profile is armed or running: `invoke`'s work with the call's window on CUPTI's clock.

            Only the thread that makes the first call after the request is profiled (its
            calls follow one another, so their windows do not overlap); other threads' calls
            pass as usual. `begin_call` and `end_call` never raise: the call's result and
            exceptions are the runtime's own.
            """
            profile = agent.profile
            mine = profile is not None and profile.begin_call()
            start = clock()
            try:
                result = original(context, *args, **kwargs)
            finally:
                end = clock()
                if mine and profile is not None:
                    profile.end_call()
            note(context, args, kwargs, start, end)
            return result

        return invoke

    def _name_function(self, function: Any) -> Tracked:
        """Read a function's name on the program's thread, once: a VmFunction does not keep its module alive.

        The agent's thread reading it later crashed the interpreter when the program had
        dropped the module meanwhile. The function stays held (see `unused`), so that its
        id is not reused while the cache names it.
        """
        tracked = Tracked(f"{function.module_name}.{function.name}", function)
        self.names[id(function)] = tracked
        return tracked

    def _invoker_wrapper(self, original: Any) -> Callable[..., Any]:
        """`FunctionInvoker.__call__`: the call as the program sees it, taken apart.

        Its record is `(label, context, start, end, invoke_start, invoke_end, argument_bytes, same)`: the
        arguments (the program's numpy arrays made into device buffers: allocation and upload) run from
        `start` to the inner `VmContext.invoke`'s start, the VM call is the invoke, and the results (wrapped
        as DeviceArrays) from its end to `end`. `argument_bytes` counts the numpy arrays passed (DeviceArrays
        move nothing); `same` is 1 when every one of them is the very array the previous call of this
        invoker was given (see `_arguments_seen`), the upload a loop repeats.
        """
        hold = self._result_holder()
        arguments_of = self._arguments_seen()
        at_fault = FAULT_POINT == "results"
        outer = self.outer_call
        clock = time.perf_counter_ns
        append = self.records.append
        agent = self
        held = self.held

        def call(invoker: Any, *args: Any, **kwargs: Any) -> Any:
            # The program's call is this one, arguments in and results out: its invoke inside leaves its record
            # here, and the record goes out with this call's times (what the program's own timer around it sees).
            enclosing = getattr(outer, "record", None)
            inner: list[Any] = []
            outer.record = inner
            start = clock()
            try:
                result = original(invoker, *args, **kwargs)
            finally:
                end = clock()
                outer.record = enclosing
                for label, context, invoke_start, invoke_end in inner[:1]:
                    nbytes, same = arguments_of(invoker, args)
                    append((label, context, start, end, invoke_start, invoke_end, nbytes, same))
                    agent.last_label = label
            try:
                if at_fault:
                    fault("results")
                if inner:
                    hold(result, 0, inner[0][0])
                    agent.invoker_calls += 1
                    if len(held) > agent.held_peak[0]:  # the most held at once, and after how many calls
                        agent.held_peak = (len(held), agent.held_bytes, agent.invoker_calls)
            except Exception as exc:
                self.stop_recording("held results", exc, area="results")
            return result

        return call

    def _arguments_seen(self) -> Callable[[Any, tuple[Any, ...]], tuple[int, int]]:
        """A call's numpy arguments: their bytes, and 1 when they are the previous call's very arrays (a weak
        reference says so: an id can be reused by a new array in the same place)."""
        import weakref

        arrays_of: Any = ()  # what a numpy argument is an instance of (nothing, without numpy)
        try:
            import numpy

            arrays_of = numpy.ndarray
        except ImportError:  # iree.runtime needs numpy; without it no argument is counted
            pass
        previous: dict[int, tuple[weakref.ref[Any], ...]] = {}

        def seen(invoker: Any, args: tuple[Any, ...]) -> tuple[int, int]:
            # Few objects made per call: every allocation brings the garbage collector's next pass closer, and
            # a full pass over a program holding numpy and IREE costs its calls milliseconds.
            try:
                nbytes = count = 0
                before = previous.get(id(invoker), ())
                same = bool(before)
                for a in args:
                    if isinstance(a, arrays_of):
                        if same and (count >= len(before) or before[count]() is not a):
                            same = False
                        nbytes += a.nbytes
                        count += 1
                if not count:
                    return 0, 0
                if not same or len(before) != count:
                    previous[id(invoker)] = tuple(weakref.ref(a) for a in args if isinstance(a, arrays_of))
                    return nbytes, 0
                return nbytes, 1
            except Exception:  # an array that takes no weak reference: not compared
                return 0, 0

        return seen

    def _result_holder(self) -> Callable[[Any, int, str], None]:
        """Where a call's DeviceArray results are held by weak reference (`held`: id(ref) -> (ref, bytes, the
        function that returned it), while alive: the count and bytes held, and whose a read back is)."""
        import weakref

        from iree.runtime.array_interop import DeviceArray

        held = self.held
        agent = self

        def forget(ref: weakref.ref[Any]) -> None:
            entry = held.pop(id(ref), None)
            if entry is not None:
                agent.held_bytes -= entry[1]

        def hold(result: Any, depth: int, label: str) -> None:
            if isinstance(result, DeviceArray):
                ref = weakref.ref(result, forget)  # one object a result: the callback is shared
                size = result._buffer_view.byte_length
                held[id(ref)] = (ref, size, label)
                agent.held_bytes += size
            elif depth < 2 and isinstance(result, (tuple, list)):
                for item in result:
                    hold(item, depth + 1, label)
            elif depth < 2 and isinstance(result, dict):
                for item in result.values():
                    hold(item, depth + 1, label)

        return hold

    def _read_back_wrapper(self, original: Any) -> Callable[..., Any]:
        """`DeviceArray._transfer_to_host`, under `to_host()` and `np.asarray(result)`: a read back, timed.

        Its record is `(READ, label, start, end, bytes)`, the function whose result it is (by the result's
        origin, else the function called last). A mappable array maps once and hands the same host array
        after: only a read that moves or maps memory is recorded.
        """
        import weakref

        clock = time.perf_counter_ns
        append = self.records.append
        held = self.held
        agent = self

        def origin(array: Any) -> str:
            """The function whose result `array` is (its weak reference in `held`), else the one called last."""
            for ref in weakref.getweakrefs(array):
                entry = held.get(id(ref))
                if entry is not None:
                    return str(entry[2])
            return agent.last_label

        def transfer(array: Any, *args: Any, **kwargs: Any) -> Any:
            if getattr(array, "_host_array", None) is not None:
                return original(array, *args, **kwargs)  # mapped already: nothing moves
            start = clock()
            host = original(array, *args, **kwargs)
            end = clock()
            try:
                append((READ, origin(array), start, end, array._buffer_view.byte_length))
            except Exception as exc:
                self.stop_recording("reads of results", exc, area="results")
            return host

        return transfer

    def _timed(
        self, phase: str, original: Any, describe: Describe, before: Callable[[Any], Any] | None, area: str
    ) -> Callable[..., Any]:
        clock = time.perf_counter
        records = self.records
        at_fault = FAULT_POINT == "phase"

        def timed(*args: Any, **kwargs: Any) -> Any:
            ahead = None
            if before is not None and args:
                try:
                    ahead = before(args[0])
                except Exception:
                    ahead = None
            start = clock()
            result = original(*args, **kwargs)
            seconds = clock() - start
            try:
                if at_fault:
                    fault("phase")
                details = describe(args, kwargs, result, ahead)
                if details is not None:
                    records.append({"kind": "phase", "name": phase, "start": start, "seconds": seconds, **details})
            except Exception as exc:
                self.stop_recording(f"phases (at a {phase!r} phase)", exc, area=area)
            return result

        return timed

    def _driver_wrapper(self, original: Any) -> Callable[..., Any]:
        clock = time.perf_counter

        def get_cached_hal_driver(*args: Any, **kwargs: Any) -> Any:
            start = clock()
            driver = original(*args, **kwargs)
            seconds = clock() - start
            try:
                key = id(driver)
                if key not in self.drivers:
                    self.drivers[key] = str(args[0] if args else kwargs.get("device_uri", ""))
                    self.driver_seconds[key] = seconds
            except Exception as exc:
                self.stop_recording("device phases", exc, area="device")
            return driver

        return get_cached_hal_driver

    def _describe_device(self, how: str) -> Describe:
        def describe(args: tuple[Any, ...], kwargs: dict[str, Any], device: Any, ahead: Any) -> dict[str, Any]:
            driver = args[0]
            name = self.drivers.get(id(driver), "").split("://")[0].split(":")[0] or None
            uri: str | None = None
            if how == "create_device_by_uri":
                uri = str(args[1] if len(args) > 1 else kwargs.get("device_uri"))
                name = name or uri.split(":")[0]
            elif how == "create_device":
                which = args[1] if len(args) > 1 else kwargs.get("device_id", kwargs.get("device_info"))
                where = (which.get("path") or which.get("device_id")) if isinstance(which, dict) else which
                uri = f"{name or 'device'}://{where}"
            label = uri or name or "device"
            with self.devices_lock:
                self.devices.append(Tracked(label, device))
                self.device_drivers.add(name or "unknown")
            return {"uri": uri, "driver": name, "driver_seconds": self.driver_seconds.pop(id(driver), 0.0)}

        return describe

    def _describe_index_load(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, before: Any
    ) -> dict[str, Any]:
        index, source = args[0], argument(args, kwargs, 1, "file_path") or kwargs.get("file_handle")
        tensors = len(index) - before if isinstance(before, int) else None
        if isinstance(source, (str, os.PathLike)):
            mmap = args[5] if len(args) > 5 else kwargs.get("mmap")
            mode = kwargs.get("mode") or ("preload" if mmap is False else "mmap")
            path = os.fspath(source)
            files, size, through, api = [path], file_size(path), "file handle", "load"
        else:
            mode, api = "file_handle", "load_from_file_handle"
            files, size, through = self._file_handle_source(source)
        added = entry_bytes(index, before)  # the tensors' bytes, not the archive's (its header and padding)
        details = parameters(api, mode, files, added if added is not None else size, tensors, through, index)
        details["file_bytes"] = size
        return details

    def _describe_add_from_file_handle(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, before: Any
    ) -> dict[str, Any]:
        files, _, through = self._file_handle_source(argument(args, kwargs, 2, "file_handle"))
        size = int(argument(args, kwargs, 3, "length"))
        return parameters("add_from_file_handle", None, files, size, 1, through, args[0])

    def _file_handle_source(self, handle: Any) -> tuple[list[str], int | None, str]:
        if getattr(handle, "is_host_allocation", False):
            return [], buffer_size(handle.host_allocation), "host memory"
        fd = self.file_handles.get(id(handle))
        if fd is None:
            return [], None, "file handle"
        try:
            return [os.readlink(f"/proc/self/fd/{fd}")], os.fstat(fd).st_size, "file handle"
        except OSError:
            return [], None, "file handle"

    def _remember_fd(self, args: tuple[Any, ...], kwargs: dict[str, Any], handle: Any, ahead: Any) -> None:
        if len(self.file_handles) > 256:
            self.file_handles.clear()
        self.file_handles[id(handle)] = int(args[0] if args else kwargs["fd"])
        return None

    def _describe_context_create(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, ahead: Any
    ) -> dict[str, Any]:
        import weakref

        vm_context = args[0]
        finalizer = weakref.finalize(vm_context, self._context_gone, id(vm_context))
        finalizer.atexit = False
        self.finalizers = [f for f in self.finalizers if f.alive]
        self.finalizers.append(finalizer)
        return context_details("create", args, kwargs)

    def _context_gone(self, context: int) -> None:
        if not self.finished:
            now = time.perf_counter()
            self.records.append(
                {"kind": "phase", "name": "context_destroyed", "start": now, "seconds": 0.0, "context": context}
            )

    def _excepthook(self, previous: Callable[..., Any]) -> Callable[..., Any]:
        def excepthook(kind: type[BaseException], value: BaseException, tb: Any) -> Any:
            try:
                if not self.finished and os.getpid() == self.pid:
                    import traceback

                    line = traceback.format_exception_only(kind, value)[-1].strip()
                    message = str(value)
                    self.records.append({"kind": "exception", "type": kind.__name__, "message": message, "line": line})
            except Exception:
                pass
            try:  # noqa: SIM105
                tb = _without_watcher(value, tb)
            except Exception:  # the program's traceback as it came, rather than none
                pass
            return previous(kind, value, tb)

        return excepthook


def _strip(tb: Any) -> Any:
    """`tb` without the watcher's own frames (its wrappers sit between the program's call and the runtime's)."""
    import types

    frames = []
    while tb is not None:
        if _HERE not in tb.tb_frame.f_code.co_filename:
            frames.append(tb)
        tb = tb.tb_next
    rebuilt = None
    for entry in reversed(frames):
        rebuilt = types.TracebackType(rebuilt, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return rebuilt


def _without_watcher(value: BaseException, tb: Any) -> Any:
    """The traceback the program would have printed without gputop: its exception's, and those it chains to,
    with the watcher's frames left out (as pytest hides its own)."""
    seen = set()
    chained: BaseException | None = value
    while chained is not None and id(chained) not in seen:
        seen.add(id(chained))
        if chained.__traceback__ is not None:
            chained.__traceback__ = _strip(chained.__traceback__)
        chained = chained.__cause__ or chained.__context__
    return _strip(tb)


def _describe_wrapper(wrapper: Any, original: Any) -> None:
    for attribute in ("__name__", "__qualname__", "__doc__"):
        try:  # noqa: SIM105
            setattr(wrapper, attribute, getattr(original, attribute))
        except (AttributeError, TypeError):
            pass


def _raiser(point: str) -> Callable[[Any], None]:
    def fail(_: Any) -> None:
        fault(point)

    return fail
