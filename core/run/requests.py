"""Stop, pause, profile, capture and count: the requests a run takes, and why one is refused.

Requests come from other threads (a key in the TUI, a signal, a scrape loop)
and must never wait on a call in flight, so they are `threading.Event`s and a
counter that the run's one call loop reads between calls. Why a profile pass,
a capture or a counters pass cannot be taken is decided here, once, for
`gputop run --profile`, `--capture`, `--counters`, the TUI's `p`, `c` and `n`
and `gputop serve` alike, so they all say the same thing for the same condition.
"""

from __future__ import annotations

import threading

from gputop.core.profiling.cupti.activity import cupti_unavailable_reason
from gputop.core.profiling.ireeprof.tools import PROFILING_MODES
from gputop.core.profiling.ncu.ncu_command import find_ncu
from gputop.core.snapshot import RunSnapshot

__all__ = ["Controls", "FlowKind", "why_no_capture", "why_no_counters", "why_no_profile"]

# Which flow runs the calls: in-process IREE, pyopencl, or IREE's shipped tools (multi-device GPUs).
FlowKind = str
LIVE_STATES = ("running", "paused")
CAPTURE_ELSEWHERE = {
    "cuda": "use Nsight Systems or ncu for CUDA",
    "hip": "use rocprof for HIP",
    "opencl": "RenderDoc does not capture OpenCL",
}
NCU_NEEDS = "hardware counters need Nsight Compute and a CUDA device (an NVIDIA GPU)"
# What a run that is not on CUDA has instead of the counters pass.
COUNTERS_INSTEAD = {
    "vulkan": "use the profile pass (p, --profile: device timestamps) or a RenderDoc capture (c, --capture)",
    "hip": "use the profile pass (p, --profile: device timestamps)",
    "local": "use the profile pass (p, --profile: each dispatch's execution on the CPU)",
}


def why_no_profile(snapshot: RunSnapshot, flow: FlowKind | None) -> str | None:
    """Why a profile pass cannot be taken now, or None when it can."""
    if snapshot.state not in LIVE_STATES:
        return f"nothing to profile while {snapshot.state}"
    if snapshot.profiling:
        return "a profile pass is already running"
    if flow == "opencl":
        return "OpenCL kernels are timed by device events on every call already"
    if flow == "tool":
        return "multi-device GPU runs go through the shipped tools; profile them with gputop on one device"
    device = snapshot.device
    if device is None:
        return "the run has no device yet"
    if device.backend == "cuda":
        return cupti_unavailable_reason()
    if device.backend not in PROFILING_MODES:
        return f"IREE HAL-native profiling is not available for {device.backend}"
    return None


def why_no_counters(snapshot: RunSnapshot, flow: FlowKind | None, refusal: str | None = None) -> str | None:
    """Why a counters pass cannot be taken now, or None when it can.

    `refusal` is what an earlier pass of this run met that every later one would meet too
    (counters open to admin users only).
    """
    if snapshot.state not in LIVE_STATES:
        return f"nothing to measure while {snapshot.state}"
    if snapshot.counting:
        return "a counters pass is already running"
    if flow == "opencl":
        return f"{NCU_NEEDS}; OpenCL kernels are timed by device events on every call already"
    if flow == "tool":
        return "multi-device GPU runs go through the shipped tools; measure their counters with gputop on one device"
    device = snapshot.device
    if device is None:
        return "the run has no device yet"
    if device.backend != "cuda":
        where = f"the CPU ({device.id})" if device.backend.startswith("local") else device.id
        instead = COUNTERS_INSTEAD.get("local" if device.backend.startswith("local") else device.backend)
        return f"{NCU_NEEDS}; this run is on {where}" + (f"; {instead}" if instead else "")
    if refusal:
        return refusal
    return find_ncu()[1]


def why_no_capture(snapshot: RunSnapshot, renderdoc_ready: bool) -> str | None:
    """Why a RenderDoc capture cannot be taken now, or None when it can."""
    if snapshot.state not in LIVE_STATES:
        return "start a run first"
    device = snapshot.device
    if device is not None and device.backend != "vulkan":
        hint = CAPTURE_ELSEWHERE.get(device.backend, "RenderDoc captures Vulkan only")
        return f"RenderDoc captures Vulkan work; this run is on {device.id} ({hint})"
    if not renderdoc_ready:
        return snapshot.renderdoc or "RenderDoc is not loaded for this run"
    return None


class Controls:
    """The requests a running session takes from other threads; read by its call loop."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._running = threading.Event()  # cleared while paused
        self._running.set()
        self._profile = threading.Event()
        self._profile_level = "default"
        self._counters = threading.Event()
        self._lock = threading.Lock()
        self._capture_calls = 0
        self._interrupt_code: int | None = None

    # -- asked for (any thread) -----------------------------------------------------
    def stop(self, exit_code: int | None = None) -> None:
        """End after the call in flight; `exit_code` 130/143 says a signal did it (first one wins)."""
        with self._lock:
            if exit_code is not None and self._interrupt_code is None:
                self._interrupt_code = exit_code
        self._stop.set()
        self._running.set()

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def ask_profile(self, level: str = "default") -> None:
        """A pass at `level`; a full pass asked for while a default one waits makes the waiting one full."""
        with self._lock:  # the level and the ask together: a second asker never overwrites a full one half-way
            if not self._profile.is_set() or level == "full":
                self._profile_level = level
            self._profile.set()

    def ask_counters(self) -> None:
        self._counters.set()

    def ask_capture(self, calls: int) -> None:
        with self._lock:
            self._capture_calls = max(1, calls)

    # -- read by the run's thread -----------------------------------------------------
    @property
    def stop_event(self) -> threading.Event:
        """Set when the run should end: child processes (compiler, tools) watch it to stop early."""
        return self._stop

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    @property
    def interrupt_code(self) -> int | None:
        with self._lock:
            return self._interrupt_code

    def wait_while_paused(self, timeout: float) -> None:
        """Sleep until resumed, stopped or `timeout` passes; the loop then looks at its requests again."""
        self._running.wait(timeout)

    def take_profile_request(self) -> str | None:
        """The level of the pass asked for (`tool_pass.PROFILE_LEVELS`), or None when none was."""
        with self._lock:
            return self._profile_level if _taken(self._profile) else None

    def take_counters_request(self) -> bool:
        return _taken(self._counters)

    def take_capture_request(self) -> int:
        with self._lock:
            calls, self._capture_calls = self._capture_calls, 0
        return calls


def _taken(request: threading.Event) -> bool:
    """Whether `request` was asked for; it is cleared, so one ask is taken once."""
    if request.is_set():
        request.clear()
        return True
    return False
