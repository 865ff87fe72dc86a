"""A watched program's part of the run: its functions' call timers and what was seen of the process.

A state part (see `gputop.core.run.state`): its events (`set_view`,
`add_calls`) take the run's lock and publish; `fields()` is its piece of
every snapshot (`RunSnapshot.program`). A program calls many functions where
a gputop run calls one, so each function has the `CallTimer` a gputop run
uses; the busiest one is what the run's `calls` and `function` show (the
`calls` and `module` parts ask `busiest()`; its samples are what `gputop
compare` tests). The watcher inside the program times each call with the
program's monotonic clock, the engine's `time.perf_counter` on Linux, so the
end stamps line up with the engine's and calls/s over the last seconds holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TypedDict

from gputop.core.call_times import CallTimer
from gputop.core.records.program import FunctionCalls, ProgramView
from gputop.core.run.state.call_parts import FunctionParts
from gputop.core.run.state.link import RunLink

__all__ = ["ProgramFields", "ProgramState", "split_function"]


class ProgramFields(TypedDict):
    """The snapshot's fields this part fills."""

    program: ProgramView | None


def split_function(qualified: str) -> tuple[str, str]:
    """`module.function` into its two names; a name with no module keeps an empty module."""
    module, dot, name = qualified.rpartition(".")
    return (module, name) if dot else ("", qualified)


def _row_call(row: object) -> tuple[str, float, float] | None:
    """One recorded call as (qualified name, end_s, duration_s); None for a row that is not one."""
    if not isinstance(row, list | tuple) or len(row) < 3:
        return None
    if len(row) >= 4 and isinstance(row[2], int) and isinstance(row[3], int):
        qualified, end_s, duration_s = row[0], row[3] / 1e9, (row[3] - row[2]) / 1e9
    else:
        qualified, end_s, duration_s = row[0], row[1], row[2]
    if not isinstance(qualified, str) or not isinstance(end_s, int | float):
        return None
    if not isinstance(duration_s, int | float) or duration_s < 0:
        return None
    return qualified, float(end_s), float(duration_s)


@dataclass(eq=False)
class ProgramState:
    """None of it until a program is watched; then its view and one timer per function."""

    link: RunLink = field(default_factory=RunLink.alone)
    view: ProgramView | None = None
    timers: dict[str, CallTimer] = field(default_factory=dict)
    parts: dict[str, FunctionParts] = field(default_factory=dict)  # each function's calls taken apart
    total: int = 0
    last_end_ns: int | None = None  # the newest call's end: the next call's `between` starts there

    def set_view(self, view: ProgramView) -> None:
        """A watched program's view (its functions' rows are this part's own, filled in by `fields`)."""
        with self.link.lock:
            self.view = view
        self.link.publish(False)

    def add_calls(self, calls: list[object]) -> int:
        """`[["module.function", context_id, start_ns, end_ns, invoke_start_ns, invoke_end_ns, argument_bytes,
        same], ...]` as the watcher recorded them (a VmContext.invoke alone has the first four; its first form
        was `[name, end_s, duration_s]`); returns how many were taken (a bad row is skipped)."""
        taken = 0
        with self.link.lock:
            for row in calls:
                call = _row_call(row)
                if call is None:
                    continue
                qualified, end_s, duration_s = call
                timer = self.timers.get(qualified)
                if timer is None:
                    timer = self.timers[qualified] = CallTimer()
                timer.add(duration_s, ended_at=end_s)
                if isinstance(row, list | tuple) and len(row) >= 4 and isinstance(row[2], int):
                    self._take_apart(qualified, row)
                taken += 1
            self.total += taken
        self.link.publish(False)
        return taken

    def _take_apart(self, qualified: str, row: list[object] | tuple[object, ...]) -> None:
        """A call's parts (under the lock): arguments, invoke and results where the watcher saw them."""
        parts = self.parts.get(qualified)
        if parts is None:
            parts = self.parts[qualified] = FunctionParts()
        start, end = int(row[2]), int(row[3])  # type: ignore[call-overload]
        if len(row) >= 8 and isinstance(row[4], int) and isinstance(row[5], int):
            parts.add_call(start, end, row[4], row[5])
            parts.add_arguments(int(row[6]) if isinstance(row[6], int) else 0, bool(row[7]))
        else:
            parts.add_call(start, end, None, None)
        if self.last_end_ns is not None and start >= self.last_end_ns:
            parts.add_between((start - self.last_end_ns) / 1e9)
        self.last_end_ns = end

    def add_reads(self, reads: list[object]) -> None:
        """`[[function, start_ns, end_ns, bytes], ...]`: results read back to the host, by whose results they are."""
        with self.link.lock:
            for row in reads:
                if not isinstance(row, list | tuple) or len(row) < 4 or not isinstance(row[0], str):
                    continue
                start, end, nbytes = row[1], row[2], row[3]
                if not (isinstance(start, int) and isinstance(end, int) and isinstance(nbytes, int)):
                    continue
                parts = self.parts.get(row[0])
                if parts is None:
                    parts = self.parts[row[0]] = FunctionParts()
                parts.add_read(max(end - start, 0) / 1e9, nbytes)

    def busiest(self) -> tuple[str, CallTimer] | None:
        """The most called function and its timer; None before any call."""
        with self.link.lock:
            if not self.timers:
                return None
            return max(self.timers.items(), key=lambda item: item[1].count)

    def functions(self, now: float | None = None) -> tuple[FunctionCalls, ...]:
        """One row per function, the busiest first."""
        rows = []
        for qualified, timer in self.timers.items():
            module, name = split_function(qualified)
            stats = timer.snapshot(now, groups=False)  # the rows show no groups
            parts = self.parts.get(qualified)
            rows.append(
                FunctionCalls(
                    module=module,
                    name=name,
                    count=stats.count,
                    p50_ms=stats.p50_ms,
                    p95_ms=stats.p95_ms,
                    max_ms=stats.max_ms,
                    mean_ms=stats.mean_ms,
                    calls_per_s=stats.calls_per_s,
                    recent_calls_per_s=stats.recent_calls_per_s,
                    parts=parts.parts(stats.count) if parts is not None else None,
                    between_p50_ms=parts.between_p50_ms() if parts is not None else None,
                    buckets=stats.buckets,
                    sum_ms=stats.sum_ms,
                )
            )
        rows.sort(key=lambda row: (-row.count, row.module, row.name))
        return tuple(rows)

    def fields(self) -> ProgramFields:
        if self.view is None:
            return ProgramFields(program=None)
        return ProgramFields(program=replace(self.view, functions=self.functions()))
