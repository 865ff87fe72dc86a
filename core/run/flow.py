"""The shape every way of running calls shares, and what a flow may touch of its run.

A run's calls go through one of three flows: IREE's Python runtime in this
process, pyopencl, or IREE's shipped tools for multi-device GPU modules. The
session drives each through the same `Flow` protocol with one call loop, so
pause, stop, profile, capture and count behave the same everywhere. A flow sees its
run only through a `RunContext`: the config, the state it reports to, the
requests it honours and the session folder; never the session's insides.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gputop.core.run.config import RunConfig
from gputop.core.run.requests import Controls, FlowKind
from gputop.core.run.state import RunState
from gputop.core.watch.memory_sampler import MemorySampler

__all__ = ["Flow", "RunContext", "Uncapturable", "Uncountable", "end_sampling", "timed_teardown"]


@dataclass(frozen=True)
class RunContext:
    """What a flow may use of its run."""

    config: RunConfig
    state: RunState
    controls: Controls
    session_dir: Path


class Flow(Protocol):
    """One way of running a target's calls, driven by the session in phase order."""

    kind: FlowKind

    def open(self) -> None:
        """Everything up to and including the first call and its output check (phases, events)."""

    def calls(self, limit: int) -> int:
        """Make up to `limit` synced calls, recording each one's time; returns how many were made."""

    def profile(self, calls: int, level: str = "default") -> None:
        """One profile pass of `calls` calls at `level` (asked for only when `why_no_profile` allowed it)."""

    def capture(self, calls: int) -> int:
        """A RenderDoc capture of up to `calls` calls; returns how many were made."""

    def capture_ready(self) -> bool:
        """Whether RenderDoc is loaded and able to capture this run."""

    def count(self) -> None:
        """Start a counters pass on a thread of its own and return (asked only when `why_no_counters` allowed it)."""

    def counters_refusal(self) -> str | None:
        """What an earlier counters pass met that every later one would meet too, or None."""

    def wait_counters(self, timeout: float | None = None) -> bool:
        """Wait for the counters pass under way, if any; True once none is."""

    def close(self) -> None:
        """Release devices and helpers; called once, whatever happened before."""


def end_sampling(sampler: MemorySampler | None, state: RunState) -> None:
    """Stop a flow's memory sampler and keep one last sample of the run's end."""
    if sampler is None:
        return
    sampler.stop()
    with contextlib.suppress(Exception):  # a last sample is nice, not needed
        state.memory.add(sampler.sample())


def timed_teardown(close: Callable[[], None], state: RunState) -> None:
    """Release a runner and record how long that took as the teardown phase."""
    started = time.perf_counter()
    close()
    state.lifecycle.phase(teardown_s=time.perf_counter() - started)


class Uncapturable:
    """For flows RenderDoc cannot capture: OpenCL work, and calls made in another process."""

    def capture_ready(self) -> bool:
        return False

    def capture(self, calls: int) -> int:
        return 0


class Uncountable:
    """For flows whose runs Nsight Compute cannot measure: OpenCL, and multi-device runs of IREE's tools."""

    def count(self) -> None:
        raise RuntimeError("this run cannot have a counters pass (why_no_counters says why)")

    def counters_refusal(self) -> str | None:
        return None

    def wait_counters(self, timeout: float | None = None) -> bool:
        return True
