"""The part of gputop that runs inside a watched Python program, fed to it through PYTHONPATH.

`gputop -- python app.py` puts this folder first on the program's PYTHONPATH; the
`sitecustomize` beside this file calls `install_from_environment()`, which only puts
an import hook on `sys.meta_path`. The moment the program finishes importing
`iree.runtime`, the hook connects to gputop's engine (the Unix socket named by
GPUTOP_WATCH_SOCKET), wraps the runtime's classes in place (VmInstance and
VmContext construct through a same-named subclass: see `_patch_constructor`) and
streams what they do as newline-delimited JSON, protocol v1: `hello`, `phase` (instance, device,
module, parameters, context, first_call, context_destroyed), `calls`, `memory`,
`note`, `exception`, `kernels`, `profile_refused`, `bye`; the engine sends requests
back as `{"op": ...}` lines: `ping` (answered `pong`) and `profile` (below). A
program that never imports `iree.runtime` never connects and pays almost nothing.

What it promises the program, which runs in its own environment:
- the standard library only (plus the program's own iree.runtime), Python 3.9 or
  newer; the heavy modules (socket, json, threading) load only when iree does;
- a wrapped `VmContext.invoke` costs an attribute check, two clock reads, a dict lookup and a deque
  append on the program's thread (about 1 us); names, JSON, the socket and memory statistics belong to one
  daemon thread of the agent (drained every 0.25 s, memory every 0.5 s); a profile costs more, during its
  calls only;
- arguments, results and the runtime's own exceptions pass through untouched;
  when a step of the agent's own fails, that recording stops (its original is put
  back) and one `note` event (or, with the socket gone, one stderr line) says so.
  The exit code is never changed.

The stream keeps the order things happened in: one deque takes call tuples and
event dicts from every thread of the program; calls go out in batches (`calls`:
[["module.function", id(context), start_ns, end_ns], ...], perf_counter_ns as the
wrapper read it: the engine divides), and a context's first call is a
`first_call` phase just before the batch that holds it. Other times are perf_counter
seconds; `hello` gives wall and perf_counter read together. Beyond the fields the
engine asked for, phases carry: device `driver_seconds` (the driver's first load,
owed to its first device); module `how` is mmap, copy, flatbuffer, buffer or wrap;
parameters `index` (id of the ParameterIndex), `calls` (add_* calls merged into
one event per drain), `scope` (create_provider), `providers`
(create_io_parameters_module), `through` also "splat"; context `op` ("create",
or "register" for register_modules) and `context_id` (IREE's own).

A profile (CUDA kernel times through NVIDIA's CUPTI activity API) is asked for with
`{"op": "profile", "calls": N, "level": "default", "cupti_paths": [dirs], "python": "3.11"}`.
`cupti-python` is gputop's package, not the program's: `cupti_paths` are the folders of
gputop's environment that hold `cupti` and what it imports, and `python` is gputop's
major.minor (CUPTI's modules are built for one Python). On the agent's thread the request
is refused at once, `{"kind": "profile_refused", "reason": "one line"}`, when a profile is
under way, when the program has made no CUDA device, when its Python differs from
`python`, when `cupti` cannot be imported from those folders (they are on `sys.path` for
the import only; the wheel's libcupti is loaded first, see `_preload_libcupti`) or CUPTI
cannot start: importing it, loading its library and registering its activity callbacks
(once per process) happen there, at the request. Otherwise it is armed: the next call of `VmContext.invoke` enables
CONCURRENT_KERNEL records on the thread that made it, that thread's next N calls (this
one included) are timed on CUPTI's clock (`get_timestamp` before and after), and after the
Nth the records are flushed (`activity_flush_all(1)`) and recording is disabled, still on
that thread; other threads' calls pass as usual. The agent's thread then queues
`{"kind": "kernels", "calls": N, "windows": [[start_ns, end_ns], ...], "records":
[[name, start_ns, end_ns, grid_x, grid_y, grid_z, block_x, block_y, block_z, device_id,
stream_id, correlation_id], ...], "source": "CUPTI 13.4.0", "asked": N, "level": ...,
"library": "/path/libcupti.so.13"}`: every CONCURRENT_KERNEL record CUPTI handed over (any
thread's), times in CUPTI nanoseconds; `source` carries cupti-python's version where its
dist-info folder says it, `library` the libcupti mapped into the process (or null).
`calls` (= len(windows)) is fewer than `asked` when the program ended during the profile
(the calls timed so far; `profile_refused` if none was) or when the records would pass
MAX_KERNEL_RECORDS (then the first whole calls that fit). When a CUPTI step fails, recording is disabled and
`profile_refused` carries the step's one line; the call's result and exceptions are the
runtime's own either way.

GPUTOP_WATCH_FAULT=<point> makes the agent fail on purpose at one point of its
real code path, for tests: hook, connect, patch, invoke, results, phase, drain,
send, memory, command.

It is one module (with `sitecustomize.py` beside it) because it travels into
foreign environments as a plain folder, not as part of the `gputop` package.
"""

from __future__ import annotations

# Only modules every Python has loaded by the time sitecustomize runs (not even contextlib: SIM105 is
# silenced below); the rest load when iree.runtime does.
import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    import threading
    import weakref
    from collections import deque
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any

    Describe = Callable[[tuple[Any, ...], dict[str, Any], Any, Any], "dict[str, Any] | None"]

__all__ = ["PROTOCOL_VERSION", "install", "install_from_environment"]

