"""A run's profile passes: kernel times between calls, merged over passes.

CUDA kernels are recorded in-process with CUPTI around real calls; other IREE
backends are profiled by IREE's shipped benchmark tool on the same module and
inputs. Either way a pass runs on the run's thread, between calls, and its
kernels are merged with the passes before it into the Kernels table. Each
pass is warmed up until the GPU's clock is steady, its clocks are read while
it runs, and its kernels are rated against their work and the device's peaks
(`watch/clock_watch.py`, `profiling/work.py`, `profiling/efficiency.py`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import statistics
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from gputop.core.compare.samples import dispatch_samples
from gputop.core.errors import GputopError, Interrupted, UnwritableFile, no_space_left
from gputop.core.module.compile import SITES_SUFFIX
from gputop.core.profiling.breakdown import breakdown_line, build_breakdown
from gputop.core.profiling.cupti.activity import BREAKDOWN_KINDS, record_calls
from gputop.core.profiling.dispatches import DispatchEvent, pass_stem, summarize_events, write_trace
from gputop.core.profiling.ireeprof.tool_pass import profile_with_ireeprof
from gputop.core.profiling.overhead import (
    breakdown_cost_text,
    cupti_floor,
    kernels_cost_text,
    measure_overhead,
    overhead_text,
    overhead_warning,
    run_window,
    slowed_for_test,
)
from gputop.core.profiling.work.efficiency import KernelEfficiency
from gputop.core.profiling.work.ir_count import module_work
from gputop.core.profiling.work.source_ops import SourceOrigin, source_op_map
from gputop.core.records.base import to_json
from gputop.core.records.clocks import PassClocks
from gputop.core.records.devices import DeviceInfo
from gputop.core.records.profile import ProfileSummary, SourceOp
from gputop.core.run.capture import timed
from gputop.core.run.flow import RunContext
from gputop.core.watch.clock_watch import ClockWatch, combine_passes, gpu_clock_for, warm_up

__all__ = ["KEEP_PASSES", "ProfilePasses", "restarts_table"]

KEEP_PASSES = 5  # periodic profiling (the TUI's --profile-every, gputop serve) keeps the newest passes' files
EVENTS_KEPT = 100_000
CUPTI_SOURCE = "CUPTI kernel, copy, driver API and synchronization activity"
CUPTI_FIT = "one clock: CUPTI timestamps for the call's window, its API calls and the device's work"
CUPTI_ON = "CUPTI activity kinds " + ", ".join(("CONCURRENT_KERNEL", *BREAKDOWN_KINDS))
CUPTI_KERNELS_ON = "CUPTI activity kind CONCURRENT_KERNEL alone"


# profile-HHMMSS.ireeprof, -calls.json, -marks.txt, .log, ...; profile-HHMMSS_2... for a second pass in that second
PASS_FILE = re.compile(r"^(profile-\d+(?:_\d+)?)[.-]")


def _keep_newest_passes(folder: Path) -> None:
    """Delete the files of all but the newest KEEP_PASSES profile passes: a server profiles for days.

    A pass is its files' common `profile-HHMMSS[_N]` prefix, and passes are ordered by their files' time,
    not by the stamp, which starts again at midnight.
    """
    passes: dict[str, float] = {}
    for path in folder.glob("profile-*"):
        match = PASS_FILE.match(path.name)
        with contextlib.suppress(OSError):  # a file deleted meanwhile
            if match is not None:
                passes[match.group(1)] = max(passes.get(match.group(1), 0.0), path.stat().st_mtime)
    for stamp in sorted(passes, key=lambda name: passes[name])[:-KEEP_PASSES]:
        for path in folder.glob(f"{stamp}[.-]*"):
            path.unlink(missing_ok=True)


def restarts_table(earlier: Sequence[PassClocks], newest: PassClocks) -> bool:
    """Whether the kernel table drops its earlier passes: they ran at another clock than this steady one.

    Kernel times at 510 MHz merged with times at 1980 MHz describe neither clock, and the merged
    table's warning would stay on screen for the rest of the run after one cold pass. A steady pass
    (no warning) after a flagged pass, or whose mean SM clock is more than 10% from the earlier
    passes', starts the table again.
    """
    if newest.warning or not earlier:
        return False
    if any(p.warning for p in earlier):
        return True
    earlier_mhz = statistics.fmean(p.mean_sm_mhz for p in earlier)
    return abs(newest.mean_sm_mhz - earlier_mhz) > 0.1 * max(earlier_mhz, 1.0)


class ProfilePasses:
    """Takes profile passes for one IREE run and keeps their merged kernel table in the run's state."""

    def __init__(
        self, ctx: RunContext, devices: list[DeviceInfo], vmfb: Path, origin: SourceOrigin | None = None
    ) -> None:
        self._ctx = ctx
        self._devices = devices
        self._vmfb = vmfb
        self._origin = origin
        self._events: deque[DispatchEvent] = deque(maxlen=EVENTS_KEPT)
        self._calls = 0
        self._passes = 0
        self._clock, self._clock_reason = gpu_clock_for(devices[0])
        self._pass_clocks: deque[PassClocks] = deque(maxlen=EVENTS_KEPT)
        self._efficiency: KernelEfficiency | None = None

    def take(
        self,
        calls: int,
        *,
        function: str,
        input_files: list[str],
        call_once: Callable[[], object],
        level: str = "default",
    ) -> None:
        """One pass of `calls` calls at `level` (`tool_pass.py`); a failed pass is a warning in the log, and the
        run goes on. CUPTI's records cost every module measured 2.4% or less: on CUDA both levels take them all.

        Raises:
            UnwritableFile: the pass's files could not be written (a full disk): the run ends with it.
        """
        ctx = self._ctx
        device = self._devices[0]
        ctx.state.profile.set_profiling(True)
        watch = ClockWatch(self._clock)
        # The in-process pass is set against as many of the run's own calls again, unprofiled, made after the
        # pass's warm-up (so at the clock the pass runs at) and just before it; the run's newest calls where
        # there is no in-process pass.
        unprofiled = ctx.state.calls.recent_ms(run_window(calls))
        try:
            warmup = warm_up(self._clock, call_once, ctx.config.warmup_s, self._clock_reason)
            ctx.state.log.add("info", warmup)
            if device.backend == "cuda":
                call_s = timed(call_once)
                unprofiled = [call_s() * 1e3 for _ in range(run_window(calls))]
            ctx.state.log.add("info", f"profiling {calls} calls on {device.id}...")
            watch.start()
            calls_window: tuple[float, float] | None = None  # in-process CUPTI: the watch spans only the calls
            if device.backend == "cuda":
                latest, events = self._cupti_pass(calls, call_once, unprofiled, level)
            else:
                latest, events, calls_window = profile_with_ireeprof(
                    self._vmfb, self._devices, function, input_files, calls, ctx.session_dir,
                    cancel=ctx.controls.stop_event, level=level, source_ops=self._source_ops_named,
                )  # fmt: skip
            clocks = watch.pass_clocks(warmup, window_ns=calls_window)
            latest = self._merge(latest, events, calls, clocks)
            self._say_pass(latest, clocks)
        except (Interrupted, UnwritableFile):
            # A full disk ends the run: a pass that cannot write its files measures nothing, and so would
            # every pass after it; one line naming the file beats a warning repeated every period.
            raise
        except GputopError as exc:
            if no_space_left(ctx.session_dir):  # the tool's own words for it vary: the disk says why it failed
                raise UnwritableFile(ctx.session_dir, os.strerror(errno.ENOSPC)) from None
            ctx.state.log.add("warning", f"profile failed: {exc}", exc.log_path)
        finally:
            watch.stop()
            ctx.state.profile.set_profiling(False)

    def _cupti_pass(
        self, calls: int, call_once: Callable[[], object], unprofiled: list[float], level: str
    ) -> tuple[ProfileSummary, list[DispatchEvent]]:
        """A pass in this process: `calls` calls under CUPTI, their trace, where the time went and what the pass
        cost against `unprofiled` (the run's own calls just before it)."""
        ctx = self._ctx
        device = self._devices[0]
        recorded = record_calls(slowed_for_test(call_once), calls, apart=level == "default")
        events, walls = recorded.events, recorded.kernel_walls_s
        trace = write_trace(
            events, device.id, ctx.session_dir / f"{pass_stem(ctx.session_dir)}.trace.json",
            calls=recorded.call_records, source_ops=self._source_ops_named,
        )  # fmt: skip
        latest = summarize_events(
            events, calls=calls, source="cupti", device_id=device.id,
            call_wall_ms=statistics.fmean(walls) * 1e3, trace_path=str(trace),
        )  # fmt: skip
        breakdown = build_breakdown(recorded.call_records, source=CUPTI_SOURCE, fit=CUPTI_FIT)
        method = (
            f"{len(unprofiled)} unprofiled calls of the run's function made just before the pass, after "
            f"its warm-up (max(calls, 20)), in this process"
        )
        overhead = measure_overhead([wall * 1e3 for wall in walls], unprofiled, method)
        if overhead is not None:
            launches = sum(k.per_call for k in latest.kernels)
            floor, basis = cupti_floor(launches, overhead.unprofiled_median_ms)
            overhead = replace(overhead, floor_ratio=floor, floor_basis=basis)
        latest = replace(
            latest, call_breakdown=breakdown, overhead=overhead, level=level,
            profiling_on=CUPTI_KERNELS_ON if recorded.apart else CUPTI_ON,
        )  # fmt: skip
        if recorded.apart:  # the breakdown's own calls, with every kind on, and what they cost
            breakdown_cost = measure_overhead([wall * 1e3 for wall in recorded.breakdown_walls_s], unprofiled, method)
            latest = replace(latest, breakdown_overhead=breakdown_cost, breakdown_profiling_on=CUPTI_ON)
        return latest, events

    def _merge(
        self, latest: ProfileSummary, events: Sequence[DispatchEvent], calls: int, clocks: PassClocks | None
    ) -> ProfileSummary:
        """The pass joins the passes before it (or, at another clock, starts the table again): the merged kernel
        table and the dispatch samples go to the run's state. Returns the pass's own summary, rated."""
        ctx = self._ctx
        device = self._devices[0]
        if clocks is not None and restarts_table(self._pass_clocks, clocks):
            earlier = ", ".join(f"{p.mean_sm_mhz:.0f}" for p in self._pass_clocks)
            ctx.state.log.add(
                "info",
                f"profile: earlier passes ran at another clock (mean SM {earlier} MHz); the kernel table "
                f"restarts from this steady pass at {clocks.mean_sm_mhz:.0f} MHz",
            )
            self._events.clear()
            self._calls = 0
            self._passes = 0
            self._pass_clocks.clear()
        self._events.extend(events)
        self._calls += calls
        self._passes += 1
        ctx.state.calls.set_dispatch_samples(
            dispatch_samples(
                ((e.name, e.duration_ns) for e in self._events),
                calls=self._calls,
                source=latest.source,
                device=device.id,
                passes=self._passes,
            )
        )
        latest = self._rate(latest, [clocks] if clocks else [])
        if clocks is not None:
            self._pass_clocks.append(clocks)
        merged = latest
        if self._calls > calls:
            merged = summarize_events(
                list(self._events), calls=self._calls, source=latest.source, device_id=device.id,
                call_wall_ms=latest.call_wall_ms, pools=list(latest.pools), profile_path=latest.profile_path,
                trace_path=latest.trace_path,
            )  # fmt: skip
            merged = self._rate(merged, list(self._pass_clocks))
            # The kernel table grows over passes; where the time went is the newest pass's own, and so are
            # its per-call figures: merged kernels against the newest pass's wall made a gap no pass had
            # (issue 49: the header said 25.155 ms of kernels in a 21.595 ms call, the Log another gap).
            merged = replace(
                merged, call_breakdown=latest.call_breakdown, hints=latest.hints, overhead=latest.overhead,
                profiling_on=latest.profiling_on, level=latest.level, kernels_overhead=latest.kernels_overhead,
                kernels_profiling_on=latest.kernels_profiling_on, call_kernel_ms=latest.call_kernel_ms,
                breakdown_overhead=latest.breakdown_overhead, breakdown_profiling_on=latest.breakdown_profiling_on,
                gap_ms=latest.gap_ms, passes=self._passes, pass_calls=calls,
            )  # fmt: skip
        ctx.state.profile.set_profile(merged)
        return latest

    def _say_pass(self, latest: ProfileSummary, clocks: PassClocks | None) -> None:
        """The pass in the log: its clocks, its kernels and time per call, where the time went, its cost, hints."""
        ctx = self._ctx
        if clocks is not None and clocks.window:
            ctx.state.log.add("info", f"profile: {clocks.window}")
        if latest.clocks is not None and latest.clocks.warning:
            ctx.state.log.add("warning", f"profile: {latest.clocks.warning}")
        if ctx.config.profile_every_s:
            _keep_newest_passes(ctx.session_dir)
        gap = f", gap {latest.gap_ms:.3f} ms" if latest.gap_ms is not None else ""
        wall = f" of {latest.call_wall_ms:.3f} ms synced" if latest.call_wall_ms is not None else ""
        ctx.state.log.add(
            "info",
            f"profile: {len(latest.kernels)} kernels, {latest.call_kernel_ms:.3f} ms kernel time per call"
            f"{wall}{gap}; trace {latest.trace_path}",
        )
        if latest.call_breakdown is not None:
            ctx.state.log.add("info", f"profile: {breakdown_line(latest.call_breakdown)}")
        self._say_overhead(latest)
        for hint in latest.hints:
            ctx.state.log.add("info", f"iree-profile explain: {hint}")

    def _say_overhead(self, latest: ProfileSummary) -> None:
        """The pass's own cost as an event, and a warning naming what was on when it is over 1.05."""
        state = self._ctx.state
        if latest.overhead is None:
            state.log.add("info", "profile: overhead unmeasured (no unprofiled calls to set the pass against)")
            return
        data = to_json(latest.overhead)
        state.log.add("info", f"profile: {overhead_text(data)}; unprofiled: {latest.overhead.method}")
        warning = overhead_warning(data, latest.profiling_on)
        if warning:
            state.log.add("warning", f"profile: {warning}")
        separate = kernels_cost_text(to_json(latest.kernels_overhead) if latest.kernels_overhead else None)
        if separate:
            state.log.add("info", f"profile: {separate} ({latest.kernels_profiling_on})")
        apart = breakdown_cost_text(to_json(latest.breakdown_overhead) if latest.breakdown_overhead else None)
        if apart:
            state.log.add("info", f"profile: {apart} ({latest.breakdown_profiling_on})")

    def rate_alone(self, summary: ProfileSummary) -> ProfileSummary:
        """A kernel table no pass of this run made (a counters pass's own), rated as a pass is, without clocks."""
        return self._rate(summary, [])

    def _rate(self, summary: ProfileSummary, passes: list[PassClocks]) -> ProfileSummary:
        """The summary's kernels against their work and the device's peaks at the passes' clocks."""
        return self._kernel_efficiency().annotate(summary, combine_passes(passes), self._clock_reason)

    def _source_ops_named(self, kernel: str) -> tuple[SourceOp, ...] | None:
        """A kernel's source ops for the pass's trace, which is written before its kernels are rated."""
        return self._kernel_efficiency().source_ops_named(kernel)

    def _kernel_efficiency(self) -> KernelEfficiency:
        """The module's work and source ops, read on first use (the first pass's trace or its rating)."""
        if self._efficiency is None:
            device = self._devices[0]
            work = module_work(self._vmfb)
            sites = self._vmfb.with_suffix(SITES_SUFFIX)
            source_map = source_op_map(self._origin, work, sites) if self._origin is not None else None
            self._efficiency = KernelEfficiency(device, work, self._clock and self._clock.name, source_map)
            counted = f"{len(work.dispatches)} dispatches counted from {work.source}"
            if work.reason:
                counted = f"from {self._efficiency.work_source}"
            self._ctx.state.log.add("info", f"work per dispatch: {counted}")
        return self._efficiency
