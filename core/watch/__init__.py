"""The machine beside a run: NVML, and the watchers that read the machine on threads of their own.

A run's times and memory mean little without what the machine did meanwhile.
`nvml.py` finds the NVIDIA GPUs and reads their memory; every watcher is a
`Watcher` (`watcher.py`: a look every period on a daemon thread, stopped by an
event, results to a callback): `memory_sampler.py` samples the allocators, devices and
host memory, `neighbour_watch.py` who else used the GPU and the host, `clock_watch.py`
the GPU's clocks around a profile pass (and the warm-up before it), and
`call_clocks.py` the same clocks while the run's calls go, and `pm_watch.py`
the GPU's own counters (CUPTI's PM sampler, `profiling/cupti/pm_sampler.py`,
on the watcher's thread: a pause or resume wakes it at once). They read the
machine, never the run, and hand back frozen values.
"""

from __future__ import annotations

from gputop.core.watch.watcher import Watcher

__all__ = ["Watcher"]
