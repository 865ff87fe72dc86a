"""Who else used the run's GPU and the host's CPUs: other processes and the host's load.

The neighbour watch builds a `Neighbours` every few seconds, and one over a
profile pass and one over the run's calls, so a slow number can be told apart
from a busy machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputop.core.records.base import now

__all__ = ["GpuProcess", "HostLoad", "Neighbours"]


@dataclass(frozen=True)
class GpuProcess:
    """One process NVML lists on the run's GPU: what it holds there and how busy it kept the GPU."""

    pid: int  # as NVML gives it: the host's pid, which another container's process may not share with us
    name: str | None  # from the process table; None where the pid is not visible here (another container)
    used_memory_bytes: int | None  # None where the driver does not say (some drivers, some containers)
    sm_percent: int | None  # NVML's per-process SM utilisation over the interval; None where unavailable
    memory_percent: int | None  # ... and its memory-controller (bandwidth) utilisation
    kinds: str  # compute, graphics, or compute+graphics
    ours: bool  # this run's engine, its tools or the TUI that owns it


@dataclass(frozen=True)
class HostLoad:
    """What other processes took of the host's CPUs over an interval, in cores (1.0 = one core busy)."""

    other_cores: float  # system-wide busy time less this run's own process tree, per second of wall time
    own_cores: float  # this run's engine, its children (tools) and the TUI that owns it
    cores: int  # logical CPUs of the host
    seconds: float  # the interval's length
    steal_cores: float = 0.0  # taken by the hypervisor for other machines (a VM): contention too, not a process


@dataclass(frozen=True)
class Neighbours:
    """Who else used the run's GPU and the host's CPUs over an interval: the live view, a pass or the run."""

    device_id: str | None
    gpu: str | None  # the NVML device, e.g. "NVIDIA H100 80GB HBM3 (nvml:0)"; None: not an NVIDIA GPU
    processes: tuple[GpuProcess, ...]  # every process NVML lists on the GPU, ours marked
    others: int  # processes on the GPU that are not ours (counted, even where which one is ours is unknown)
    reason: str | None  # what could not be read, in one line (no NVML, no per-process utilisation, hidden pids)
    host: HostLoad | None
    warning: str | None  # others used the GPU, or more than the host-load limit of the CPUs, with the figures
    seconds: float = 0.0  # over how long
    timestamp: float = field(default_factory=now)
