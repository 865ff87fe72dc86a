"""OpenCL runs through pyopencl: build, buffers, kernels in order, device-timed events.

OpenCL enqueues return before the work runs, which is exactly what makes
naive timing wrong. Each call here records both the time for the enqueues to
return and the synced wall time after `queue.finish()`, and every kernel's
start and end from profiling events (device nanoseconds). The same run
reports how queued work lands on whichever stage synchronises first.
"""

from __future__ import annotations

import contextlib
import re
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from gputop.core.errors import CompileError, DeviceUnavailableError, RuntimeFailure, UsageError
from gputop.core.processes import first_line
from gputop.core.profiling.breakdown import CallRecords, Interval
from gputop.core.profiling.dispatches import DispatchEvent
from gputop.core.records.calls import StageTimings
from gputop.core.records.devices import DeviceInfo
from gputop.core.records.memory import PoolStats
from gputop.core.runners.opencl_spec import RunSpec, ScalarArg

__all__ = ["OpenCLCall", "OpenCLRun", "build_error_line"]

# Clang (PoCL) prints "error: FILE:L:C: msg"; NVIDIA and others "FILE:L:C: error: msg".
_BUILD_ERROR = re.compile(
    r"^(?:error: )?(?P<file>[^\s:]+):(?P<line>\d+):(?P<col>\d+): (?:(?:fatal )?error: )?(?P<msg>.*)$"
)


@dataclass(frozen=True)
class OpenCLCall:
    enqueue_s: float
    events: tuple[DispatchEvent, ...]
    records: CallRecords | None = None  # the call on the host clock, for the call breakdown


def build_error_line(log: str, source_name: str) -> str | None:
    """The first compiler error in an OpenCL build log, as `file.cl:LINE:COL: message`."""
    for raw in log.splitlines():
        match = _BUILD_ERROR.match(raw.strip())
        if match:
            return f"{source_name}:{match.group('line')}:{match.group('col')}: {match.group('msg')}"
    for raw in log.splitlines():
        if "error" in raw.lower():
            return raw.strip()
    return None