PROTOCOL_VERSION = 1
SOCKET_ENV = "GPUTOP_WATCH_SOCKET"
FAULT_ENV = "GPUTOP_WATCH_FAULT"
DRAIN_S = 0.25  # a drain holds the GIL: fewer, larger ones stall fewer of the program's calls (bench/watch_overhead.py)
MEMORY_S = 0.5
CONNECT_TIMEOUT_S = 2.0
SEND_TIMEOUT_S = 5.0  # the engine not reading for this long counts as the socket gone
EXIT_TIMEOUT_S = 1.0
CALLS_PER_MESSAGE = 128  # one json.dumps holds the GIL; small batches keep the program's thread moving
# The agent's thread hands the GIL back this often while it drains and encodes (time.sleep(0) releases it): a
# call of the program's that ends meanwhile waits for one short stretch, not for the whole drain.
YIELD_EVERY = 64
MAX_BACKLOG = 200_000  # records waiting after a drain (about 25 MB): past it, calls stop being recorded
CUPTI_BUFFER_BYTES = 8 * 1024 * 1024  # each activity buffer CUPTI asks for (as gputop's own profiler gives)
RECORDS_WAIT_S = 2.0  # how long a profile's result waits for CUPTI's last records before going out without them
# Kernel records in one `kernels` line (about 200 bytes each): the engine takes lines up to 16 MiB (agent_link.py)
MAX_KERNEL_RECORDS = 50_000

_agent: _Agent | None = None
_hook: _RuntimeImportHook | None = None
_cupti: _Cupti | None = None  # CUPTI, once loaded: its activity callbacks are registered once per process


def install_from_environment() -> None:
    """Watch this program if GPUTOP_WATCH_SOCKET names a socket (what sitecustomize calls)."""
    _fault("hook")
    path = os.environ.get(SOCKET_ENV)
    if path:
        install(path)


def install(socket_path: str) -> bool:
    """Watch this program through `socket_path`: now if `iree.runtime` is imported, else when it is.

    Returns:
        False when the agent could not connect (it said why on stderr), True otherwise.
    """
    global _hook
    if _agent is not None:
        return True
    runtime = sys.modules.get("iree.runtime")
    if runtime is not None and hasattr(runtime, "VmContext"):
        return _start(socket_path, runtime)
    if _hook is None:
        _hook = _RuntimeImportHook(socket_path)
        sys.meta_path.insert(0, _hook)
    return True


