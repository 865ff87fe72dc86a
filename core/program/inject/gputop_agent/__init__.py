"""The part of gputop that runs inside a watched Python program, fed to it through PYTHONPATH.

`gputop -- python app.py` puts this folder first on the program's PYTHONPATH; the
`sitecustomize` beside this file calls `install_from_environment()`, which only puts
an import hook on `sys.meta_path`. The moment the program finishes importing
`iree.runtime`, the hook connects to gputop's engine (the Unix socket named by
GPUTOP_WATCH_SOCKET), wraps the runtime's classes in place (VmInstance and
VmContext construct through a same-named subclass: see `wrappers.py`) and
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
the import only; the wheel's libcupti is loaded first, see `cupti.py`) or CUPTI
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

It is a package of plain modules (with `sitecustomize.py` beside it) because it travels
into foreign environments as a plain folder, imported as the top-level `gputop_agent`,
not as part of the `gputop` package: its modules import one another relatively. Only
this file and those it imports (`hook`, `helpers`) load at the program's start; the
agent's own modules (`agent`, `state`, `stream`, `wrappers`, `describe`, `cupti`) load
with `iree.runtime`. The agent under way and the import hook waiting for the runtime
are `hook`'s, and read here as `_agent` and `_hook` (a test's driver reads `_agent`).
"""

from __future__ import annotations

from . import hook
from .helpers import PROTOCOL_VERSION
from .hook import install, install_from_environment

__all__ = ["PROTOCOL_VERSION", "install", "install_from_environment"]


def __getattr__(name: str) -> object:
    """The module state of `hook` (`_agent`, `_hook`) and `cupti` (`_cupti`), read as it is now."""
    if name in ("_agent", "_hook"):
        return getattr(hook, name)
    if name == "_cupti":
        from . import cupti

        return cupti._cupti
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
