"""Profiling a call, by where its figures come from: a room per source, and what they all share.

- `ireeprof/`: IREE's own profiles. The profile pass runs IREE's benchmark tool with its device
  profiler, reads the bundle (dispatches, queue operations, clock correlations, pools), lays the
  records on each call and marks each call's window (`call_marks.c`).
- `cupti/`: NVIDIA's CUPTI, in the engine's process: kernel and API activity records for a CUDA
  pass, and the PM sampler (the GPU's own counters while a run goes on; its thread is a watcher,
  `gputop.core.watch.pm_watch`).
- `ncu/`: Nsight Compute: finding and running `ncu`, and its per-kernel counters.
- `work/`: the work estimates: each dispatch's FLOPs and bytes (from its IR or its name), the
  device's peaks, the roofline efficiency, and the source ops a kernel came from.

Shared by the sources, at this level: `dispatches.py` (a dispatch event, the Kernels table, the
summary and the Chrome trace), `breakdown.py` (where a call's time goes, from any source's records)
and `overhead.py` (what a pass costs the calls it measures). These turn device timestamps, CUPTI
activity and ncu's reports into frozen values; none of them drives a run or starts a thread. The
GPU's clocks around a pass are read by `gputop.core.watch.clock_watch`.
"""

from __future__ import annotations

__all__: list[str] = []
