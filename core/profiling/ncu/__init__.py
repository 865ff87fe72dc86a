"""Nsight Compute (`ncu`): the counters pass's tool and the per-kernel hardware counters it reports.

`ncu_command.py` finds `ncu`, builds its command and names its failures; `kernel_counters.py` reads its
CSV pages into `KernelCounters` and joins them with the Kernels table. May import the work
estimates (`work/`) and IREE's tools (`ireeprof/`).
"""

from __future__ import annotations

__all__: list[str] = []
