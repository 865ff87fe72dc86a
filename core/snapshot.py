"""The whole state of a run at one moment (`RunSnapshot`) and its closing facts (`RunSummary`).

Everything the engine tells the outside world (the command line, the TUI, the
session folder, a test) is a frozen, timestamped value: immutable so it can
cross threads without locks, compare equal in tests, and turn into JSON with
`to_json()` without knowing who reads it. The values themselves live in
`gputop.core.records`, one module per concern, and are imported from there
(`from gputop.core.records.memory import PoolStats`): one way to name a
record, the folder tree as the import path. This module holds only the two
values that gather them all. It imports nothing of gputop's but the records:
every other part of the engine may depend on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputop.core.records.affinity import ExportAffinity, Transfer
from gputop.core.records.base import now
from gputop.core.records.calls import CallStats, StageTimings
from gputop.core.records.captures import CaptureInfo
from gputop.core.records.checks import OutputCheck, TensorSummary
from gputop.core.records.clocks import CallClocks, ClockReading
from gputop.core.records.compile import CompileRecord, Diagnostic
from gputop.core.records.counters import CountersPass
from gputop.core.records.devices import DeviceInfo
from gputop.core.records.memory import MemorySample, ModuleBytes
from gputop.core.records.neighbours import Neighbours
from gputop.core.records.parameters import ParameterLoad, ParameterStages
from gputop.core.records.pm import PmSampling
from gputop.core.records.profile import (
    ProfileSummary,
)
from gputop.core.records.program import ProgramView
from gputop.core.records.progress import Event, Phases

__all__ = [
    "BUSY_STATES",
    "RunSnapshot",
    "RunSummary",
]


# States in which a run works toward its first call and publishes nothing new for a while:
# the TUI's header and `gputop run` show how long the current one has lasted.
BUSY_STATES = ("importing", "compiling", "loading")


@dataclass(frozen=True)
class RunSnapshot:
    """The whole state of one run at one moment, as the TUI and reports see it."""

    state: str  # idle, compiling, loading, running, paused, finished, stopped, error
    target: str
    function: str | None
    device: DeviceInfo | None
    phases: Phases
    calls: CallStats
    memory: MemorySample | None
    memory_history: tuple[int, ...]  # live device bytes, oldest first, for sparklines
    diagnostics: tuple[Diagnostic, ...]
    events: tuple[Event, ...]  # the newest events; seq numbers let readers skip seen ones
    error: str | None = None
    error_exit_code: int | None = None
    result_types: tuple[str, ...] = ()  # the function's results, e.g. "256x256xf32"
    device_ids: tuple[str, ...] = ()  # every device of the run (two for demo:pipeline)
    session_dir: str | None = None
    profile: ProfileSummary | None = None
    profiling: bool = False  # a profile pass is under way
    enqueue: CallStats | None = None  # OpenCL: time for the enqueues to return, beside the synced time
    exports: tuple[ExportAffinity, ...] = ()  # affinity of every argument and result (one device: every result)
    transfers: tuple[Transfer, ...] = ()
    device_names: tuple[tuple[str, str], ...] = ()  # (compiler device name, gputop device id)
    captures: tuple[CaptureInfo, ...] = ()
    renderdoc: str | None = None  # "RenderDoc 1.6.0 loaded", or why capture is unavailable
    seq: int = 0  # numbered as published, so a gap in a session's samples.jsonl shows a lost line
    errors: int = 0  # error events since the session started (the event tuple keeps only the newest)
    state_since: float | None = None  # when the current state began: how long a compile has run so far
    timestamp: float = field(default_factory=now)
    parameters: ParameterLoad | None = None  # the parameters' load: live while it runs, its totals after
    segment: int = 0  # which run of the session folder (a TUI reload continues the folder as segment 1, 2, ...)
    neighbours: Neighbours | None = None  # who else uses the GPU and the host now (the last few seconds)
    counters_pass: CountersPass | None = None  # the newest counters pass (Nsight Compute), or why it failed
    counting: bool = False  # a counters pass is under way
    program: ProgramView | None = None  # a watched program (gputop -- CMD): its process, functions and loads
    module_bytes: tuple[ModuleBytes, ...] = ()  # per device: the module's weights and whether the pools hold them
    check: OutputCheck | None = None  # the outputs against their reference, once compared (the header's check failed)
    call_clocks: CallClocks | None = None  # the GPU's clocks over the calls so far (NVML), with a warning
    call_clocks_reason: str | None = None  # why there are none: a CPU device, no NVIDIA driver
    clock_now: ClockReading | None = None  # the newest clock reading (Prometheus's gauges)
    pm_sampling: PmSampling | None = None  # the GPU's own counters sampled live (CUDA), or why not


@dataclass(frozen=True)
class RunSummary:
    """What only the live run knows at its end, beside its last snapshot: the report's other half."""

    state: str  # the final state, `interrupted` when a signal ended the run
    exit_code: int
    peak_live_bytes: tuple[tuple[str, int], ...]  # (device id, peak of live pool bytes)
    host_rss_peak_bytes: int
    memory_samples: int
    compile: CompileRecord | None
    parameter_files: tuple[str, ...]
    parameter_mode: str | None
    inputs: tuple[TensorSummary, ...]
    outputs: tuple[TensorSummary, ...]
    check: OutputCheck | None
    stages: StageTimings | None
    session_dir: str
    timestamp: float = field(default_factory=now)
    parameter_bytes: int | None = None  # bytes the parameters' load placed on the device
    parameter_seconds: float | None = None  # from reading the index to the last byte in place
    parameter_zero_copy: bool = False  # the device reads the mapped file in place: nothing was moved
    neighbours: Neighbours | None = None  # who else used the GPU and the host over the run's calls
    parameter_stages: ParameterStages | None = None  # the streamed loader's stage times