class _RuntimeImportHook:
    """A meta-path finder that lets the real loader run `iree.runtime`, then starts the agent on it."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self.searching = False

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != "iree.runtime" or self.searching:
            return None
        self.searching = True
        try:
            spec = _spec_from_other_finders(fullname, path, target)
        finally:
            self.searching = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            try:
                run(module)
            finally:
                _forget_instance_attribute(loader, "exec_module")
            self.loaded(module)

        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError):
            spec.loader = _LoaderShim(loader, self.loaded)
        return spec

    def loaded(self, module: ModuleType) -> None:
        global _hook
        try:
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            _hook = None
            _start(self.socket_path, module)
        except Exception as exc:
            _say(f"not watching this program: {_one_line(exc)}")


class _LoaderShim:
    """Stands in for a loader whose `exec_module` cannot be shadowed on the instance (a rare C loader)."""

    def __init__(self, loader: Any, on_loaded: Callable[[ModuleType], None]) -> None:
        self.loader = loader
        self.on_loaded = on_loaded

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        self.on_loaded(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)


def _spec_from_other_finders(fullname: str, path: Any, target: Any) -> Any:
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        if isinstance(finder, _RuntimeImportHook) or find_spec is None:
            continue
        spec = find_spec(fullname, path, target)
        if spec is not None:
            return spec
    return None


def _forget_instance_attribute(owner: Any, name: str) -> None:
    try:  # noqa: SIM105
        delattr(owner, name)
    except AttributeError:
        pass


def _start(socket_path: str, runtime: ModuleType) -> bool:
    global _agent
    if _agent is not None:
        return True
    try:
        _fault("connect")
        connection = _connect(socket_path)
    except Exception as exc:
        _say(f"not watching this program: cannot connect to {socket_path} ({_one_line(exc)})")
        return False
    _agent = _Agent(socket_path, connection, runtime)
    _agent.start()
    return True


def _connect(socket_path: str) -> socket.socket:
    import socket

    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.settimeout(CONNECT_TIMEOUT_S)
        connection.connect(socket_path)
        connection.settimeout(SEND_TIMEOUT_S)
    except BaseException:
        connection.close()
        raise
    return connection


def _say(message: str) -> None:
    try:
        sys.stderr.write(f"gputop: {message}\n")
        sys.stderr.flush()
    except Exception:
        pass


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _InjectedFault(RuntimeError):
    pass


class _Backlog(RuntimeError):
    pass


_FAULT_POINT = os.environ.get(FAULT_ENV)  # read once: the check sits on paths that run per call


def _fault(point: str) -> None:
    if point == _FAULT_POINT:
        raise _InjectedFault(f"injected fault at {point}")


class _Patch:
    """One attribute the agent replaced, and how to put the original back."""

    def __init__(self, owner: Any, name: str, original: Any, area: str) -> None:
        self.owner = owner
        self.name = name
        self.original = original
        self.area = area

    def restore(self) -> None:
        setattr(self.owner, self.name, self.original)


class _Tracked:
    """A runtime object the agent holds strongly only while the program holds it too (see `_Agent.unused`)."""

    def __init__(self, label: str, obj: Any) -> None:
        self.label = label
        self.obj = obj


class _Cupti:
    """gputop's CUPTI (`cupti-python`), imported into this program from gputop's environment, once per process.

    Its activity callbacks are registered once (CUPTI takes one pair per process) and
    keep what CUPTI hands over until the agent's thread takes it.
    """

    def __init__(self, module: Any, source: str) -> None:
        import threading

        self.module = module
        self.kernel_kind = module.ActivityKind.CONCURRENT_KERNEL
        self.source = source
        self.library: str | None = None
        self.lock = threading.Lock()
        self.activities: list[Any] = []

    @staticmethod
    def load(paths: list[str]) -> tuple[_Cupti | None, str]:
        """The process's CUPTI, imported from `paths` (gputop's folders) the first time; else None and why."""
        global _cupti
        if _cupti is not None:
            return _cupti, ""
        if not paths:
            return None, "gputop named no folder to import CUPTI's Python package (cupti) from"
        _preload_libcupti(paths)
        added = [p for p in paths if p not in sys.path]
        sys.path.extend(added)  # after the program's own folders: its own packages come first
        try:
            try:
                from cupti import cupti as module
            except Exception as exc:
                where = ", ".join(paths)
                return None, f"CUPTI's Python package (cupti) cannot be imported from {where}: {_one_line(exc)}"
            try:
                # Its library and the driver load now, on the agent's thread, while gputop's folders are still
                # on the path (cupti-python finds its library through cuda.pathfinder at its first call).
                module.get_timestamp()
                folder = os.path.dirname(os.path.dirname(os.path.abspath(module.__file__ or "")))
                version = _distribution_version(folder, "cupti_python")
                cupti = _Cupti(module, f"CUPTI {version}" if version else "CUPTI")
                module.activity_register_callbacks(cupti.buffer_requested, cupti.buffer_completed)
            except Exception as exc:
                return None, f"CUPTI cannot start in this program: {_one_line(exc)}"
        finally:
            for path in reversed(added):
                _remove_last(sys.path, path)
        cupti.library = _loaded_library("libcupti.so")
        _cupti = cupti
        return cupti, ""

    def buffer_requested(self) -> tuple[int, int]:
        return CUPTI_BUFFER_BYTES, 0

    def buffer_completed(self, activities: list[Any]) -> None:
        with self.lock:
            self.activities.extend(activities)

    def has_records(self) -> bool:
        with self.lock:
            return bool(self.activities)

    def take(self) -> list[Any]:
        with self.lock:
            activities, self.activities = self.activities, []
        return activities

    def clear(self) -> None:
        self.take()


class _Profile:
    """One profile request: armed on the agent's thread; started, timed and ended on the thread of the next call.

    States: armed, running (CUPTI records kernels), over. What a profile costs falls on
    its calls only: `activity_enable` before the first, two `get_timestamp` reads around
    each (CUPTI's clock, the one its records use), `activity_flush_all(1)` and
    `activity_disable` after the last.
    """

    def __init__(self, cupti: _Cupti, calls: int, level: str, on_over: Callable[[_Profile], None]) -> None:
        import threading

        self.cupti = cupti
        self.calls = calls
        self.level = level
        self.on_over = on_over
        self.lock = threading.Lock()
        self.thread_id = threading.get_ident
        self.owner: int | None = None
        self.state = "armed"
        self.started_ns = 0
        self.windows: list[list[int]] = []
        self.error: str | None = None
        self.ended_at = 0.0

    def begin_call(self) -> bool:
        """Whether this call is one of the profile's (starting CUPTI at the first); never raises."""
        with self.lock:
            if self.state == "over":
                return False
            me = self.thread_id()
            if self.owner is None:
                self.owner = me
            elif self.owner != me:
                return False
            module = self.cupti.module
            try:
                if self.state == "armed":
                    self.state = "running"  # a half-done enable is undone as a running profile is
                    module.activity_enable(self.cupti.kernel_kind)
                self.started_ns = int(module.get_timestamp())
                return True
            except Exception as exc:
                self._end_locked(f"CUPTI would not record kernels: {_one_line(exc)}")
        self.on_over(self)
        return False

    def end_call(self) -> None:
        """The call's window; after the last call, CUPTI's records handed over and recording off. Never raises."""
        with self.lock:
            if self.state != "running":
                return
            try:
                self.windows.append([self.started_ns, int(self.cupti.module.get_timestamp())])
                if len(self.windows) < self.calls:
                    return
                self._end_locked(None)
            except Exception as exc:
                self._end_locked(f"CUPTI failed during the profiled calls: {_one_line(exc)}")
        self.on_over(self)

    def stop(self, why: str, keep: bool) -> None:
        """End now, from any thread: with `keep` the calls timed so far are the result, else `why` is the refusal."""
        with self.lock:
            if self.state == "over":
                return
            self._end_locked(None if keep and self.windows else why)
        self.on_over(self)

    def _end_locked(self, error: str | None) -> None:
        module = self.cupti.module
        if self.state == "running":
            try:
                module.activity_flush_all(1)
            except Exception as exc:
                error = error or f"CUPTI could not hand over its records: {_one_line(exc)}"
            try:
                module.activity_disable(self.cupti.kernel_kind)
            except Exception as exc:
                error = error or f"CUPTI could not stop recording: {_one_line(exc)}"
        self.state = "over"
        self.error = error
        self.ended_at = time.monotonic()

    def result(self) -> dict[str, Any]:
        """The `kernels` event (or `profile_refused`), built on the agent's thread from what CUPTI handed over."""
        activities = self.cupti.take()
        if self.error is not None:
            return {"kind": "profile_refused", "reason": self.error}
        try:
            kind = int(self.cupti.kernel_kind)
            rows = [_kernel_row(a) for a in activities if int(getattr(a, "kind", -1)) == kind]
        except Exception as exc:
            return {"kind": "profile_refused", "reason": f"CUPTI's records could not be read: {_one_line(exc)}"}
        windows = self.windows
        if len(rows) > MAX_KERNEL_RECORDS:  # the first whole calls whose kernels fit in one line
            rows.sort(key=lambda row: row[1])
            last = rows[MAX_KERNEL_RECORDS - 1][1]
            windows = [w for w in windows if w[1] <= last]
            end = windows[-1][1] if windows else 0
            rows = [row for row in rows[:MAX_KERNEL_RECORDS] if row[1] <= end]
        return {
            "kind": "kernels",
            "calls": len(windows),
            "asked": self.calls,
            "windows": windows,
            "records": rows,
            "source": self.cupti.source,
            "level": self.level,
            "library": self.cupti.library,
        }


def _kernel_row(record: Any) -> list[Any]:
    """A CONCURRENT_KERNEL record as the protocol's list (times in CUPTI nanoseconds)."""
    return [
        str(record.name),
        int(record.start),
        int(record.end),
        int(record.grid_x),
        int(record.grid_y),
        int(record.grid_z),
        int(record.block_x),
        int(record.block_y),
        int(record.block_z),
        int(record.device_id),
        int(record.stream_id),
        int(record.correlation_id),
    ]


def _preload_libcupti(paths: list[str]) -> None:
    """Load the libcupti of gputop's environment (the nvidia-cuda-cupti wheel's) before cupti-python looks for one.

    cupti-python finds its library through cuda.pathfinder, which searches
    `site.getsitepackages()` (this program's environment, not gputop's), then takes one
    already loaded, then asks the system loader (a CUDA toolkit's libcupti, of whatever
    version: with 13.0's, PM sampling failed where the wheel's worked, PLATFORM.md).
    Loaded first, the wheel's is the one found, as in gputop's own process.
    """
    import ctypes

    for folder in paths:
        for sub in ("nvidia/cu13/lib", "nvidia/cuda_cupti/lib", "nvidia/cu12/lib"):
            lib_dir = os.path.join(folder, sub)
            try:
                names = sorted(os.listdir(lib_dir))
            except OSError:
                continue
            for name in names:
                if name.startswith("libcupti.so"):
                    try:
                        ctypes.CDLL(os.path.join(lib_dir, name), mode=ctypes.RTLD_GLOBAL)
                        return
                    except OSError:
                        continue  # cupti-python's own search follows; a failure there is the refusal


def _loaded_library(prefix: str) -> str | None:
    """The path of the first library whose file name starts with `prefix` mapped into this process."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(None, 5)
                if len(fields) == 6 and os.path.basename(fields[5].strip()).startswith(prefix):
                    return fields[5].strip()
    except OSError:
        pass
    return None


def _distribution_version(folder: str, name: str) -> str | None:
    """The version of distribution `name` (underscored) installed in `folder`, from its dist-info folder's name."""
    try:
        for entry in os.listdir(folder):
            if entry.startswith(name + "-") and entry.endswith(".dist-info"):
                return entry[len(name) + 1 : -len(".dist-info")]
    except OSError:
        pass
    return None


def _remove_last(items: list[str], item: str) -> None:
    for index in range(len(items) - 1, -1, -1):
        if items[index] == item:
            del items[index]
            return


def _shell_join(words: list[str]) -> str:
    import shlex

    return " ".join(shlex.quote(w) for w in words)


class _Agent:
    """The connection, the wrappers, and the thread that drains what the wrappers recorded."""

    def __init__(self, socket_path: str, connection: socket.socket, runtime: ModuleType) -> None:
        import threading
        from collections import deque

        self.socket_path = socket_path
        self.connection: socket.socket | None = connection
        self.runtime = runtime
        self.root_pid = self.pid = os.getpid()
        self.records: deque[Any] = deque()  # call tuples and event dicts, in the order they happened
        self.io_lock = threading.Lock()
        self.devices_lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None
        self.patches: list[_Patch] = []
        self.stopped_areas: set[str] = set()
        self.finished = False
        self.memory_on = True
        self.calls_total = 0
        self.called_contexts: set[int] = set()
        self.names: dict[int, _Tracked] = {}  # id(VmFunction) -> its "module.function" (and it, held)
        self.devices: list[_Tracked] = []
        # A FunctionInvoker call under way on a thread: where its invoke leaves its record (see _invoker_wrapper).
        self.outer_call = threading.local()
        # id(weak reference) -> (it, bytes) for each result of a FunctionInvoker call still alive; keyed by
        # the reference's id since a weak reference hashes as its referent, and DeviceArray does not hash
        self.held: dict[int, tuple[weakref.ref[Any], int]] = {}
        self.drivers: dict[int, str] = {}  # id(HalDriver) -> the uri it was got by
        self.device_drivers: set[str] = set()  # the drivers of every device the program made ("cuda", "vulkan")
        self.driver_seconds: dict[int, float] = {}  # a driver's first load, owed to its first device
        self.file_handles: dict[int, int] = {}  # id(FileHandle) -> the fd it wraps
        self.pending_parameters: dict[str, Any] | None = None
        self.commands = b""
        self.finalizers: list[weakref.finalize] = []
        self.solo_refs = self.refs(_Tracked("probe", object()))
        # A profile: armed by the agent's thread, run by the program's thread, its result sent by the agent's.
        # The wrapped invoke reads `profile` once per call; it is None outside a profile.
        self.profile: _Profile | None = None
        self.profile_ended: _Profile | None = None  # over, its result not sent yet
        self.profile_lock = threading.Lock()

    # -- starting, forking, ending ----------------------------------------------------------------------

    def start(self) -> None:
        import atexit
        import threading

        try:
            _fault("patch")
            self._wrap_runtime()
        except Exception as exc:
            self.stop_recording("the runtime's wrappers", exc, area=None)
        previous = sys.excepthook
        sys.excepthook = self._excepthook(previous)
        atexit.register(self.at_exit)
        register_threading_atexit = getattr(threading, "_register_atexit", None)
        if register_threading_atexit is not None:
            # multiprocessing's forked workers end with os._exit after threading's shutdown, never atexit
            try:  # noqa: SIM105
                register_threading_atexit(self.at_forked_worker_exit)
            except RuntimeError:
                pass
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self.after_fork_in_child)
        self._start_thread()

    def _start_thread(self) -> None:
        import threading

        self.thread = threading.Thread(target=self._run, name="gputop-agent", daemon=True)
        self.thread.start()

    def after_fork_in_child(self) -> None:
        """A forked child is a stream of its own: its own connection, thread and hello."""
        import threading

        try:
            if self.connection is not None:
                self.connection.close()  # the parent's connection stays open in the parent
            self.connection = None
            self.pid = os.getpid()
            self.records.clear()
            self.io_lock = threading.Lock()
            self.devices_lock = threading.Lock()
            self.stopping = threading.Event()
            self.calls_total = 0
            self.called_contexts = set()
            self.pending_parameters = None
            self.commands = b""
            self.profile = self.profile_ended = None  # the parent's profile, and its CUPTI, stay the parent's
            self.profile_lock = threading.Lock()
            if self.finished or not self.patches:
                self.finished = True
                return
            try:
                self.connection = _connect(self.socket_path)
            except Exception as exc:
                self._give_up(f"cannot connect to {self.socket_path} ({_one_line(exc)})")
                return
            self._start_thread()
        except Exception as exc:
            self._give_up(f"the forked child could not start its watcher ({_one_line(exc)})")

    def at_forked_worker_exit(self) -> None:
        if os.getpid() != self.root_pid:
            self.at_exit()

    def at_exit(self) -> None:
        """Flush the calls, send `bye`, close; then put the runtime back as it was (see `_restore_all`)."""
        if self.finished or os.getpid() != self.pid:
            return
        self.finished = True
        self.stopping.set()
        # Not joined: the thread may sit in select for DRAIN_S. The lock waits for a send in progress, and
        # the connection closes under it, so nothing the thread does later follows the bye.
        locked = self.io_lock.acquire(timeout=EXIT_TIMEOUT_S)
        try:
            if locked and self.connection is not None:
                self.connection.settimeout(EXIT_TIMEOUT_S)
                self._end_profile("the program ended before its calls could be profiled")
                self._deliver_profile(wait=False)
                self._flush_locked()
                lines = [self._memory_event()] if self.memory_on else []
                lines.append({"kind": "bye", "mono": time.perf_counter(), "calls_total": self.calls_total})
                self._send_locked(lines)
        except Exception:
            pass
        finally:
            self._close()
            if locked:
                self.io_lock.release()
            self._restore_all()

    def _close(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            try:  # noqa: SIM105
                connection.close()
            except OSError:
                pass

    def _restore_all(self) -> None:
        # nanobind reports "leaked" instances at exit when its types still hold Python functions
        # (ours, and through them the objects they reach): the originals go back before teardown.
        for patch in reversed(self.patches):
            try:  # noqa: SIM105
                patch.restore()
            except Exception:
                pass
        self.patches = []
        for finalizer in self.finalizers:
            finalizer.detach()
        self.finalizers = []
        self.names.clear()
        with self.devices_lock:
            self.devices = []
        self.held.clear()

    def _give_up(self, why: str) -> None:
        """The socket is gone: the program runs on unwatched, and stderr says so once."""
        if not self.finished:
            _say(f"stopped watching this program: {why}")
        self.finished = True
        self.stopping.set()
        self._end_profile("gputop's connection closed")
        self._close()
        self._restore_all()
        self.records.clear()

    def stop_recording(self, what: str, exc: BaseException, area: str | None) -> None:
        """One of the agent's own steps failed: put the originals of `area` back (all when None), note it once."""
        key = area or "*"
        if key in self.stopped_areas:
            return
        self.stopped_areas.add(key)
        if area in (None, "calls"):
            self._end_profile(f"gputop stopped recording this program's calls ({_one_line(exc)})", keep=False)
        stopped = [p for p in self.patches if area is None or p.area == area]
        self.patches = [p for p in self.patches if p not in stopped]
        for patch in stopped:
            try:  # noqa: SIM105
                patch.restore()
            except Exception:
                pass
        self.records.append(
            {"kind": "note", "level": "warning", "message": f"gputop stopped recording {what}: {_one_line(exc)}"}
        )

    # -- a profile of the program's next calls (CUDA kernels, through CUPTI) --------------------------

    def _arm_profile(self, command: dict[str, Any]) -> str | None:
        """On the agent's thread: arm a profile of the next `calls` calls, or say in one line why not."""
        try:
            with self.profile_lock:
                if self.profile is not None or self.profile_ended is not None:
                    return "a profile of this program's calls is already under way"
            calls = command.get("calls")
            if type(calls) is not int or calls < 1:
                return f"calls must be a whole number of calls, 1 or more (got {calls!r})"
            if "calls" in self.stopped_areas or "*" in self.stopped_areas:
                return "gputop stopped recording this program's calls, so it cannot profile them"
            if "cuda" not in self.device_drivers:
                made = ", ".join(sorted(self.device_drivers))
                return "CUPTI times CUDA kernels; " + (
                    f"this program's devices are {made}" if made else "this program has made no device yet"
                )
            ours = "{}.{}".format(*sys.version_info[:2])
            theirs = command.get("python")
            if theirs is not None and str(theirs) != ours:
                program = _shell_join([os.path.basename(sys.executable) or "python", *sys.argv])
                return (
                    f"CUPTI's Python package is gputop's, built for Python {theirs}; this program runs {ours}: "
                    f"profile it with nsys profile {program}, or run gputop on its .vmfb"
                )
            paths = [str(p) for p in command.get("cupti_paths") or () if isinstance(p, str)]
            cupti, why = _Cupti.load(paths)
            if cupti is None:
                return why
            cupti.clear()
            with self.profile_lock:
                if self.profile is not None or self.profile_ended is not None:
                    return "a profile of this program's calls is already under way"
                self.profile = _Profile(cupti, calls, str(command.get("level") or "default"), self._profile_over)
            return None
        except Exception as exc:
            return f"the profile could not be armed: {_one_line(exc)}"

    def _profile_over(self, profile: _Profile) -> None:
        """A profile is over (its Nth call, a failure, or the program's end): the agent's thread sends its result."""
        with self.profile_lock:
            if self.profile is profile:
                self.profile = None
                self.profile_ended = profile

    def _end_profile(self, why: str, keep: bool = True) -> None:
        """End the profile under way now, from any thread; with `keep`, the windows it has are its result."""
        profile = self.profile
        if profile is not None:
            profile.stop(why, keep)

    def _deliver_profile(self, wait: bool) -> None:
        """Queue the ended profile's `kernels` (or `profile_refused`) event.

        `activity_flush_all(1)` hands CUPTI's last buffer over before it returns, as seen
        on the H200; with `wait`, a profile whose records have not come yet waits for them
        (RECORDS_WAIT_S, across drains: never on the program's thread).
        """
        with self.profile_lock:
            profile = self.profile_ended
            if profile is None:
                return
            waiting = profile.error is None and profile.windows and not profile.cupti.has_records()
            if wait and waiting and time.monotonic() < profile.ended_at + RECORDS_WAIT_S:
                return
            self.profile_ended = None
        self.records.append(profile.result())

    # -- the agent's thread -----------------------------------------------------------------------------

    def _run(self) -> None:
        import select

        try:
            with self.io_lock:
                self._send_locked([self._hello()])
            next_memory = time.perf_counter()
            while not self.stopping.is_set():
                connection = self.connection
                if connection is None:
                    return
                readable, _, _ = select.select([connection], [], [], DRAIN_S)
                if readable and not self._read_commands(connection):
                    return
                with self.io_lock:
                    self._flush_locked()
                if self.profile_ended is not None:
                    self._deliver_profile(wait=True)  # queued: it goes out with the next drain, after its calls
                now = time.perf_counter()
                if self.memory_on and now >= next_memory:
                    next_memory = now + MEMORY_S
                    self._sample_memory()
        except Exception as exc:
            if not self.finished:
                self._give_up(f"sending to gputop failed ({_one_line(exc)})")

    def _hello(self) -> dict[str, Any]:
        return {
            "kind": "hello",
            "v": PROTOCOL_VERSION,
            "pid": os.getpid(),
            "ppid": os.getppid(),
            "argv": list(sys.argv),
            "executable": sys.executable,
            "python": "{}.{}.{}".format(*sys.version_info[:3]),
            "iree": _iree_version(self.runtime),
            "cwd": os.getcwd(),
            "wall": time.time(),
            "mono": time.perf_counter(),
        }

    def _read_commands(self, connection: socket.socket) -> bool:
        import json

        data = connection.recv(65536)
        if not data:
            self._give_up("gputop closed the connection")
            return False
        self.commands += data
        *lines, self.commands = self.commands.split(b"\n")
        for line in lines:
            if "commands" in self.stopped_areas:
                break
            try:
                _fault("command")
                command = json.loads(line)
            except ValueError:
                continue  # not JSON: ignored, as unknown ops are
            except Exception as exc:
                self.stop_recording("answers to gputop's commands", exc, area="commands")
                continue
            op = command.get("op") if isinstance(command, dict) else None
            if op == "ping":
                with self.io_lock:
                    self._send_locked([{"kind": "pong"}])
            elif op == "profile":
                refusal = self._arm_profile(command)
                if refusal is not None:
                    with self.io_lock:
                        self._send_locked([{"kind": "profile_refused", "reason": refusal}])
        return True

    def _send_locked(self, events: list[dict[str, Any]]) -> None:
        import json

        if events and self.connection is not None:
            lines = []
            for event in events:
                lines.append(json.dumps(event, separators=(",", ":"), default=str) + "\n")
                time.sleep(0)  # the GIL back to the program between events (see YIELD_EVERY)
            self.connection.sendall("".join(lines).encode())

    def _flush_locked(self) -> None:
        events = self._drain()
        if events:
            _fault("send")
            self._send_locked(events)

    def _drain(self) -> list[dict[str, Any]]:
        """Turn what the wrappers recorded into protocol events, in the order it happened.

        A call on a context called before takes the short path: the agent thread's cost
        per call bounds how many calls a second it can follow without slowing the
        program's thread (they share the GIL).
        """
        events: list[dict[str, Any]] = []
        calls: list[Any] = []
        popleft = self.records.popleft
        called = self.called_contexts
        for taken in range(len(self.records)):  # what is there now: a program calling faster never ends it
            if taken % YIELD_EVERY == YIELD_EVERY - 1:
                time.sleep(0)
            record = popleft()
            if type(record) is tuple:
                label, context, start, end = record
                if context not in called:
                    try:
                        self._first_call(label, context, start, end, events, calls)
                    except Exception as exc:
                        self.stop_recording("calls (a call could not be read)", exc, area="calls")
                        continue
                calls.append(record)  # as recorded: ints encode faster than floats, and the engine divides
                if len(calls) >= CALLS_PER_MESSAGE:
                    self._add_calls(events, calls)
                    calls = []
                continue
            if calls:
                self._add_calls(events, calls)
                calls = []
            try:
                self._event_entry(record, events)
            except Exception as exc:
                self.stop_recording("phases (one could not be read)", exc, area="phases")
        if calls:
            self._add_calls(events, calls)
        if self.pending_parameters is not None:
            events.append(self.pending_parameters)
            self.pending_parameters = None
        waiting = len(self.records)
        if waiting > MAX_BACKLOG and "calls" not in self.stopped_areas:
            self.records.clear()  # the program's calls go back to the originals; what waits is dropped, and said
            why = _Backlog(f"{waiting} records waiting; the program calls faster than the watcher can send")
            self.stop_recording("calls", why, area="calls")
        return events

    def _add_calls(self, events: list[dict[str, Any]], calls: list[Any]) -> None:
        events.append({"kind": "calls", "calls": calls})
        self.calls_total += len(calls)

    def _first_call(
        self, label: str, context: int, start: int, end: int, events: list[dict[str, Any]], calls: list[Any]
    ) -> None:
        """A context's first call is a phase of its own (its lazy initialisation shows there)."""
        _fault("drain")
        self.called_contexts.add(context)
        if calls:
            self._add_calls(events, list(calls))
            calls.clear()
        first = {"kind": "phase", "name": "first_call", "start": start / 1e9, "seconds": (end - start) / 1e9}
        events.append({**first, "function": label, "context": context})

    def _event_entry(self, event: dict[str, Any], events: list[dict[str, Any]]) -> None:
        if event.get("name") == "context" and event.get("op") == "create":
            self.called_contexts.discard(event["context"])
        pending = self.pending_parameters
        if event.get("name") == "parameters" and event["api"] in ("add_buffer", "add_splat", "add_from_file_handle"):
            # A program that adds a thousand buffers one by one is one slow phase, not a thousand events.
            if pending is not None and (pending["api"], pending["index"]) == (event["api"], event["index"]):
                pending["seconds"] += event["seconds"]
                pending["bytes"] = (pending["bytes"] or 0) + (event["bytes"] or 0)
                pending["tensors"] += event["tensors"]
                pending["calls"] += 1
                for path in event["files"]:
                    if path not in pending["files"]:
                        pending["files"].append(path)
                return
            if pending is not None:
                events.append(pending)
            self.pending_parameters = event
            return
        if pending is not None:
            events.append(pending)
            self.pending_parameters = None
        events.append(event)

    def _sample_memory(self) -> None:
        try:
            _fault("memory")
            event = self._memory_event()
            with self.io_lock:
                self._send_locked([event])
        except OSError:
            raise
        except Exception as exc:
            self.memory_on = False
            self.records.append(
                {"kind": "note", "level": "warning", "message": f"gputop stopped recording memory: {_one_line(exc)}"}
            )

    def _memory_event(self) -> dict[str, Any]:
        with self.devices_lock:
            self.devices = [d for d in self.devices if not self.unused(d)]
            devices = list(self.devices)
        for key, tracked in list(self.names.items()):
            if self.unused(tracked):
                self.names.pop(key, None)
        # Calls made so far, those not yet drained included, read beside the held results they are held against
        # (what waits in the deque is nearly all calls: the growth's bytes per call come out exact).
        calls_made = self.calls_total + len(self.records)
        counts = self._held_counts()
        return {
            "kind": "memory",
            "mono": time.perf_counter(),
            "calls_total": calls_made,
            "held": {"count": counts[0], "bytes": counts[1]},
            "devices": [{"device": d.label, "statistics": dict(d.obj.allocator.statistics)} for d in devices],
        }

    def _held_counts(self) -> tuple[int, int]:
        for _ in range(5):
            try:
                sizes = [size for _, size in list(self.held.values())]
                return len(sizes), sum(sizes)
            except RuntimeError:  # a result died on another thread while we read
                continue
        return 0, 0

    def unused(self, tracked: _Tracked) -> bool:
        """True when only the agent still holds `tracked.obj`.

        The runtime's nanobind types take no weak references, so the agent holds
        devices and functions strongly, and lets go of one within 0.5 s of the
        program letting go of it; `solo_refs` is what `refs` reads for an object
        nothing else holds, measured once on this interpreter by the same code.
        """
        return self.refs(tracked) <= self.solo_refs

    def refs(self, tracked: _Tracked) -> int:
        return sys.getrefcount(tracked.obj)

    # -- the wrappers -----------------------------------------------------------------------------------

    def _wrap_runtime(self) -> None:
        runtime = self.runtime
        binding = sys.modules.get("iree.runtime._binding") or runtime
        self._patch_method(runtime.VmContext, "invoke", self._invoke_wrapper, area="calls")
        invoker = getattr(runtime, "FunctionInvoker", None)
        if invoker is not None:
            self._patch_method(invoker, "__call__", self._invoker_wrapper, area="results")
        self._patch_constructor(runtime.VmInstance, "instance", _describe_instance)
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
            self._patch_phase(runtime.VmModule, name, "module", _describe_module(how), static=True)
        index = runtime.ParameterIndex
        self._patch_phase(index, "load", "parameters", self._describe_index_load, before=len)
        self._patch_phase(index, "load_from_file_handle", "parameters", self._describe_index_load, before=len)
        self._patch_phase(index, "add_buffer", "parameters", _describe_add_buffer)
        self._patch_phase(index, "add_splat", "parameters", _describe_add_splat)
        self._patch_phase(index, "add_from_file_handle", "parameters", self._describe_add_from_file_handle)
        self._patch_phase(index, "create_provider", "parameters", _describe_provider)
        self._patch_phase(runtime.FileHandle, "wrap_fd", "parameters", self._remember_fd, static=True)
        self._patch_function(
            binding,
            "create_io_parameters_module",
            lambda original: self._timed("parameters", original, _describe_io_module, None, "phases"),
            area="phases",
        )
        self._patch_constructor(runtime.VmContext, "context", self._describe_context_create, weak=True)
        self._patch_phase(runtime.VmContext, "register_modules", "context", _describe_register)

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
        self.patches.append(_Patch(owner, name, original, area))
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
        self.patches.append(_Patch(owner, name, original, "phases"))
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
                self.patches.append(_Patch(module, name, original, area))
                setattr(module, name, wrapper)

    def _invoke_wrapper(self, original: Any) -> Callable[..., Any]:
        clock = time.perf_counter_ns
        append: Callable[[Any], None] = self.records.append
        if _FAULT_POINT == "invoke":
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

    def _name_function(self, function: Any) -> _Tracked:
        """Read a function's name on the program's thread, once: a VmFunction does not keep its module alive.

        The agent's thread reading it later crashed the interpreter when the program had
        dropped the module meanwhile. The function stays held (see `unused`), so that its
        id is not reused while the cache names it.
        """
        tracked = _Tracked(f"{function.module_name}.{function.name}", function)
        self.names[id(function)] = tracked
        return tracked

    def _invoker_wrapper(self, original: Any) -> Callable[..., Any]:
        import weakref

        from iree.runtime.array_interop import DeviceArray

        held = self.held
        fault = _FAULT_POINT == "results"

        def forget(ref: weakref.ref[Any]) -> None:
            held.pop(id(ref), None)

        def hold(result: Any, depth: int) -> None:
            if isinstance(result, DeviceArray):
                ref = weakref.ref(result, forget)
                held[id(ref)] = (ref, result._buffer_view.byte_length)
            elif depth < 2 and isinstance(result, (tuple, list)):
                for item in result:
                    hold(item, depth + 1)
            elif depth < 2 and isinstance(result, dict):
                for item in result.values():
                    hold(item, depth + 1)

        outer = self.outer_call
        clock = time.perf_counter_ns
        append = self.records.append

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
                for label, context, _start, _end in inner[:1]:
                    append((label, context, start, end))
            try:
                if fault:
                    _fault("results")
                hold(result, 0)
            except Exception as exc:
                self.stop_recording("held results", exc, area="results")
            return result

        return call

    def _timed(
        self, phase: str, original: Any, describe: Describe, before: Callable[[Any], Any] | None, area: str
    ) -> Callable[..., Any]:
        clock = time.perf_counter
        records = self.records
        fault = _FAULT_POINT == "phase"

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
                if fault:
                    _fault("phase")
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
                self.devices.append(_Tracked(label, device))
                self.device_drivers.add(name or "unknown")
            return {"uri": uri, "driver": name, "driver_seconds": self.driver_seconds.pop(id(driver), 0.0)}

        return describe

    def _describe_index_load(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, before: Any
    ) -> dict[str, Any]:
        index, source = args[0], _argument(args, kwargs, 1, "file_path") or kwargs.get("file_handle")
        tensors = len(index) - before if isinstance(before, int) else None
        if isinstance(source, (str, os.PathLike)):
            mmap = args[5] if len(args) > 5 else kwargs.get("mmap")
            mode = kwargs.get("mode") or ("preload" if mmap is False else "mmap")
            path = os.fspath(source)
            files, size, through, api = [path], _file_size(path), "file handle", "load"
        else:
            mode, api = "file_handle", "load_from_file_handle"
            files, size, through = self._file_handle_source(source)
        added = _entry_bytes(index, before)  # the tensors' bytes, not the archive's (its header and padding)
        details = _parameters(api, mode, files, added if added is not None else size, tensors, through, index)
        details["file_bytes"] = size
        return details

    def _describe_add_from_file_handle(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, before: Any
    ) -> dict[str, Any]:
        files, _, through = self._file_handle_source(_argument(args, kwargs, 2, "file_handle"))
        size = int(_argument(args, kwargs, 3, "length"))
        return _parameters("add_from_file_handle", None, files, size, 1, through, args[0])

    def _file_handle_source(self, handle: Any) -> tuple[list[str], int | None, str]:
        if getattr(handle, "is_host_allocation", False):
            return [], _buffer_size(handle.host_allocation), "host memory"
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
        return _context_details("create", args, kwargs)

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
            return previous(kind, value, tb)

        return excepthook


def _describe_wrapper(wrapper: Any, original: Any) -> None:
    for attribute in ("__name__", "__qualname__", "__doc__"):
        try:  # noqa: SIM105
            setattr(wrapper, attribute, getattr(original, attribute))
        except (AttributeError, TypeError):
            pass


def _raiser(point: str) -> Callable[[Any], None]:
    def fail(_: Any) -> None:
        _fault(point)

    return fail


def _describe_instance(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, ahead: Any) -> dict[str, Any]:
    return {}


def _describe_module(how: str) -> Describe:
    def describe(args: tuple[Any, ...], kwargs: dict[str, Any], module: Any, ahead: Any) -> dict[str, Any]:
        source = _argument(args, kwargs, 1, "filepath") or kwargs.get("buffer")
        if how == "mmap":
            path: str | None = os.fspath(str(source))
            size = _file_size(path)
        else:
            path, size = None, _buffer_size(source)
        return {"how": how, "path": path, "bytes": size, "module": module.name}

    return describe


def _argument(args: tuple[Any, ...], kwargs: dict[str, Any], position: int, name: str) -> Any:
    """An argument of a wrapped call, given by position (`self` is 0) or by name."""
    return args[position] if len(args) > position else kwargs.get(name)


def _describe_add_buffer(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, ahead: Any) -> dict[str, Any]:
    size = _buffer_size(_argument(args, kwargs, 2, "buffer"))
    return _parameters("add_buffer", None, [], size, 1, "host memory", args[0])


def _describe_add_splat(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, ahead: Any) -> dict[str, Any]:
    size = int(_argument(args, kwargs, 3, "total_length"))
    return _parameters("add_splat", None, [], size, 1, "splat", args[0])


def _describe_provider(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, ahead: Any) -> dict[str, Any]:
    details = _parameters("create_provider", None, [], None, len(args[0]), None, args[0])
    details["scope"] = kwargs.get("scope", "")
    return details


def _describe_io_module(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, ahead: Any) -> dict[str, Any]:
    details = _parameters("create_io_parameters_module", None, [], None, None, None, None)
    details["providers"] = max(0, len(args) - 1)
    return details


def _context_details(op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    vm_context = args[0]
    modules = _argument(args, kwargs, 2 if op == "create" else 1, "modules")
    names = [m.name for m in modules] if modules is not None else []
    return {"op": op, "modules": names, "context": id(vm_context), "context_id": vm_context.context_id}


def _describe_register(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, ahead: Any) -> dict[str, Any]:
    return _context_details("register", args, kwargs)


def _parameters(
    api: str,
    mode: str | None,
    files: list[str],
    size: int | None,
    tensors: int | None,
    through: str | None,
    index: Any,
) -> dict[str, Any]:
    return {
        "api": api,
        "mode": mode,
        "files": files,
        "bytes": size,
        "tensors": tensors,
        "through": through,
        "index": id(index) if index is not None else None,
        "calls": 1,
    }


def _entry_bytes(index: Any, before: Any) -> int | None:
    """Bytes of the entries a load added to `index` (those after the first `before`); None where unreadable."""
    if not isinstance(before, int):
        return None
    try:
        return sum(int(entry.length) for _key, entry in list(index.items())[before:])
    except Exception:
        return None


def _file_size(path: str | None) -> int | None:
    try:
        return os.stat(path).st_size if path else None
    except OSError:
        return None


def _buffer_size(buffer: Any) -> int | None:
    try:
        with memoryview(buffer) as view:
            return view.nbytes
    except TypeError:
        return None


def _iree_version(runtime: ModuleType) -> str | None:
    """The installed iree-base-runtime's version ("3.13.0"), read from its dist-info folder beside the package."""
    try:
        site = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(runtime.__file__ or ""))))
        for entry in os.listdir(site):
            for prefix in ("iree_base_runtime-", "iree_runtime-"):
                if entry.startswith(prefix) and entry.endswith(".dist-info"):
                    return entry[len(prefix) : -len(".dist-info")]
    except OSError:
        pass
    version = sys.modules.get("iree.runtime.version")
    return getattr(version, "VERSION", None)
