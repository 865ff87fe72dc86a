"""What a profile pass costs the calls it measures, measured by the pass itself.

A profiler that slows the calls it times reports times of a program that does
not run that way unprofiled. Every pass therefore sets its calls' median synced
time against the median of unprofiled calls of the same work: the run's own
calls just before the pass where the pass runs in-process (CUPTI), and runs of
the same tool without profiling (as many calls each as the pass, at least
`TOOL_REFERENCE_MIN` each, one just before it and one just after) where the pass
runs in another process, since `iree-benchmark-module` turns profiling on with
its device, before its first call, and so never makes an unprofiled call of
its own. Medians, not means: one slow call among twenty unprofiled ones (a
first call that built its pipelines, a neighbour's burst) moved a mean so far
that a pass read 0.80x of the calls it slowed. The unprofiled calls' spread
(p25 to p75) is stated with it, and a pass whose median lies inside it reads
"within the unprofiled calls' spread": it is neither faster nor slower by
anything these calls can tell. Above `WARN_RATIO`, and beyond that spread, the
pass says so, naming what it had on.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from gputop.core.records.profile import ProfileOverhead

__all__ = [
    "CUPTI_KERNEL_RECORD_US",
    "PROFILE_LEVELS",
    "RUN_WINDOW_MIN",
    "SLOW_CALL_ENV",
    "SLOW_REFERENCE_CALL_ENV",
    "TOOL_REFERENCE_MIN",
    "WARN_RATIO",
    "breakdown_cost_text",
    "cupti_floor",
    "kernels_cost_text",
    "measure_overhead",
    "overhead_text",
    "overhead_warning",
    "run_window",
    "slowed_calls",
    "slowed_for_test",
]

# The levels of a profile pass (`ireeprof/tool_pass.py`): default explains calls within WARN_RATIO where a cheaper run
# allows; full keeps every record, whatever it costs, and says what.
PROFILE_LEVELS = ("default", "full")
WARN_RATIO = 1.05  # profiled calls more than 5% slower than unprofiled ones: the kernel times are suspect
RUN_WINDOW_MIN = 20  # at least this many of the run's calls are the in-process pass's reference
TOOL_REFERENCE_MIN = 10  # each unprofiled run of the tool makes at least this many calls: 20 in all, or more
# Test hook: microseconds of real sleep added inside every profiled call's timed window (the in-process
# pass's calls, and the tool pass's through the call-marks library), so a test can slow a real pass.
SLOW_CALL_ENV = "GPUTOP_TEST_SLOW_PROFILED_CALL_US"
# Test hook: `N:US`, a real sleep of US microseconds in the tool's unprofiled run before the pass, once, after
# the N-th read of the process's CPU clock (the call-marks library counts them; N = 5 lands in the 2nd call),
# so a test can put one slow call among a real pass's reference calls.
SLOW_REFERENCE_CALL_ENV = "GPUTOP_TEST_SLOW_REFERENCE_CALL"


def run_window(calls: int) -> int:
    """How many of the run's newest calls the in-process pass is set against: as many as it makes, at least 20."""
    return max(calls, RUN_WINDOW_MIN)


def measure_overhead(
    profiled_ms: Sequence[float], unprofiled_ms: Sequence[float], method: str
) -> ProfileOverhead | None:
    """The pass's calls (ms each) against the unprofiled calls: medians, the unprofiled p25-p75 spread, and
    whether the profiled median lies within it (see the module's docstring); None where a side is missing."""
    if not len(profiled_ms) or not len(unprofiled_ms):
        return None
    p25, unprofiled_median, p75 = (float(v) for v in np.percentile(unprofiled_ms, [25, 50, 75]))
    profiled_median = float(np.median(profiled_ms))
    if unprofiled_median <= 0:
        return None
    return ProfileOverhead(
        ratio=profiled_median / unprofiled_median,
        profiled_mean_ms=statistics.fmean(profiled_ms),
        unprofiled_mean_ms=statistics.fmean(unprofiled_ms),
        unprofiled_calls=len(unprofiled_ms),
        method=method,
        statistic="median",
        profiled_median_ms=profiled_median,
        unprofiled_median_ms=unprofiled_median,
        unprofiled_spread_ms=(p25, p75),
        profiled_calls=len(profiled_ms),
        within_spread=p25 <= profiled_median <= p75,
    )


