"""What went wrong in a watched program, one line each with the fix: the diagnoses of `gputop -- CMD`.

These read only values (the program's loads, phases, call stats and memory
samples), so the same lines come live in the Log and header and at the end in
the report's `hints`, and a test can hold them against a program it wrote.
The thresholds are stated where they are used; each says why.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from gputop.core.records.program import FunctionCalls, MemoryGrowth, ProgramLoad
from gputop.core.units import human_bytes, seconds

__all__ = [
    "ARGUMENTS_SAME_SHARE",
    "CONTEXTS_PER_CALL",
    "GrowthPoint",
    "Hint",
    "argument_upload_hints",
    "contexts_per_call_hints",
    "find_growth",
    "growth_hint",
    "held_growth",
    "host_memory_hints",
    "loaded_twice_hints",
    "slow_phase_hints",
]

# A diagnosis is (its subject, its line): a later line on the same subject (newer figures) replaces the first in
# place, so a finding is said once however often its figures change.
Hint = tuple[str, str]

CONTEXTS_PER_CALL = 0.5  # contexts made for at least every other call: one per request, not one per device
CONTEXTS_MIN = 10  # a program may make a few contexts (one per device, a reload): ten or more is a pattern
ARGUMENTS_SAME_SHARE = 0.9  # of calls given the very arrays of the call before: the loop uploads the same bytes
ARGUMENTS_MIN_CALLS = 10
ARGUMENTS_MIN_SHARE = 0.1  # of the call: an upload that costs less is not worth a line
SLOW_PHASE_RATIO = 100.0  # a context or first call over 100x a steady call is worth a line (the bar)
STEADY_CALLS = 5  # calls needed before a "steady call" means anything
GROWTH_MIN_CALLS = 20  # calls a growth must span before it is called one
GROWTH_RISING_SHARE = 0.8  # of the steps between samples that must rise (a held result rises every time)
# RSS moves for many reasons (allocator pools, the page cache of a mapped file): only a large, steady rise counts.
RSS_MIN_BYTES_PER_CALL = 64 * 1024
RSS_MIN_TOTAL = 32 * 1024 * 1024


@dataclass(frozen=True)
class GrowthPoint:
    """One memory sample of a watched program: calls made so far and bytes by each source."""

    calls: int
    held_bytes: int | None
    allocator_live_bytes: int | None
    rss_bytes: int | None


def host_memory_hints(loads: Sequence[ProgramLoad]) -> list[Hint]:
    """Parameters that went through the program's own memory where the file could have been handed over."""
    slow = [load for load in loads if load.kind == "parameters" and load.through == "host memory"]
    if not slow:
        return []
    total = sum(load.bytes for load in slow)
    spent = sum(load.seconds for load in slow)
    apis = ", ".join(sorted({load.api for load in slow}))
    return [
        (
            "parameters through host memory",
            f"parameters: {human_bytes(total)} went through host memory ({apis}, {seconds(spent)} in IREE after the "
            "program's own reads); "
            "hand IREE the file instead: ParameterIndex().load(path) maps it (mode='file_async' streams it), or "
            "load_from_file_handle(FileHandle.wrap_fd(fd), 'irpa'): no copy through Python",
        )
    ]


def slow_phase_hints(first_call_s: float | None, steady_ms: float | None, calls: int) -> list[Hint]:
    """A first call over SLOW_PHASE_RATIO x a steady call: how long, and what it pays.

    A context made once is a cost, not a mistake, however long it takes (a CUDA device's start alone is
    10-200 ms): it is in `phases.context_s`, and `contexts_per_call_hints` names the mistake of making many.
    """
    if steady_ms is None or steady_ms <= 0 or calls < STEADY_CALLS:
        return []
    steady_s = steady_ms / 1e3
    if first_call_s is not None and first_call_s / steady_s > SLOW_PHASE_RATIO:
        return [
            (
                "first call",
                f"first call: {seconds(first_call_s)}, {first_call_s / steady_s:,.0f}x a steady call "
                f"({steady_ms:.3f} ms); it pays the executables' load and the device's warm-up: make one call "
                "before you time or serve",
            )
        ]
    return []


def contexts_per_call_hints(contexts: int, calls: int, context_ms: float | None, call_ms: float | None) -> list[Hint]:
    """Contexts made for most calls (a context per request): how many, what one costs here, the fix."""
    if contexts < CONTEXTS_MIN or calls <= 0 or contexts < CONTEXTS_PER_CALL * calls:
        return []
    cost = ""
    if context_ms is not None:
        cost = f" (a context costs {context_ms:.3f} ms here, the median of {contexts:,}"
        cost += f"; a call {call_ms:.3f} ms)" if call_ms else ")"
    return [
        (
            "contexts per call",
            f"contexts: {contexts:,} contexts for {calls:,} calls: make the context once and reuse it for every "
            f"request{cost}",
        )
    ]


