"""The samples a session keeps so that two runs can be compared without running either again.

A report holds percentiles; a test of a difference needs the values. A
session therefore keeps, in `calls.json` beside its report (and under the
report's `samples` key), the synchronised times of its steady calls (all of
them up to `RESERVOIR` calls, a uniform reservoir of that many beyond) and
the per-dispatch device times of its profile passes (at most `DISPATCH_CAP`
per kernel, a uniform subsample beyond, kernels in the order a call first
dispatches them). 20000 calls and a few kernels are a few hundred kB of JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from gputop.core.call_times import CALL_MS_DECIMALS, RESERVOIR

__all__ = ["CALLS_FILE", "DISPATCH_CAP", "SAMPLES_FORMAT", "call_samples", "dispatch_samples", "samples_block"]

CALLS_FILE = "calls.json"
SAMPLES_FORMAT = 1
DISPATCH_CAP = 5000  # per-dispatch times kept per kernel


def call_samples(kept_ms: np.ndarray, count: int) -> dict[str, Any]:
    """The calls part: how many ran, how many are kept, and the kept times (ms, 10 ns resolution)."""
    return {
        "count": int(count),
        "kept": len(kept_ms),
        "reservoir": RESERVOIR,
        "uniform": count > len(kept_ms),  # a uniform sample of the run, not every call
        "ms": [round(float(v), CALL_MS_DECIMALS) for v in kept_ms],
    }


def dispatch_samples(
    events: Iterable[tuple[str, float]], *, calls: int, source: str, device: str, passes: int
) -> dict[str, Any]:
    """The kernels part from (dispatch name, duration in ns) pairs: per kernel, its dispatch times in us."""
    by_name: dict[str, list[float]] = {}
    for name, duration_ns in events:
        by_name.setdefault(name, []).append(duration_ns / 1e3)
    rng = np.random.default_rng(0)
    kept: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    for name, values in by_name.items():
        counts[name] = len(values)
        arr = np.asarray(values)
        if len(arr) > DISPATCH_CAP:
            arr = arr[np.sort(rng.choice(len(arr), DISPATCH_CAP, replace=False))]
        kept[name] = [round(float(v), 3) for v in arr]
    return {
        "source": source,
        "device": device,
        "calls": int(calls),
        "passes": int(passes),
        "cap": DISPATCH_CAP,
        "counts": counts,
        "us": kept,
    }


def samples_block(calls: dict[str, Any] | None, dispatches: dict[str, Any] | None) -> dict[str, Any]:
    """What `calls.json` and the report's `samples` key hold."""
    return {"format": SAMPLES_FORMAT, "calls": calls, "dispatches": dispatches}


def as_array(values: Sequence[float] | None) -> np.ndarray:
    """A samples list as a float array (empty for None)."""
    return np.asarray(values if values is not None else [], dtype=np.float64)
