"""How long calls take: the steady calls' statistics and the OpenCL chain demo's stages.

`CallStats` is built by `call_times.CallTimer` and read by the Calls pane,
reports and the metrics endpoint (whose histogram uses `CALL_BUCKETS_MS`);
`StageTimings` is what the OpenCL runner measures of its two stages.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CALL_BUCKETS_MS", "CallMode", "CallStats", "StageTimings"]


# Upper bounds of the call-time histogram, in milliseconds: 10 us to 10 s in 1-2-5 steps, then +Inf (issue 58: a
# CUDA call of 30 us and a model's 5 s call both land between two bounds). Sessions before issue 58 counted over
# (0.05, 0.1, 0.25, 0.5, 1, 2.5, ..., 2500, 10000): their reports' `calls.buckets` have 17 entries, these 20.
CALL_BUCKETS_MS = (*(step * 10.0**exp for exp in range(-2, 4) for step in (1, 2, 5)), 10000.0)


@dataclass(frozen=True)
class CallMode:
    """One group of calls whose times sit apart from the others' (`call_modes.find_modes` says when).

    A steady run has one, with share 1.0. Two or more are the same calls in different conditions (a GPU
    clock that fell between submissions, seen on Vulkan): a p50 or mean over them depends on how many
    calls each group caught, not on the calls themselves.
    """

    share: float  # of the window's calls
    median_ms: float
    calls: int
    min_ms: float  # the group's fastest and slowest call: a call is the group's when it falls between
    max_ms: float
    clock_sm_mhz: float | None = None  # the mean SM clock over the group's calls, where a clock was read


@dataclass(frozen=True)
class CallStats:
    """Synchronised wall time of the steady calls (after the first)."""

    count: int = 0
    min_ms: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    max_ms: float | None = None
    mean_ms: float | None = None
    calls_per_s: float | None = None  # over the whole run: what a report of a finished run says
    recent_calls_per_s: float | None = None  # over the calls that ended in the last few seconds: what runs now
    recent_ms: tuple[float, ...] = ()
    # Every call since the start, counted per bucket of CALL_BUCKETS_MS (not cumulative; the last
    # bucket is +Inf), and their summed time: what a Prometheus histogram needs, exact over hours.
    buckets: tuple[int, ...] = ()
    sum_ms: float = 0.0
    # The window's calls in groups apart from each other (`call_modes.py`): one for a steady run, () without calls.
    modes: tuple[CallMode, ...] = ()


@dataclass(frozen=True)
class StageTimings:
    """The OpenCL chain demo's two stages timed three ways, plus the naive reading that misleads."""

    a_synced_ms: float
    b_synced_ms: float
    a_then_b_synced_ms: float
    a_enqueue_only_ms: float  # "A took this long" if you forget to sync
    b_after_unsynced_a_ms: float  # ...and then B seems to take A's time too
    a_kernel_ms: float
    b_kernel_ms: float
