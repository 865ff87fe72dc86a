"""The profile pass IREE's benchmark tool makes (Vulkan, HIP, local-task): calls explained within 5%.

IREE's Python bindings cannot open a profile sink, so the pass runs `iree-benchmark-module` on the
session's `.vmfb`, devices and inputs with `--device_profiling_mode`, between unprofiled runs of the
same tool that measure what the profiling cost (`overhead.py`). Per-dispatch device timestamps are
the dear part of a device's records: on an H200 under Vulkan they cost the light ResNet-50 83 µs a
dispatch, 14.6% of its call, where every other mode cost 0.0-0.1%. So the pass has two levels. The
`default` pass explains calls that ran within WARN_RATIO of the unprofiled ones: when its run with
every record costs more, it runs again without per-dispatch timestamps, takes the call breakdown
from that run and keeps the first run's kernel times, each run's cost stated. The `full` pass keeps
the run with every record as the explained calls (dispatches on the Timeline), with its cost.
"""

from __future__ import annotations

import os
import statistics
import threading
from dataclasses import dataclass, replace
from pathlib import Path

from gputop.core.errors import ProfileError
from gputop.core.processes import last_line, run_logged
from gputop.core.profiling.breakdown import CallRecords, build_breakdown
from gputop.core.profiling.dispatches import DispatchEvent, SourceOpsOf, pass_stem, summarize_events, write_trace
from gputop.core.profiling.ireeprof.call_marks import marks_environment, marks_library, read_marks
from gputop.core.profiling.ireeprof.call_records import breakdown_source, calls_window_ns, explain_hints, ireeprof_calls
from gputop.core.profiling.ireeprof.ireeperf import ProfileRecords, decode_bundle
from gputop.core.profiling.ireeprof.tools import (
    PROFILING_MODES,
    benchmark_call_ms,
    profiled_calls_command,
    timed_repetitions,
)
from gputop.core.profiling.overhead import (
    PROFILE_LEVELS,
    SLOW_CALL_ENV,
    SLOW_REFERENCE_CALL_ENV,
    TOOL_REFERENCE_MIN,
    measure_overhead,
    slowed_calls,
)
from gputop.core.records.base import to_json
from gputop.core.records.devices import DeviceInfo
from gputop.core.records.profile import ProfileOverhead, ProfileSummary

__all__ = ["CALL_PROFILING_MODES", "UNPROFILED_TOOL_METHOD", "profile_with_ireeprof"]

# Every record but the per-dispatch timestamps: where a call's time went, for backends whose dispatch times are
# device timestamps. local-task's dispatch records (host execution) are also its submissions' spans: no cheaper set.
CALL_PROFILING_MODES = {
    "vulkan": "queue-events,device-queue-events,memory-events",
    "hip": "queue-events,device-queue-events,memory-events",
}
# iree-benchmark-module begins profiling with its device, before its first call: none of its calls is unprofiled.
# Two runs, one on each side of a profiled run: a GPU's clocks and caches drift from one tool run to the next (the
# first of a series ran slower on an H200), and the mean of a run before and one after cancels a steady drift.
UNPROFILED_TOOL_METHOD = (
    "separate unprofiled runs of the same tool: {calls} calls of iree-benchmark-module without profiling, "
    "half just before the {run} and half just after (the tool profiles every call it makes once profiling is on)"
)


@dataclass(frozen=True)
class ProfiledRun:
    """One run of the tool with profiling on: its records, each call's synced time and the calls placed."""

    modes: str
    bundle: Path
    records: ProfileRecords
    walls_ms: list[float]
    calls: list[CallRecords]
    fit: str
    cost: ProfileOverhead | None = None


class _ToolRuns:
    """The tool's command lines for one pass, and its runs with their files under one `profile-HHMMSS` stem."""

    def __init__(
        self,
        vmfb: Path,
        devices: list[DeviceInfo],
        function: str,
        input_args: list[str],
        calls: int,
        out_dir: Path,
        cancel: threading.Event | None,
    ) -> None:
        self.devices, self.calls, self.out_dir, self.cancel = devices, calls, out_dir, cancel
        self.stem = pass_stem(out_dir)
        self._command = lambda bundle, modes: profiled_calls_command(vmfb, devices, function, input_args, bundle, modes)

    def unprofiled(self, side: str) -> list[float]:
        """Each call's time (ms) of a run of the same command with its profiling flags taken out: as many
        calls as the pass, at least TOOL_REFERENCE_MIN (a median and its spread need a few)."""
        timings = self.out_dir / f"{self.stem}-unprofiled-{side}.json"
        log = self.out_dir / f"{self.stem}-unprofiled-{side}.log"
        # The runs differ in profiling alone (and in the call marks, which the pass's cost includes): the
        # profiled command with its profiling flags (bundle path and modes among them) taken out.
        command = [a for a in self._command(timings, None) if not a.startswith("--device_profiling_")]
        output, code = run_logged(
            [*command, *timed_repetitions(max(self.calls, TOOL_REFERENCE_MIN), timings)], log, self.cancel,
            what=f"the unprofiled run {side} the pass", env=self._reference_test_env(side),
        )  # fmt: skip
        if code != 0:
            raise ProfileError(
                f"the unprofiled run {side} the pass failed: {last_line(output) or f'exit {code}'}", log_path=str(log)
            )
        return benchmark_call_ms(timings)

    def _reference_test_env(self, side: str) -> dict[str, str] | None:
        """The test hook SLOW_REFERENCE_CALL_ENV: the run before the pass with the call marks preloaded to sleep
        in one of its calls (and not in every call, as SLOW_CALL_ENV makes them); None: the plain environment."""
        slow = os.environ.get(SLOW_REFERENCE_CALL_ENV)
        library = marks_library()[0] if slow and side == "before" else None
        if library is None:
            return None
        env = marks_environment(library, self.out_dir / f"{self.stem}-unprofiled-{side}-marks.txt")
        env.pop(SLOW_CALL_ENV, None)
        env["GPUTOP_TEST_SLOW_CALL_AT"] = str(slow)
        return env

    def profiled(self, modes: str, name: str = "") -> ProfiledRun:
        """A run with `modes` on and the call marks preloaded, decoded: `name` tells its files from the first run's."""
        stem = f"{self.stem}{name}"
        bundle, timings = self.out_dir / f"{stem}.ireeprof", self.out_dir / f"{stem}-calls.json"
        log, marks = self.out_dir / f"{stem}.log", self.out_dir / f"{stem}-marks.txt"
        # Call marks: where each call starts and ends, so nothing of a call is left outside the records.
        library, no_marks = marks_library()
        env = marks_environment(library, marks) if library is not None else None
        command = [*self._command(bundle, modes), *timed_repetitions(self.calls, timings)]
        output, code = run_logged(command, log, self.cancel, what="the profiling run", env=env)
        if code != 0:
            raise ProfileError(f"the profiling run failed: {last_line(output) or f'exit {code}'}", log_path=str(log))
        records = decode_bundle(bundle, dispatches=modes == PROFILING_MODES[self.devices[0].backend])
        walls = benchmark_call_ms(timings)
        pairs = read_marks(marks) if library is not None else []
        calls, fit = ireeprof_calls(records, walls, [d.id for d in self.devices], marks=pairs)
        if library is None:
            fit += f"; call boundaries unseen ({no_marks})"
        return ProfiledRun(modes, bundle, records, walls, calls, fit)

    def cost(self, run: ProfiledRun, unprofiled_ms: list[float], which: str) -> ProfiledRun:
        method = UNPROFILED_TOOL_METHOD.format(calls=len(unprofiled_ms), run=which)
        return replace(run, cost=measure_overhead(run.walls_ms, unprofiled_ms, method))


