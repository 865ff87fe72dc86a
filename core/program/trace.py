"""A watched program's timeline as a Chrome trace (Perfetto opens it): its calls, their parts, kernels, stacks.

A watched session keeps its newest calls as the watcher recorded them (start,
end, and the VM call's window inside), the reads back, the rounds of sampled
Python and the last CUDA profile's kernels, in `program_trace.json` beside its
report (`TraceKeeper` holds them while the program runs, bounded). This turns
that block into trace events: per function a track of calls, each a span with
its parts as child spans (`arguments`, `invoke`, `results`) and its bytes in
`args`; reads back as `to_host` spans; each sampling round as a span naming the
program's busiest lines; the kernels inside their calls' `invoke` on a `GPU`
track, placed by each profiled call's start on both clocks (CUPTI's and the
calls' perf_counter). Times are microseconds from the first event.
"""

from __future__ import annotations

import contextlib
import json
from collections import deque
from pathlib import Path
from typing import Any

from gputop.core.errors import UsageError
from gputop.core.store.writer import PROGRAM_TRACE as TRACE_FILE

__all__ = ["TRACE_CALLS", "TRACE_FILE", "TRACE_ROUNDS", "TraceKeeper", "chrome_trace", "program_trace"]

TRACE_CALLS = 5_000  # the newest calls (and reads) kept for the trace: a few hundred kB
TRACE_ROUNDS = 300  # sampling rounds: 25 minutes at py-spy's 5 s rounds
PID = 1
GPU_TID = 10_000


class TraceKeeper:
    """The newest calls, reads, stack rounds and the last profile's kernels of one watched process."""

    def __init__(self) -> None:
        self.calls: deque[list[Any]] = deque(maxlen=TRACE_CALLS)
        self.reads: deque[list[Any]] = deque(maxlen=TRACE_CALLS)
        self.rounds: deque[list[Any]] = deque(maxlen=TRACE_ROUNDS)
        self.kernels: dict[str, Any] | None = None

    def add_calls(self, rows: list[Any]) -> None:
        self.calls.extend(row for row in rows if isinstance(row, list) and len(row) >= 4)

    def add_reads(self, rows: list[Any]) -> None:
        self.reads.extend(row for row in rows if isinstance(row, list) and len(row) >= 4)

    def add_round(self, start_s: float, end_s: float, lines: list[tuple[str, int, str, float]]) -> None:
        self.rounds.append([start_s, end_s, [list(line) for line in lines]])

    def add_kernels(self, event: dict[str, Any]) -> None:
        windows, starts = event.get("windows"), event.get("perf_starts")
        if isinstance(windows, list) and isinstance(starts, list) and len(starts) == len(windows):
            self.kernels = {"windows": windows, "perf_starts": starts, "records": event.get("records") or []}

    def block(self) -> dict[str, Any]:
        """What `program_trace.json` holds (format 1)."""
        return {
            "format": 1,
            "calls": list(self.calls),
            "reads": list(self.reads),
            "rounds": list(self.rounds),
            "kernels": self.kernels,
        }


def _span(name: str, tid: int, start_us: float, dur_us: float, args: dict[str, Any] | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"name": name, "ph": "X", "pid": PID, "tid": tid, "ts": start_us, "dur": max(dur_us, 0.0)}
    if args:
        event["args"] = args
    return event


def _origin(block: dict[str, Any]) -> int:
    starts = [int(row[2]) for row in block.get("calls") or ()] + [int(row[1]) for row in block.get("reads") or ()]
    starts += [int(r[0] * 1e9) for r in block.get("rounds") or ()]
    return min(starts, default=0)


