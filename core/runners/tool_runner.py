"""Multi-device GPU modules run through IREE's shipped tools, not the Python bindings.

IREE 3.13's Python bindings give each HAL device its own device group when
the device is created, so a module spanning two GPUs fails in one process
(Vulkan: "queue frontier already assigned"; CUDA: INVALID_ARGUMENT in
`hal.device.queue.dealloca` for memory the devices should share). The shipped
`iree-run-module` and `iree-benchmark-module` build one device group for all
`--device=` flags and run such modules (on two real H100s IREE 3.13 still
fails them: CUDA with the same INVALID_ARGUMENT or a call that never returns,
Vulkan with wrong results; `bench/gpu/iree_two_device_bugs.sh`). This runner drives them: the first
call through `iree-run-module` (outputs saved for the check), steady calls in
batches through `iree-benchmark-module` (one synced call per repetition).
"""

from __future__ import annotations

import re
import tempfile
import threading
from pathlib import Path

import numpy as np

from gputop.core.errors import RuntimeFailure
from gputop.core.processes import first_line, run_logged
from gputop.core.profiling.ireeprof.tools import benchmark_call_ms, device_uri, runtime_tool, timed_repetitions
from gputop.core.records.devices import DeviceInfo
from gputop.core.records.memory import PoolStats

__all__ = ["BATCH", "TIMEOUT_S", "ToolModuleRun", "tool_status"]

BATCH = 20
TIMEOUT_S = 300.0  # a tool run that takes longer is hung (a deadlocked multi-device call): kill it


def tool_status(output: str) -> str:
    """The one line that says why an IREE tool failed: its status line, not the VM backtrace after it.

    A status that quotes the whole function signature (CUDA on two H100s:
    "INVALID_ARGUMENT; `sync func @passthrough(%input0: ...)`") keeps only the
    function's name.
    """
    lines = [line.strip() for line in output.splitlines()[1:] if line.strip()]
    status = next((line for line in lines if re.search(r"\b[A-Z_]{6,};", line)), lines[-1] if lines else "")
    return first_line(re.sub(r"`(?:sync |async )?func (@[\w.$-]+)\(.*?`", r"in \1", status))


class ToolModuleRun:
    """Same phase methods as the in-process runner, calls in a child process."""

    def __init__(self, devices: list[DeviceInfo], vmfb: Path, function: str, input_args: list[str]) -> None:
        self.device_infos = devices
        self.vmfb = vmfb
        self.function = function
        self.input_args = input_args
        self._scratch = tempfile.TemporaryDirectory(prefix="gputop-tool-")

    def _device_flags(self) -> list[str]:
        return [f"--device={device_uri(d)}" for d in self.device_infos]

    def _run(self, command: list[str], cancel: threading.Event | None) -> str:
        tool = Path(command[0]).name
        log = Path(self._scratch.name) / f"{tool}.log"
        # A deadlocked multi-device call must not hang the run: the tool gets a time limit.
        output, code = run_logged(command, log, cancel, timeout_s=TIMEOUT_S, what=tool)
        if code != 0:
            raise RuntimeFailure(f"{tool} failed: {tool_status(output)}", log_path=str(log))
        return output

    def first_call(self, outputs: int, cancel: threading.Event | None = None) -> list[np.ndarray]:
        """One call with iree-run-module; its outputs come back as .npy files."""
        files = [Path(self._scratch.name) / f"output{i}.npy" for i in range(outputs)]
        command = [
            runtime_tool("iree-run-module"),
            f"--module={self.vmfb}",
            *self._device_flags(),
            f"--function={self.function}",
            *[f"--input={arg}" for arg in self.input_args],
            *[f"--output=@{path}" for path in files],
        ]
        self._run(command, cancel)
        return [np.load(path) for path in files]

    def call_batch(self, calls: int, cancel: threading.Event | None = None) -> list[float]:
        """`calls` synced calls; returns each call's wall time in seconds."""
        out = Path(self._scratch.name) / "batch.json"
        command = [
            runtime_tool("iree-benchmark-module"),
            f"--module={self.vmfb}",
            *self._device_flags(),
            f"--function={self.function}",
            *[f"--input={arg}" for arg in self.input_args],
            "--benchmark_min_time=1x",
            *timed_repetitions(calls, out),
        ]
        self._run(command, cancel)
        return [ms / 1e3 for ms in benchmark_call_ms(out)]

    def pool_statistics(self) -> list[tuple[str, tuple[PoolStats, ...]]]:
        return []  # the allocators live in the child process; NVML still sees the devices

    def close(self) -> None:
        self._scratch.cleanup()
