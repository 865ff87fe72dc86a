"""Profiling a call: the profile records and their parsers, the call breakdown, kernel work and
efficiency, peaks and clocks.

These turn device timestamps, CUPTI activity and NVML readings into frozen values; none of them
drives a run.
"""

from __future__ import annotations

__all__: list[str] = []