def _too_dear(run: ProfiledRun) -> bool:
    return run.cost is not None and slowed_calls(to_json(run.cost))


def profile_with_ireeprof(
    vmfb: Path,
    devices: list[DeviceInfo],
    function: str,
    input_args: list[str],
    calls: int,
    out_dir: Path,
    cancel: threading.Event | None = None,
    *,
    with_overhead: bool = True,
    level: str = "default",
    source_ops: SourceOpsOf | None = None,
) -> tuple[ProfileSummary, list[DispatchEvent], tuple[float, float] | None]:
    """Run `calls` profiled calls with the shipped benchmark tool; decode; write the trace (each dispatch with
    its source ops, where `source_ops` knows them).

    With `with_overhead`, unprofiled runs of the same tool on each side of a profiled run set its calls
    against unprofiled ones (`overhead.py` says why a separate run). At the `default` level a run with
    every record that costs over WARN_RATIO is followed by one without per-dispatch timestamps, which
    the breakdown then explains (see the module's docstring). Returns the summary, the dispatches, and
    when the kernel-timed calls ran (IREE's host clock, CLOCK_MONOTONIC ns; None when the records place
    no call): the tool's own start-up is not the calls' time.
    """
    device = devices[0]
    if device.backend not in PROFILING_MODES:
        raise ProfileError(f"IREE HAL-native profiling is not available for {device.backend}")
    if level not in PROFILE_LEVELS:
        raise ProfileError(f"profile level {level!r}: one of {', '.join(PROFILE_LEVELS)}")
    tool = _ToolRuns(vmfb, devices, function, input_args, calls, out_dir, cancel)
    before = tool.unprofiled("before") if with_overhead else []
    full = tool.profiled(PROFILING_MODES[device.backend])
    after = tool.unprofiled("after") if with_overhead else []
    full = tool.cost(full, before + after, "pass")
    explained = full
    cheaper = CALL_PROFILING_MODES.get(device.backend)
    if level == "default" and cheaper is not None and _too_dear(full):
        explained = tool.profiled(cheaper, "-explained")
        explained = tool.cost(explained, after + tool.unprofiled("after-explained"), "run without dispatch timestamps")
    events = full.records.dispatches
    trace = write_trace(events, device.id, out_dir / f"{tool.stem}.trace.json", calls=full.calls, source_ops=source_ops)
    summary = summarize_events(
        events, calls=calls, source="ireeprof", device_id=device.id,
        # The synced wall of the run the kernels were timed in, so that wall minus kernels is one run's gap; the
        # explained calls' own wall is the breakdown's and `overhead.profiled_mean_ms`.
        call_wall_ms=statistics.fmean(full.walls_ms) if full.walls_ms else None,
        pools=full.records.pools, profile_path=str(full.bundle), trace_path=str(trace),
    )  # fmt: skip
    source = breakdown_source(explained.records)
    breakdown = build_breakdown(explained.calls, source=source, fit=explained.fit)
    separate = explained is not full
    if separate and breakdown is not None:  # the kernels' own time, from the run that timed each dispatch
        breakdown = replace(
            breakdown, kernel_ms=summary.call_kernel_ms, kernels_apart=True,
            source=f"{source}; kernel time from the run with per-dispatch timestamps",
        )  # fmt: skip
    summary = replace(
        summary, call_breakdown=breakdown, hints=explain_hints(full.bundle), overhead=explained.cost,
        profiling_on=f"IREE profiling modes {explained.modes}", level=level,
        kernels_overhead=full.cost if separate else None,
        kernels_profiling_on=f"IREE profiling modes {full.modes}" if separate else None,
    )  # fmt: skip
    return summary, events, calls_window_ns(full.calls)