def argument_upload_hints(functions: Sequence[FunctionCalls]) -> list[Hint]:
    """A function given the very same numpy arrays call after call: they are uploaded to the device every time.

    The saving is what the program's own calls measured: the `arguments` part (numpy to device buffers) that a
    device array made once, outside the loop, takes away.
    """
    hints = []
    for row in functions:
        parts = row.parts
        if parts is None or row.count < ARGUMENTS_MIN_CALLS or parts.same_arguments is None:
            continue
        arguments = parts.arguments
        if parts.same_arguments < ARGUMENTS_SAME_SHARE or not arguments.bytes or arguments.p50_ms is None:
            continue
        if arguments.share is None or arguments.share < ARGUMENTS_MIN_SHARE:
            continue
        call = f" of {row.p50_ms:.3f} ms" if row.p50_ms is not None else ""
        share = f" ({arguments.share:.0%} of the call's time)" if arguments.share is not None else ""
        name = f"{row.module}.{row.name}" if row.module else row.name
        hints.append(
            (
                f"arguments uploaded again: {name}",
                f"arguments: {name} is given the same numpy arguments on every call "
                f"({human_bytes(arguments.bytes)}), uploaded each time: {arguments.p50_ms:.3f} ms a call{call}"
                f"{share}; make it a device array once, outside the loop (x = iree.runtime.asdevicearray(device, "
                f"x)), and pass that: saves about {arguments.p50_ms:.3f} ms a call",
            )
        )
    return hints


def _rising_since(points: Sequence[tuple[int, int]]) -> tuple[int, float] | None:
    """Where a steady rise begins among (calls, bytes) points and its bytes per call; None when it does not rise."""
    if len(points) < 3:
        return None
    # Look back from the newest point for the longest run of points that keep rising with the calls.
    start = len(points) - 1
    rising = 0
    steps = 0
    for i in range(len(points) - 1, 0, -1):
        calls_step = points[i][0] - points[i - 1][0]
        if calls_step <= 0:
            continue
        steps += 1
        if points[i][1] > points[i - 1][1]:
            rising += 1
            start = i - 1
        elif rising / steps < GROWTH_RISING_SHARE:
            break
    first, last = points[start], points[-1]
    calls = last[0] - first[0]
    grown = last[1] - first[1]
    if calls < GROWTH_MIN_CALLS or grown <= 0 or steps == 0 or rising / steps < GROWTH_RISING_SHARE:
        return None
    return first[0], _slope(points[start:])


def _slope(points: Sequence[tuple[int, int]]) -> float:
    """Bytes per call by least squares: the two ends alone carry the sampling's offset of a call or two."""
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    if spread <= 0:
        return 0.0
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread


def find_growth(points: Sequence[GrowthPoint]) -> MemoryGrowth | None:
    """Memory that rises with the calls: held results first (exact), then the allocator, then RSS (noisy)."""
    sources: list[tuple[str, list[tuple[int, int]], float, int]] = [
        ("held results", [(p.calls, p.held_bytes) for p in points if p.held_bytes is not None], 1.0, 1),
        (
            "allocator",
            [(p.calls, p.allocator_live_bytes) for p in points if p.allocator_live_bytes is not None],
            1.0,
            1,
        ),
        (
            "rss",
            [(p.calls, p.rss_bytes) for p in points if p.rss_bytes is not None],
            RSS_MIN_BYTES_PER_CALL,
            RSS_MIN_TOTAL,
        ),
    ]
    for source, series, min_per_call, min_total in sources:
        found = _rising_since(series)
        if found is None:
            continue
        since, per_call = found
        if per_call < min_per_call or per_call * (series[-1][0] - since) < min_total:
            continue
        return MemoryGrowth(bytes_per_call=round(per_call), since_call=since, source=source)
    return None


HELD_SHARE = 0.9  # of the calls made whose results are still held: the program keeps (nearly) every result
HELD_MIN = 5  # results held before that says anything


def held_growth(held_count: int, held_bytes: int, calls: int) -> MemoryGrowth | None:
    """Growth known exactly from the first call: the program holds (nearly) every result its calls returned.

    The sampled detector (`find_growth`) needs GROWTH_MIN_CALLS and a rise over several samples; held results
    are counted by the watcher itself, so a short program that keeps its 300 results is stated at once.
    """
    if held_count < HELD_MIN or calls <= 0 or held_count < HELD_SHARE * calls:
        return None
    return MemoryGrowth(
        bytes_per_call=held_bytes // held_count, since_call=max(1, calls - held_count + 1), source="held results"
    )


def growth_hint(growth: MemoryGrowth | None) -> list[Hint]:
    if growth is None:
        return []
    what = {
        "held results": "the program keeps the arrays its calls return",
        "allocator": "the device allocator's live bytes rise",
        "rss": "the process's resident memory rises",
    }[growth.source]
    return [
        (
            "memory grows",
            f"memory grows {human_bytes(growth.bytes_per_call)} per call since call {growth.since_call}: {what}; "
            "drop references to old results (copy out what you keep with to_host()) or reuse output buffers",
        )
    ]


def loaded_twice_hints(loads: Sequence[ProgramLoad]) -> list[Hint]:
    """The same module or parameter files loaded more than once in one process (once per device included)."""
    hints: list[Hint] = []
    modules = Counter(
        (load.files[0] if load.files else load.name, load.bytes) for load in loads if load.kind == "module"
    )
    for (what, size), times in modules.items():
        if times > 1 and what:
            hints.append(
                (
                    f"module {what} loaded again",
                    f"module {what} loaded {times} times ({human_bytes(size)} each): load the VmModule once and "
                    "pass it to every context (one per device)",
                )
            )
    params = Counter(file for load in loads if load.kind == "parameters" for file in load.files)
    for file, times in params.items():
        if times > 1:
            hints.append(
                (
                    f"parameters {file} loaded again",
                    f"parameters {file} loaded {times} times: load the index once and make each device's provider "
                    "from it (create_provider), not a new index per device",
                )
            )
    return hints