def overhead_text(overhead: Mapping[str, Any]) -> str:
    """`profiled calls 1.12x the unprofiled ones (p50 0.755 vs 0.674 ms; unprofiled p25-p75 0.668-0.681 ms,
    300 unprofiled calls)`, or `profiled calls within the unprofiled calls' spread (...)`, from its JSON form.
    A record of an older gputop (means, no spread) reads as it did."""
    calls = f"{overhead['unprofiled_calls']} unprofiled calls"
    if overhead.get("statistic") != "median":
        return (
            f"profiled calls {overhead['ratio']:.2f}x the unprofiled ones ({overhead['profiled_mean_ms']:.3f} vs "
            f"{overhead['unprofiled_mean_ms']:.3f} ms, {calls})"
        )
    low, high = overhead["unprofiled_spread_ms"]
    figures = (
        f"p50 {overhead['profiled_median_ms']:.3f} vs {overhead['unprofiled_median_ms']:.3f} ms; "
        f"unprofiled p25-p75 {low:.3f}-{high:.3f} ms, {calls}"
    )
    if overhead.get("within_spread"):
        return f"profiled calls within the unprofiled calls' spread ({figures})"
    floor = f"; floor {overhead['floor_ratio']:.2f}x: {overhead['floor_basis']}" if overhead.get("floor_ratio") else ""
    return f"profiled calls {overhead['ratio']:.2f}x the unprofiled ones ({figures}){floor}"


# CUPTI's kernel activity records alone, per kernel launch: on an H200 (driver 580.159.04, cupti-python 13.4), the
# torch-exported ResNet-20's calls (26 kernels, 0.384 ms) ran 1.059x with only CONCURRENT_KERNEL on, 7 alternating
# rounds (bench/profile_overhead.py; BENCHMARKS.md "Profiling overhead"): 1.0 us a kernel. No pass that times
# kernels with CUPTI costs less; a module of many short kernels cannot come within 5% of its unprofiled calls.
CUPTI_KERNEL_RECORD_US = 1.0


def cupti_floor(kernels_per_call: float, unprofiled_median_ms: float | None) -> tuple[float | None, str | None]:
    """The least a CUPTI pass can cost a call of `kernels_per_call` kernels, and how that was had."""
    if not unprofiled_median_ms or kernels_per_call <= 0:
        return None, None
    ratio = 1.0 + kernels_per_call * CUPTI_KERNEL_RECORD_US / 1e3 / unprofiled_median_ms
    basis = (
        f"CUPTI's kernel records alone, about {CUPTI_KERNEL_RECORD_US:.1f} us a kernel (measured on an H200), "
        f"for this call's {kernels_per_call:g} kernels"
    )
    return ratio, basis


def slowed_calls(overhead: Mapping[str, Any] | None) -> bool:
    """Whether the pass slowed its calls past WARN_RATIO, beyond the unprofiled calls' own spread."""
    if not overhead:
        return False
    return overhead["ratio"] > WARN_RATIO and not overhead.get("within_spread")


def overhead_warning(overhead: Mapping[str, Any] | None, profiling_on: str | None) -> str | None:
    """Why the pass's times are suspect when its calls ran over WARN_RATIO of the unprofiled ones (beyond their
    spread), else None."""
    if not overhead or not slowed_calls(overhead):
        return None
    on = f" with {profiling_on} on" if profiling_on else ""
    return (
        f"profiling slowed the calls {overhead['ratio']:.2f}x (over {WARN_RATIO:.2f}){on}: "
        "kernel times describe a slower run than the unprofiled one"
    )


def slowed_for_test(call_once: Callable[[], object]) -> Callable[[], object]:
    """`call_once` with SLOW_CALL_ENV's sleep after it (a test hook; unset, the call itself)."""
    micros = int(os.environ.get(SLOW_CALL_ENV) or 0)
    if micros <= 0:
        return call_once

    def slowed() -> object:
        result = call_once()
        time.sleep(micros / 1e6)
        return result

    return slowed


def breakdown_cost_text(breakdown_overhead: Mapping[str, Any] | None) -> str | None:
    """Where a default CUDA pass's call breakdown comes from: as many calls again as the kernels', with CUPTI's
    driver, copy, memset and synchronization records on too, and their own cost; None when one set gave both."""
    if not breakdown_overhead:
        return None
    return (
        f"call breakdown from {breakdown_overhead.get('profiled_calls')} more calls with every activity kind on, "
        f"{breakdown_overhead['ratio']:.2f}x the unprofiled calls (the kernel times' calls had kernel records alone)"
    )


def kernels_cost_text(kernels_overhead: Mapping[str, Any] | None) -> str | None:
    """Where a default pass's kernel times come from when its run with every record cost over WARN_RATIO: that
    run and its cost (the call breakdown explains the cheaper run); None when one run gave both."""
    if not kernels_overhead:
        return None
    return (
        f"kernel times from a run with per-dispatch timestamps, {kernels_overhead['ratio']:.2f}x the unprofiled "
        f"calls (over {WARN_RATIO:.2f}): the breakdown explains a run without them"
    )
