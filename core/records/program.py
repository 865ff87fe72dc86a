"""What gputop saw of a user's own program: its command and ending, its functions' calls, its loads and its memory.

A watched program (`gputop -- python app.py`) is not driven by gputop's call
loop: its calls, loads and contexts are reported by the watcher inside it
(`core/program/inject/`), and the engine beside it turns them into these
values. They ride on the snapshot as `RunSnapshot.program` and become the
report's `program`, `functions`, `parameters.through` and `memory.growth`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FunctionCalls", "HeldResults", "MemoryGrowth", "ProgramLoad", "ProgramView"]


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
    others: int = 0  # other processes of the command that used IREE: sessions of their own
    connected: bool = False  # the watcher inside the process reports to this session now
