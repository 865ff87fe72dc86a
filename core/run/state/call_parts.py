"""A watched function's calls taken apart: arguments, invoke, results, reads back, and the program's time between.

The watcher inside the program records each `FunctionInvoker` call with the
start and end of the `VmContext.invoke` inside it, the bytes of the numpy
arrays it was given and whether they were the previous call's very arrays;
each `DeviceArray` read back to the host with its bytes. This part keeps, per
function, the newest `PARTS_WINDOW` calls' parts for their medians and the
sums over every call for their shares, so `share`s of arguments, invoke and
results add up to 1 exactly and the medians follow what the program does now.
A function called the low-level way (`VmContext.invoke` on variant lists) shows
its invoke alone: its arguments and results are the program's own code, which
the watcher does not see, and the record says so instead of showing 0.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from gputop.core.records.program import CallPart, CallParts

__all__ = ["LOW_LEVEL", "PARTS_WINDOW", "FunctionParts"]

PARTS_WINDOW = 2_000  # the newest calls the medians are taken over
LOW_LEVEL = (
    "called through VmContext.invoke with the program's own variant lists: their packing is the program's code, "
    "outside what the watcher times"
)


def _median_ms(values: deque[float]) -> float | None:
    return float(np.median(np.fromiter(values, dtype=np.float64, count=len(values)))) * 1e3 if values else None


def _median_int(values: deque[int]) -> int | None:
    return int(np.median(np.fromiter(values, dtype=np.int64, count=len(values)))) if values else None


class FunctionParts:
    """One function's parts over the program's calls of it (changed under the run's lock, like every part)."""

    def __init__(self) -> None:
        self.arguments: deque[float] = deque(maxlen=PARTS_WINDOW)
        self.invoke: deque[float] = deque(maxlen=PARTS_WINDOW)
        self.results: deque[float] = deque(maxlen=PARTS_WINDOW)
        self.argument_bytes: deque[int] = deque(maxlen=PARTS_WINDOW)
        self.reads: deque[float] = deque(maxlen=PARTS_WINDOW)
        self.read_bytes: deque[int] = deque(maxlen=PARTS_WINDOW)
        self.between: deque[float] = deque(maxlen=PARTS_WINDOW)
        self.call_s = 0.0  # every call's time, summed: the shares' denominator
        self.apart_call_s = 0.0  # the same over the calls taken apart (FunctionInvoker calls)
        self.sums = {"arguments": 0.0, "invoke": 0.0, "results": 0.0, "to_host": 0.0}
        self.apart = 0  # calls taken apart
        self.low_level = 0  # calls seen as a VmContext.invoke alone
        self.same = 0  # calls whose numpy arguments were the call before's very arrays
        self.read_count = 0

    def add_call(self, start: int, end: int, invoke_start: int | None, invoke_end: int | None) -> None:
        """One call's times (ns); `invoke_*` None for a call that was a VmContext.invoke alone."""
        call = (end - start) / 1e9
        self.call_s += call
        if invoke_start is None or invoke_end is None:
            self.low_level += 1
            self.invoke.append(call)
            self.sums["invoke"] += call
            return
        arguments = max(invoke_start - start, 0) / 1e9
        invoke = max(invoke_end - invoke_start, 0) / 1e9
        results = max(end - invoke_end, 0) / 1e9
        self.apart += 1
        self.apart_call_s += call
        self.arguments.append(arguments)
        self.invoke.append(invoke)
        self.results.append(results)
        self.sums["arguments"] += arguments
        self.sums["invoke"] += invoke
        self.sums["results"] += results

    def add_arguments(self, nbytes: int, same: bool) -> None:
        self.argument_bytes.append(nbytes)
        self.same += int(same)

    def add_read(self, seconds: float, nbytes: int) -> None:
        self.reads.append(seconds)
        self.read_bytes.append(nbytes)
        self.sums["to_host"] += seconds
        self.read_count += 1

    def add_between(self, seconds: float) -> None:
        self.between.append(seconds)

    def between_p50_ms(self) -> float | None:
        return _median_ms(self.between)

    def parts(self, calls: int) -> CallParts | None:
        """The parts as they stand; None before a call. `calls`: the function's calls, for reads per call."""
        total = self.apart + self.low_level
        if total == 0:
            return None
        apart = self.apart > 0
        denominator = self.apart_call_s if apart else self.call_s

        def share(name: str) -> float | None:
            return self.sums[name] / denominator if denominator > 0 else None

        hidden = CallPart(seen=False, reason=LOW_LEVEL, count=0)
        arguments = (
            CallPart(_median_ms(self.arguments), share("arguments"), _median_int(self.argument_bytes), count=self.apart)
            if apart
            else hidden
        )
        results = CallPart(_median_ms(self.results), share("results"), count=self.apart) if apart else hidden
        invoke = CallPart(_median_ms(self.invoke), share("invoke") if apart else 1.0, count=total)
        to_host = CallPart(
            _median_ms(self.reads),
            self.sums["to_host"] / self.call_s if self.read_count and self.call_s > 0 else None,
            _median_int(self.read_bytes),
            count=self.read_count,
        )
        return CallParts(
            arguments=arguments,
            invoke=invoke,
            results=results,
            to_host=to_host,
            same_arguments=self.same / self.apart if apart and self.argument_bytes else None,
            reads_per_call=self.read_count / calls if calls else None,
        )
