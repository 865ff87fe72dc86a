"""What gputop saw of a user's own program: its command and ending, its functions' calls, its loads and its memory.

A watched program (`gputop -- python app.py`) is not driven by gputop's call
loop: its calls, loads and contexts are reported by the watcher inside it
(`core/program/inject/`), and the engine beside it turns them into these
values. They ride on the snapshot as `RunSnapshot.program` and become the
report's `program`, `functions`, `parameters.through` and `memory.growth`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CallPart",
    "CallParts",
    "FunctionCalls",
    "HeldResults",
    "MemoryGrowth",
    "ProgramLoad",
    "ProgramStacks",
    "ProgramView",
    "StackLine",
]


@dataclass(frozen=True)
class CallPart:
    """One part of a function's calls as the program made them: its median time, its share, the bytes it moved.

    `share` is the part's time over the calls' time, both summed over every call taken apart, so the shares of
    arguments, invoke and results add up to 1 (a read back happens after the call returned: its share is of the
    calls' time too, and can pass 1). `seen` False: the watcher cannot see this part for how the program calls
    (`reason` says why); its figures are None, never 0.
    """

    p50_ms: float | None = None
    share: float | None = None
    bytes: int | None = None  # per call: the numpy arrays uploaded (arguments), the bytes read back (to_host)
    seen: bool = True
    reason: str | None = None
    count: int = 0  # the calls (or reads) behind the figures


@dataclass(frozen=True)
class CallParts:
    """What a function's calls are made of, from the IREE Python API as the program used it (`issue 56`).

    - arguments: the program's arguments made into device buffers (numpy to a buffer view: allocation and
      upload), from the call's start to its VM call;
    - invoke: the VM call itself (submission, and the wait where the binding waits): a profile's kernels are in it;
    - results: the results wrapped as DeviceArrays, from the VM call's end to the call's return;
    - to_host: the program reading results back (`to_host()`, `np.asarray(result)`), after the call.
    `same_arguments` is the share of calls whose numpy arguments were the very arrays of the call before.
    """

    arguments: CallPart
    invoke: CallPart
    results: CallPart
    to_host: CallPart
    same_arguments: float | None = None
    reads_per_call: float | None = None


@dataclass(frozen=True)
class FunctionCalls:
    """One function's calls as the program made them: count and times, from the wrapped `VmContext.invoke`."""

    module: str
    name: str
    count: int
    p50_ms: float | None = None
    p95_ms: float | None = None
    max_ms: float | None = None
    mean_ms: float | None = None
    calls_per_s: float | None = None  # over the program's calls of it so far
    recent_calls_per_s: float | None = None  # over the last few seconds: what it does now
    parts: CallParts | None = None  # the calls taken apart (None before a call)
    between_p50_ms: float | None = None  # the program's own time from the call before's return to this call
    # Every call since the start per bucket of CALL_BUCKETS_MS (the last is +Inf) and their summed time, as a
    # gputop run's `calls` keeps them: the per-function histogram of /metrics.
    buckets: tuple[int, ...] = ()
    sum_ms: float = 0.0


@dataclass(frozen=True)
class HeldResults:
    """Arrays that calls returned and the program still holds (weak references on them): how many, how big."""

    count: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class MemoryGrowth:
    """Memory that grows while calls are steady: bytes per call, from which call on, and what showed it."""

    bytes_per_call: int
    since_call: int
    source: str  # "held results" | "allocator" | "rss"


@dataclass(frozen=True)
class ProgramLoad:
    """A module or parameter load the program made, as it made it."""

    kind: str  # "module" | "parameters"
    api: str  # the call it went through: "VmModule.mmap", "ParameterIndex.load", ...
    how: str | None  # modules: mmap, copy, flatbuffer, wrap; parameters: the index's mode
    files: tuple[str, ...]
    bytes: int
    seconds: float
    through: str | None = None  # parameters: "host memory" or "file handle"
    name: str | None = None  # a module's name
    tensors: int | None = None  # parameters: how many entries


@dataclass(frozen=True)
class StackLine:
    """One line of the program's own code and the share of the sampled time spent at it (or below it)."""

    file: str
    line: int
    function: str
    samples: int
    share: float  # of every sample taken
    in_calls: float  # of this line's samples, the share inside an IREE call (the rest is the program's own)


@dataclass(frozen=True)
class ProgramStacks:
    """The program's Python sampled from outside its process (py-spy): where its time goes, by its own lines.

    A sample is charged to the deepest frame in the program's own files (not the standard library, not
    site-packages, not gputop's watcher): the line of the program that was running, or that called what was.
    `in_calls` is the share of samples inside an iree.runtime call; the rest is `between` calls.
    """

    source: str | None  # "py-spy 0.4.3"
    rate_hz: float | None
    samples: int = 0
    in_calls: float | None = None
    top: tuple[StackLine, ...] = ()
    reason: str | None = None  # why there are none (py-spy missing, no permission, a Python it cannot read)
    rounds: int = 0


@dataclass(frozen=True)
class ProgramView:
    """The watched program's process: who it is, how it ended, and what it did with IREE."""

    command: tuple[str, ...]
    pid: int | None = None  # the process this session watches (the first that used IREE)
    python: str | None = None
    iree: str | None = None
    exit_code: int | None = None  # None while it runs
    ended: str | None = None  # "exited" | "raised" | "signal", once it has ended
    ended_line: str | None = None  # an exception's last line, or the signal's name
    functions: tuple[FunctionCalls, ...] = ()  # the busiest first
    loads: tuple[ProgramLoad, ...] = ()
    contexts: int = 0
    held: HeldResults | None = None
    growth: MemoryGrowth | None = None
    hints: tuple[str, ...] = ()  # the diagnoses, one line each with the fix
    hint_subjects: tuple[str, ...] = ()  # each hint's subject, in the same order (`memory grows`, `first call`)
    others: int = 0  # other processes of the command that used IREE: sessions of their own
    connected: bool = False  # the watcher inside the process reports to this session now
    calls_made: int | None = None  # calls the watcher counted in the process (sent or dropped), where it said
    calls_dropped: int = 0  # calls the watcher counted but could not send (gputop fell behind): counts are short
    context_p50_ms: float | None = None  # what making a context costs here (the median of those made)
    stacks: ProgramStacks | None = None  # its Python, sampled from outside (None before the first round)
