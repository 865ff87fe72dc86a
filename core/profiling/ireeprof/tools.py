"""IREE's shipped tools (`iree-benchmark-module`, `iree-profile`): where they are, and the commands a pass gives them.

A profile pass, the transfer cross-check and the tool runner all run the
benchmark tool that ships inside iree-base-runtime on the session's own
`.vmfb` and devices. This module is what they share about it: the tool's path,
the `--device=` value for a device, the command that profiles each call, and
the per-call times the tool writes back.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from gputop.core.errors import ProfileError
from gputop.core.records.devices import DeviceInfo

__all__ = [
    "PROFILING_MODES",
    "benchmark_call_ms",
    "device_uri",
    "profiled_calls_command",
    "runtime_tool",
    "timed_repetitions",
]

PROFILING_MODES = {
    "vulkan": "dispatch-events,queue-events,device-queue-events,memory-events",
    "hip": "dispatch-events,queue-events,device-queue-events,memory-events",
    "local-task": "host-execution,queue-events,memory-events",
    "local-sync": "host-execution,queue-events,memory-events",
}


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


def profiled_calls_command(
    vmfb: Path,
    devices: list[DeviceInfo],
    function: str,
    input_args: Sequence[str],
    bundle: Path,
    modes: str | None = None,
) -> list[str]:
    """IREE's benchmark tool timing each call once, with the device profiler of the first device's backend
    writing `bundle` (`modes`, by default its PROFILING_MODES): the profile pass and the transfer cross-check
    alike."""
    return [
        runtime_tool("iree-benchmark-module"),
        f"--module={vmfb}",
        *[f"--device={device_uri(d)}" for d in devices],
        f"--function={function}",
        *[f"--input={arg}" for arg in input_args],
        f"--device_profiling_mode={modes or PROFILING_MODES[devices[0].backend]}",
        f"--device_profiling_output={bundle}",
        "--benchmark_min_time=1x",
    ]


def timed_repetitions(calls: int, timings: Path) -> list[str]:
    """The benchmark tool's flags for `calls` synced calls, each one's time written to `timings`
    (`benchmark_call_ms` reads it back)."""
    return [f"--benchmark_repetitions={calls}", f"--benchmark_out={timings}", "--benchmark_out_format=json"]


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