class OpenCLRun:
    def __init__(self, device: DeviceInfo, spec: RunSpec) -> None:
        import pyopencl as cl

        self._cl = cl
        self.device_info = device
        self.spec = spec
        self.device: Any = None
        self.context: Any = None
        self.queue: Any = None
        self.program: Any = None
        self.kernels: list[Any] = []
        self.buffers: dict[str, Any] = {}
        self.initial: dict[str, np.ndarray] = {}
        self.allocated_bytes = 0
        self.peak_bytes = 0
        self.last_call: OpenCLCall | None = None
        self.build_log: str = ""

    def open(self) -> None:
        cl = self._cl
        index = int(self.device_info.id.split(":")[1])
        devices = [d for p in cl.get_platforms() for d in p.get_devices()]
        if index >= len(devices):
            raise DeviceUnavailableError(f"{self.device_info.id} does not exist")
        self.device = devices[index]
        try:
            self.context = cl.Context([self.device])
            self.queue = cl.CommandQueue(self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        except Exception as exc:
            raise DeviceUnavailableError(f"{self.device_info.id}: cannot open: {first_line(str(exc))}") from None

    def build(self, log_path: Any) -> None:
        cl = self._cl
        program = cl.Program(self.context, self.spec.source)
        try:
            with warnings.catch_warnings():
                # pyopencl warns on any compiler output; a clean build's notes go to the log instead.
                warnings.simplefilter("ignore", cl.CompilerWarning)
                program.build(options=list(self.spec.build_options))
        except Exception as exc:
            try:
                self.build_log = program.get_build_info(self.device, cl.program_build_info.LOG)
            except Exception:
                self.build_log = str(exc)
            log_path.write_text(self.build_log or str(exc), encoding="utf-8")
            line = build_error_line(self.build_log or str(exc), self.spec.source_name) or first_line(str(exc))
            raise CompileError(f"OpenCL build failed: {line}", log_path=str(log_path)) from None
        self.program = program
        with contextlib.suppress(Exception):
            self.build_log = program.get_build_info(self.device, cl.program_build_info.LOG)
            if self.build_log.strip():
                log_path.write_text(self.build_log, encoding="utf-8")
        known = {k.function_name for k in program.all_kernels()}
        for spec in self.spec.kernels:
            if spec.name not in known:
                has = ", ".join(sorted(known))
                raise UsageError(
                    f"{self.spec.path.name}: no kernel {spec.name!r} in {self.spec.source_name} (it has: {has})"
                )
            kernel = getattr(program, spec.name)
            expected = kernel.get_info(cl.kernel_info.NUM_ARGS)
            if expected != len(spec.args):
                given = len(spec.args)
                raise UsageError(
                    f"{self.spec.path.name}: kernel {spec.name} takes {expected} arguments, the spec gives {given}"
                )
            self.kernels.append(kernel)

    def create_buffers(self) -> None:
        cl = self._cl
        limit = int(self.device.max_mem_alloc_size)
        for buffer in self.spec.buffers:
            if buffer.nbytes > limit:
                device = self.device_info.id
                raise UsageError(
                    f"buffer {buffer.name} needs {buffer.nbytes} bytes; {device} allows at most {limit} per buffer"
                )
        total = sum(b.nbytes for b in self.spec.buffers)
        if total > int(self.device.global_mem_size):
            raise UsageError(f"the buffers need {total} bytes; {self.device_info.id} has {self.device.global_mem_size}")
        for buffer in self.spec.buffers:
            host = np.ascontiguousarray(buffer.initial(self.spec.base))
            self.initial[buffer.name] = host
            try:
                self.buffers[buffer.name] = cl.Buffer(
                    self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host
                )
            except Exception as exc:
                raise RuntimeFailure(f"buffer {buffer.name}: {first_line(str(exc))}") from None
            self.allocated_bytes += buffer.nbytes
        self.peak_bytes = max(self.peak_bytes, self.allocated_bytes)
        for kernel, spec in zip(self.kernels, self.spec.kernels, strict=True):
            values = [a.as_numpy() if isinstance(a, ScalarArg) else self.buffers[a] for a in spec.args]
            try:
                kernel.set_args(*values)
            except Exception as exc:
                raise UsageError(f"kernel {spec.name}: bad arguments: {first_line(str(exc))}") from None

    def enqueue(self, indices: list[int] | None = None) -> list[Any]:
        cl = self._cl
        events = []
        for index in indices if indices is not None else range(len(self.kernels)):
            spec = self.spec.kernels[index]
            try:
                events.append(
                    cl.enqueue_nd_range_kernel(self.queue, self.kernels[index], spec.global_size, spec.local_size)
                )
            except Exception as exc:
                raise RuntimeFailure(f"kernel {spec.name}: enqueue failed: {first_line(str(exc))}") from None
        return events

    def call(self) -> OpenCLCall:
        """Enqueue every kernel in order, then wait: enqueue time, device events, and the call's records."""
        started = time.monotonic_ns()
        enqueues: list[tuple[int, int]] = []
        events = []
        for index in range(len(self.kernels)):
            before = time.monotonic_ns()
            events.extend(self.enqueue([index]))
            enqueues.append((before, time.monotonic_ns()))
        enqueued = (time.monotonic_ns() - started) / 1e9
        try:
            self.queue.finish()
        except Exception as exc:
            raise RuntimeFailure(f"the queue failed: {first_line(str(exc))}") from None
        ended = time.monotonic_ns()
        records = self._call_records(events, enqueues, started, ended)
        self.last_call = OpenCLCall(enqueued, tuple(self._dispatch_events(events)), records)
        return self.last_call

    def _call_records(
        self, events: list[Any], enqueues: list[tuple[int, int]], started: int, ended: int
    ) -> CallRecords | None:
        """The call on the host clock: OpenCL's profiling clock is the device's own, so it is put on the
        host clock by the first enqueue, whose QUEUED stamp is taken inside the host's enqueue call."""
        try:
            times = [(e.profile.queued, e.profile.submit, e.profile.start, e.profile.end) for e in events]
        except Exception:  # a driver without profiling info: no breakdown, the table still stands
            return None
        if not times:
            return None
        offset = enqueues[0][0] - times[0][0]
        device = self.device_info.id
        queue_ops, work = [], []
        for spec, (queued, _submit, start, end) in zip(self.spec.kernels, times, strict=False):
            queue_ops.append(Interval(queued + offset, start + offset, f"{spec.name} queued", device))
            detail = (("timing", "device timestamps (OpenCL events)"), ("global_size", list(spec.global_size)))
            work.append(Interval(start + offset, end + offset, spec.name, device, detail))
        return CallRecords(
            wall_ns=float(ended - started),
            start_ns=float(started),
            end_ns=float(ended),
            api_calls=tuple(Interval(a, b, "clEnqueueNDRangeKernel") for a, b in enqueues),
            queue_ops=tuple(queue_ops),
            device_work=tuple(work),
            kernel_ns=float(sum(end - start for _, _, start, end in times)),
        )

    def _dispatch_events(self, events: list[Any]) -> list[DispatchEvent]:
        rows = []
        for spec, event in zip(self.spec.kernels, events, strict=False):
            start, end = event.profile.start, event.profile.end
            rows.append(
                DispatchEvent(
                    name=spec.name,
                    start_ns=float(start),
                    duration_ns=float(end - start),
                    submission_id=0,
                    device_ordinal=0,
                    queue_ordinal=0,
                    workgroup_count=spec.global_size,
                    workgroup_size=spec.local_size,
                    timing="device timestamps (OpenCL events)",
                )
            )
        return rows

    def read_buffer(self, name: str) -> np.ndarray:
        host = np.empty_like(self.initial[name])
        self._cl.enqueue_copy(self.queue, host, self.buffers[name]).wait()
        return host

    def stage_timings(self) -> StageTimings:
        """Two stages on one queue, timed three ways (and the naive way)."""
        if len(self.kernels) < 2:
            raise UsageError("stage timings need two kernels")

        def synced(indices: list[int]) -> tuple[float, list[Any]]:
            started = time.perf_counter()
            events = self.enqueue(indices)
            self.queue.finish()
            return (time.perf_counter() - started) * 1e3, events

        self.queue.finish()
        a_ms, a_events = synced([0])
        b_ms, b_events = synced([1])
        ab_ms, _ = synced([0, 1])
        started = time.perf_counter()
        self.enqueue([0])
        a_naive = (time.perf_counter() - started) * 1e3
        b_naive, _ = synced([1])
        return StageTimings(
            a_synced_ms=a_ms,
            b_synced_ms=b_ms,
            a_then_b_synced_ms=ab_ms,
            a_enqueue_only_ms=a_naive,
            b_after_unsynced_a_ms=b_naive,
            a_kernel_ms=(a_events[0].profile.end - a_events[0].profile.start) / 1e6,
            b_kernel_ms=(b_events[0].profile.end - b_events[0].profile.start) / 1e6,
        )

    def pool_statistics(self) -> list[tuple[str, tuple[PoolStats, ...]]]:
        pool = PoolStats(
            device_id=self.device_info.id,
            memory_type="buffers",
            peak_bytes=self.peak_bytes,
            allocated_bytes=self.allocated_bytes,
            freed_bytes=0,
            live_bytes=self.allocated_bytes,
        )
        return [(self.device_info.id, (pool,))]

    def close(self) -> None:
        for buffer in self.buffers.values():
            with contextlib.suppress(Exception):  # the context is going away anyway
                buffer.release()
        self.buffers = {}
        self.kernels = []
        self.program = None
        self.queue = None
        self.context = None
