"""Profiling a call: the profile records and their parsers, the call breakdown, kernel work and
efficiency, peaks, and Nsight Compute's counters.

These turn device timestamps, CUPTI activity and ncu's reports into frozen values; none of them
drives a run. The GPU's clocks around a pass are read by `gputop.core.watch.clocks`.
"""

from __future__ import annotations

__all__: list[str] = []
