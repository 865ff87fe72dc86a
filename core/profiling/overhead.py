"""What a profile pass costs the calls it measures, measured by the pass itself.

A profiler that slows the calls it times reports times of a program that does
not run that way unprofiled. Every pass therefore sets its calls' mean synced
time against unprofiled calls of the same work: the run's own calls just
before the pass where the pass runs in-process (CUPTI), and a run of the same
tool without profiling where the pass runs in another process, since
`iree-benchmark-module` turns profiling on with its device, before its first
call, and so never makes an unprofiled call of its own. Above `WARN_RATIO` the
pass says so, naming what it had on.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gputop.core.snapshot import ProfileOverhead

__all__ = [
    "PROFILE_LEVELS",
    "RUN_WINDOW_MIN",
    "SLOW_CALL_ENV",
    "WARN_RATIO",
    "kernels_cost_text",
    "measure_overhead",
    "overhead_text",
    "overhead_warning",
    "run_window",
    "slowed_for_test",
]

# The levels of a profile pass (`tool_pass.py`): default explains calls within WARN_RATIO where a cheaper run
# allows; full keeps every record, whatever it costs, and says what.
PROFILE_LEVELS = ("default", "full")
WARN_RATIO = 1.05  # profiled calls more than 5% slower than unprofiled ones: the kernel times are suspect
RUN_WINDOW_MIN = 20  # at least this many of the run's calls are the in-process pass's reference
# Test hook: microseconds of real sleep added inside every profiled call's timed window (the in-process
# pass's calls, and the tool pass's through the call-marks library), so a test can slow a real pass.
SLOW_CALL_ENV = "GPUTOP_TEST_SLOW_PROFILED_CALL_US"


def run_window(calls: int) -> int:
    """How many of the run's newest calls the in-process pass is set against: as many as it makes, at least 20."""
    return max(calls, RUN_WINDOW_MIN)


def measure_overhead(
    profiled_mean_ms: float | None, unprofiled_ms: Sequence[float], method: str
) -> ProfileOverhead | None:
    """The pass's mean call against the unprofiled calls' mean; None where either side is missing."""
    if profiled_mean_ms is None or not unprofiled_ms:
        return None
    unprofiled_mean = statistics.fmean(unprofiled_ms)
    if unprofiled_mean <= 0:
        return None
    return ProfileOverhead(
        ratio=profiled_mean_ms / unprofiled_mean,
        profiled_mean_ms=profiled_mean_ms,
        unprofiled_mean_ms=unprofiled_mean,
        unprofiled_calls=len(unprofiled_ms),
        method=method,
    )


def overhead_text(overhead: Mapping[str, Any]) -> str:
    """`profiled calls 1.02x the unprofiled ones (0.712 vs 0.698 ms, 300 unprofiled calls)`, from its JSON form."""
    return (
        f"profiled calls {overhead['ratio']:.2f}x the unprofiled ones ({overhead['profiled_mean_ms']:.3f} vs "
        f"{overhead['unprofiled_mean_ms']:.3f} ms, {overhead['unprofiled_calls']} unprofiled calls)"
    )


def overhead_warning(overhead: Mapping[str, Any] | None, profiling_on: str | None) -> str | None:
    """Why the pass's times are suspect when its calls ran over WARN_RATIO of the unprofiled ones, else None."""
    if not overhead or overhead["ratio"] <= WARN_RATIO:
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


def kernels_cost_text(kernels_overhead: Mapping[str, Any] | None) -> str | None:
    """Where a default pass's kernel times come from when its run with every record cost over WARN_RATIO: that
    run and its cost (the call breakdown explains the cheaper run); None when one run gave both."""
    if not kernels_overhead:
        return None
    return (
        f"kernel times from a run with per-dispatch timestamps, {kernels_overhead['ratio']:.2f}x the unprofiled "
        f"calls (over {WARN_RATIO:.2f}): the breakdown explains a run without them"
    )
