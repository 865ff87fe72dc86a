"""NVIDIA's CUPTI in the engine's process: kernel times of a CUDA pass, and the GPU's own counters while a run goes on.

`activity.py` records kernel and API activity around real calls; `pm_sampler.py` opens CUPTI's PM
sampling and decodes its samples (the thread that drives it is `gputop.core.watch.pm_watch`). May
import the shared modules of `gputop.core.profiling`.
"""

from __future__ import annotations

__all__: list[str] = []