def chrome_trace(block: dict[str, Any]) -> dict[str, Any]:
    """The trace events of `block` (`TraceKeeper.block`): a track per function, named as the program calls it."""
    origin = _origin(block)
    events: list[dict[str, Any]] = []
    tids: dict[str, int] = {}

    def us(ns: int | float) -> float:
        return (float(ns) - origin) / 1e3

    def track(function: str) -> int:
        if function not in tids:
            tids[function] = len(tids) + 1
            meta = {"name": "thread_name", "ph": "M", "pid": PID, "tid": tids[function], "args": {"name": function}}
            events.append(meta)
        return tids[function]

    events.append({"name": "process_name", "ph": "M", "pid": PID, "args": {"name": "watched program"}})
    for row in block.get("calls") or ():
        function, start, end = str(row[0]), int(row[2]), int(row[3])
        tid = track(function)
        args: dict[str, Any] = {}
        if len(row) >= 8:
            args["argument_bytes"] = row[6]
            args["same_arguments"] = bool(row[7])
        events.append(_span(function, tid, us(start), (end - start) / 1e3, args))
        if len(row) >= 8:
            invoke_start, invoke_end = int(row[4]), int(row[5])
            events.append(_span("arguments", tid, us(start), (invoke_start - start) / 1e3))
            events.append(_span("invoke", tid, us(invoke_start), (invoke_end - invoke_start) / 1e3))
            events.append(_span("results", tid, us(invoke_end), (end - invoke_end) / 1e3))
        else:
            events.append(_span("invoke", tid, us(start), (end - start) / 1e3))
    for row in block.get("reads") or ():
        function, start, end, nbytes = str(row[0]), int(row[1]), int(row[2]), row[3]
        events.append(_span("to_host", track(function), us(start), (end - start) / 1e3, {"bytes": nbytes}))
    stacks_tid = len(tids) + 1
    for start_s, end_s, lines in block.get("rounds") or ():
        if not lines:
            continue
        file, line, function, share = lines[0]
        name = f"{function} ({file.rsplit('/', 1)[-1]}:{line}) {share:.0%}"
        top = [{"line": f"{f}:{n}", "function": fn, "share": round(s, 3)} for f, n, fn, s in lines]
        events.append(_span(name, stacks_tid, us(start_s * 1e9), (end_s - start_s) * 1e6, {"top": top}))
    if block.get("rounds"):
        events.append(
            {"name": "thread_name", "ph": "M", "pid": PID, "tid": stacks_tid, "args": {"name": "python (py-spy)"}}
        )
    events.extend(_kernel_events(block.get("kernels"), us))
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def _kernel_events(kernels: dict[str, Any] | None, us: Any) -> list[dict[str, Any]]:
    """The profile's kernels on the GPU track, each moved onto the calls' clock by its call's window."""
    if not kernels:
        return []
    windows = [(int(w[0]), int(w[1]), int(p)) for w, p in zip(kernels["windows"], kernels["perf_starts"], strict=True)]
    events = [{"name": "thread_name", "ph": "M", "pid": PID, "tid": GPU_TID, "args": {"name": "GPU (CUPTI)"}}]
    for record in kernels.get("records") or ():
        name, start, end = str(record[0]), int(record[1]), int(record[2])
        window = next((w for w in windows if w[0] <= start <= w[1]), None)
        if window is None:
            continue
        perf_start = start - window[0] + window[2]
        events.append(_span(name, GPU_TID, us(perf_start), (end - start) / 1e3, {"grid": record[3:6]}))
    return events


def program_trace(folder: Path) -> dict[str, Any]:
    """The Chrome trace of the watched program recorded in `folder`.

    Raises:
        UsageError: the session is not a watched program's, or ended before its trace was written.
    """
    path = folder / TRACE_FILE
    if not path.is_file():
        manifest = folder / "manifest.json"
        kind = None
        with contextlib.suppress(OSError, ValueError, AttributeError):
            kind = json.loads(manifest.read_text(encoding="utf-8")).get("config", {}).get("kind")
        if kind != "program":
            raise UsageError(
                f"{folder.name}: --trace is a watched program's timeline (gputop -- CMD); for a run gputop made, "
                "export a profile pass's trace with e in the TUI"
            )
        raise UsageError(f"{folder.name}: no {TRACE_FILE}: the program's session ended before its trace was written")
    try:
        block = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot be read ({exc})") from exc
    return chrome_trace(block)
