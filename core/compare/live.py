"""A baseline held beside a live run: the TUI's `b` and `--baseline`.

The TUI sees a run as snapshots: its newest 120 call times and, after a
profile pass, each kernel's p50, not every dispatch. So the calls are tested
as `gputop compare` tests them (the recent calls against the baseline's kept
samples), while a kernel's live p50 is set against the baseline's own spread
for that kernel: a change counts when it is larger than the noise floor and
than how far the baseline's stretches of dispatches wandered. A live kernel
IREE named otherwise (another compile of the same model) is set against the
baseline's kernel formed from the same source ops, as `gputop compare` pairs
them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from gputop.core.compare.pairing import SourceOpsKey, source_ops_key
from gputop.core.compare.samples import as_array
from gputop.core.compare.significance import BLOCKS_NEEDED, DEFAULT_NOISE, Change, test_change, untested, wander_of
from gputop.core.records.profile import SourceOp

__all__ = ["LiveBaseline"]


class LiveBaseline:
    """A recorded run (its report with samples) held to compare live numbers with."""

    def __init__(self, label: str, report: Mapping[str, Any], *, noise: float = DEFAULT_NOISE) -> None:
        self.label = label
        self.target = report.get("target")
        device = report.get("device")
        self.device: str | None = device.get("id") if isinstance(device, dict) else None  # the device it ran on
        self.noise = noise
        samples = report.get("samples") or {}
        self.calls_ms = as_array((samples.get("calls") or {}).get("ms"))
        calls = report.get("calls") or {}
        self.p50_ms: float | None = calls.get("p50_ms")
        dispatches = (samples.get("dispatches") or {}).get("us") or {}
        self.kernels: dict[str, tuple[float, float]] = {}  # name -> (p50 us, floor)
        by_ops: dict[SourceOpsKey, list[str]] = {}
        for row in report.get("kernels") or []:
            name, p50 = row.get("name"), row.get("p50_us")
            if isinstance(name, str) and isinstance(p50, (int, float)) and p50 > 0:
                values = as_array(dispatches.get(name))
                floor = max(noise, wander_of(values, "p50")) if len(values) >= BLOCKS_NEEDED else noise
                self.kernels[name] = (float(p50), floor)
                if key := source_ops_key(row.get("source_ops")):
                    by_ops.setdefault(key, []).append(name)
        # The one baseline kernel formed from each set of source ops (ops that formed two are no evidence).
        self.by_source_ops = {key: names[0] for key, names in by_ops.items() if len(names) == 1}
        breakdown = report.get("call_breakdown") or {}
        self.median_call: list[dict[str, Any]] = list(breakdown.get("median_call") or [])

    def other_device(self, live_device: str | None) -> str | None:
        """The baseline's device where it is not `live_device` (a comparison across devices says so); else None."""
        if self.device and live_device and self.device != live_device:
            return self.device
        return None

    def calls_change(self, recent_ms: Sequence[float]) -> Change:
        """The live run's recent calls against the baseline's (p50), tested; untested without samples."""
        recent = np.asarray(recent_ms, dtype=np.float64)
        if len(self.calls_ms) >= 2 and len(recent) >= 2:
            return test_change("p50", self.calls_ms, recent, self.noise)
        live = float(np.median(recent)) if len(recent) else None
        return untested("p50", self.p50_ms, live)

    def kernel_change(self, name: str, p50_us: float, source_ops: Sequence[SourceOp] | None = None) -> Change | None:
        """A live kernel's p50 against the baseline's kernel of its name, else of its source ops; None where the
        baseline has neither."""
        base = self.kernels.get(name)
        if base is None:
            named = self.by_source_ops.get(source_ops_key(source_ops))
            base = self.kernels.get(named) if named is not None else None
        if base is None:
            return None
        p50, floor = base
        change = p50_us / p50 - 1.0
        return Change("p50", p50, p50_us, change, significant=abs(change) >= floor, tested=True, floor=floor)
