"""Per-dispatch device times from IREE's HAL-native profiling (`.ireeprof`).

The Python bindings cannot open a profile sink, but IREE's shipped tools can:
a profile pass runs `iree-benchmark-module` on the very `.vmfb`, device and
inputs of the session with `--device_profiling_mode`, then decodes the bundle
with `iree-profile export --format=ireeperf-jsonl`. Dispatch times come from
device timestamps (Vulkan, HIP) or from the CPU executing the dispatch
(local-task, whose "device" is the host); nothing here is a host clock
wrapped around asynchronous work. The pass also yields a Chrome trace
(Perfetto opens it) and the HAL pools' reserved and committed bytes.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gputop.core.errors import GputopError
from gputop.core.files import require_file
from gputop.core.processes import run_logged
from gputop.core.records import DeviceInfo, KernelTiming, PoolUsage, ProfileSummary

PROFILING_MODES = {
    "vulkan": "dispatch-events,queue-events,memory-events",
    "hip": "dispatch-events,queue-events,memory-events",
    "local-task": "host-execution,queue-events,memory-events",
    "local-sync": "host-execution,queue-events,memory-events",
}
TIMING = {
    "dispatch_event": "device timestamps",
    "host_execution_event": "host execution (CPU device)",
}


class ProfileError(GputopError):
    """A profile could not be taken or read."""


@dataclass(frozen=True)
class DispatchEvent:
    name: str
    start_ns: float
    duration_ns: float
    submission_id: int
    device_ordinal: int
    queue_ordinal: int
    workgroup_count: tuple[int, ...] | None
    workgroup_size: tuple[int, ...] | None
    timing: str


def runtime_tool(name: str) -> str:
    """Path of a tool shipped inside iree-base-runtime (iree-benchmark-module, iree-profile)."""
    from iree._runtime import libs

    path = Path(libs.library_path) / name
    if not path.exists():
        raise ProfileError(f"{name} is not in this iree-base-runtime ({path})")
    return str(path)


def device_uri(device: DeviceInfo) -> str:
    """The `--device=` value the shipped tools accept for `device`."""
    if device.backend.startswith("local"):
        return device.backend
    if device.uri:
        return device.uri  # vulkan://N is refused; device paths work everywhere
    index = device.id.split(":")[1].split("#")[0] if ":" in device.id else "0"
    return device.backend if index == "0" else f"{device.backend}://{index}"


def parse_ireeperf(text: str) -> tuple[list[DispatchEvent], list[PoolUsage]]:
    """Dispatch events and last pool usage from `iree-profile export --format=ireeperf-jsonl`."""
    events: list[DispatchEvent] = []
    pools: dict[int, PoolUsage] = {}
    saw_schema = False
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise ProfileError(f"profile export line {number} is not JSON (truncated file?)") from None
        if not isinstance(record, dict):
            raise ProfileError(f"profile export line {number} is not a record")
        kind = record.get("record_type")
        if not isinstance(kind, str):
            continue  # a record of a kind this gputop does not know
        if kind == "schema":
            saw_schema = record.get("format") == "ireeperf-jsonl"
        elif kind in TIMING and record.get("key") and record.get("valid", True):
            if kind == "host_execution_event" and record.get("op") not in (None, "dispatch"):
                continue
            try:
                start: Any = next(
                    (
                        record[k]
                        for k in ("start_driver_host_cpu_time_ns", "start_host_time_ns", "start_tick")
                        if k in record
                    ),
                    0,
                )
                events.append(
                    DispatchEvent(
                        name=str(record["key"]),
                        start_ns=float(start),
                        duration_ns=float(record["duration_ns"]),
                        submission_id=int(record.get("submission_id", 0)),
                        device_ordinal=int(record.get("physical_device_ordinal", 0)),
                        queue_ordinal=int(record.get("queue_ordinal", 0)),
                        workgroup_count=_dims(record.get("workgroup_count")),
                        workgroup_size=_dims(record.get("workgroup_size")),
                        timing=TIMING[kind],
                    )
                )
            except (KeyError, TypeError, ValueError, OverflowError) as exc:
                raise ProfileError(f"profile export line {number}: bad dispatch record ({exc})") from None
        elif kind == "memory_event" and record.get("pool_stats_available"):
            try:
                pool_id = int(record["pool_id"])
                pools[pool_id] = PoolUsage(
                    pool_id, int(record["pool_bytes_reserved"]), int(record["pool_bytes_committed"])
                )
            except (KeyError, TypeError, ValueError, OverflowError):
                continue
    if not saw_schema:
        raise ProfileError("not an ireeperf-jsonl export (no schema record)")
    return events, list(pools.values())


def _dims(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return tuple(value)
    return None


def kernel_table(events: list[DispatchEvent], calls: int, source: str) -> list[KernelTiming]:
    """Aggregate dispatch events per function name, sorted by total time."""
    by_name: dict[str, list[DispatchEvent]] = defaultdict(list)
    for event in events:
        by_name[event.name].append(event)
    total_all = sum(e.duration_ns for e in events) or 1.0
    rows = []
    for name, group in by_name.items():
        durations = np.array([e.duration_ns for e in group]) / 1e3
        rows.append(
            KernelTiming(
                name=name,
                count=len(group),
                total_us=float(durations.sum()),
                avg_us=float(durations.mean()),
                min_us=float(durations.min()),
                p50_us=float(np.median(durations)),
                max_us=float(durations.max()),
                share=float(durations.sum() * 1e3 / total_all),
                per_call=len(group) / calls if calls else float(len(group)),
                workgroup_count=group[-1].workgroup_count,
                workgroup_size=group[-1].workgroup_size,
                source=source,
                timing=group[-1].timing,
            )
        )
    return sorted(rows, key=lambda k: -k.total_us)


def chrome_trace(events: list[DispatchEvent], device_id: str) -> dict[str, Any]:
    """A Chrome trace (chrome://tracing, Perfetto): one complete event per dispatch."""
    origin = min((e.start_ns for e in events), default=0.0)
    trace_events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": f"gputop {device_id}"}},
    ]
    for event in events:
        trace_events.append(
            {
                "name": event.name,
                "cat": "dispatch",
                "ph": "X",
                "ts": (event.start_ns - origin) / 1e3,
                "dur": event.duration_ns / 1e3,
                "pid": event.device_ordinal,
                "tid": event.queue_ordinal,
                "args": {
                    "submission": event.submission_id,
                    "workgroup_count": list(event.workgroup_count or ()),
                    "workgroup_size": list(event.workgroup_size or ()),
                    "timing": event.timing,
                },
            }
        )
    return {"traceEvents": trace_events, "displayTimeUnit": "ms"}


def decode_bundle(path: Path) -> tuple[list[DispatchEvent], list[PoolUsage]]:
    """Dispatch events and pools of an `.ireeprof` bundle, via `iree-profile export`."""
    if require_file(path, allow_empty=True) == 0:
        raise ProfileError(f"{path}: empty profile bundle")
    proc = subprocess.run(
        [runtime_tool("iree-profile"), "export", "--format=ireeperf-jsonl", "--output=-", str(path)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or ["unknown error"])[-1]
        raise ProfileError(f"{path}: not a readable .ireeprof bundle ({detail})")
    events, pools = parse_ireeperf(proc.stdout)
    if not events:
        raise ProfileError(f"{path}: the profile holds no dispatch events")
    return events, pools


def summarize_events(
    events: list[DispatchEvent],
    *,
    calls: int,
    source: str,
    device_id: str,
    call_wall_ms: float | None = None,
    pools: list[PoolUsage] | None = None,
    profile_path: str | None = None,
    trace_path: str | None = None,
) -> ProfileSummary:
    """Kernel table and per-call kernel time (and gap, when the wall time is known)."""
    kernels = kernel_table(events, calls, source)
    kernel_ms = sum(k.total_us for k in kernels) / 1e3 / max(calls, 1)
    return ProfileSummary(
        source=source,
        device_id=device_id,
        calls=calls,
        call_wall_ms=call_wall_ms,
        call_kernel_ms=kernel_ms,
        gap_ms=(call_wall_ms - kernel_ms) if call_wall_ms is not None else None,
        kernels=tuple(kernels),
        pools=tuple(pools or ()),
        profile_path=profile_path,
        trace_path=trace_path,
    )


def read_profile(path: Path, *, calls: int | None = None, device_id: str = "?") -> ProfileSummary:
    """Decode an `.ireeprof` bundle into a kernel table (calls = submissions unless given)."""
    events, pools = decode_bundle(path)
    submissions = len({(e.device_ordinal, e.submission_id) for e in events})
    return summarize_events(
        events, calls=calls or submissions, source="ireeprof", device_id=device_id, pools=pools,
        profile_path=str(path),
    )  # fmt: skip


def write_trace(events: list[DispatchEvent], device_id: str, path: Path) -> Path:
    path.write_text(json.dumps(chrome_trace(events, device_id)))
    return path


def profile_with_ireeprof(
    vmfb: Path,
    devices: list[DeviceInfo],
    function: str,
    input_args: list[str],
    calls: int,
    out_dir: Path,
    cancel: threading.Event | None = None,
) -> tuple[ProfileSummary, list[DispatchEvent]]:
    """Run `calls` profiled calls with the shipped benchmark tool; decode; write the trace."""
    device = devices[0]
    mode = PROFILING_MODES.get(device.backend)
    if mode is None:
        raise ProfileError(f"IREE HAL-native profiling is not available for {device.backend}")
    stamp = time.strftime("%H%M%S")
    bundle = out_dir / f"profile-{stamp}.ireeprof"
    timings = out_dir / f"profile-{stamp}-calls.json"
    command = [
        runtime_tool("iree-benchmark-module"),
        f"--module={vmfb}",
        *[f"--device={device_uri(d)}" for d in devices],
        f"--function={function}",
        *[f"--input={arg}" for arg in input_args],
        f"--device_profiling_mode={mode}",
        f"--device_profiling_output={bundle}",
        "--benchmark_min_time=1x",
        f"--benchmark_repetitions={calls}",
        f"--benchmark_out={timings}",
        "--benchmark_out_format=json",
    ]
    log = out_dir / f"profile-{stamp}.log"
    output, code = run_logged(command, log, cancel, what="the profiling run")
    if code != 0:
        last = [line for line in output.splitlines() if line.strip()]
        raise ProfileError(f"the profiling run failed: {last[-1] if last else f'exit {code}'}", log_path=str(log))
    events, pools = decode_bundle(bundle)
    trace = write_trace(events, device.id, out_dir / f"profile-{stamp}.trace.json")
    summary = summarize_events(
        events, calls=calls, source="ireeprof", device_id=device.id, call_wall_ms=_call_wall_ms(timings),
        pools=pools, profile_path=str(bundle), trace_path=str(trace),
    )  # fmt: skip
    return summary, events


def benchmark_call_ms(path: Path) -> list[float]:
    """Each call's synced wall time (ms) from `iree-benchmark-module --benchmark_out` JSON.

    With `--benchmark_min_time=1x` every repetition is one call; an unreadable
    file gives no times.
    """
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return []
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
    return [
        b["real_time"] * scale.get(b.get("time_unit", "ns"), 1e-6)
        for b in data.get("benchmarks", [])
        if b.get("run_type") == "iteration"
    ]


def _call_wall_ms(path: Path) -> float | None:
    """Mean synced wall time of one call over the benchmark tool's repetitions."""
    times = benchmark_call_ms(path)
    return statistics.fmean(times) if times else None
