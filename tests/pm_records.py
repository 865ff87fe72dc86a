"""The PM sampling records captured on an H100 (tests/data/pm_sampling/), and a run's state fed with them.

Each file holds the samples a `Sampler` decoded on a thread of a process that
called a 4096-cube matmul in three busy phases with idle half-seconds between,
and each call's window on the same clock (`made_by` in the file says the
command). `fed_state` plays them into a real `RunState` as the engine's PM
watch would, one decode every DECODE_EVERY_S, with the calls added to its call timer
first, so the alignment, the strip and the report are the engine's own.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np

from gputop.core.profiling.cupti.pm_sampler import DECODE_EVERY_S
from gputop.core.records.base import to_json
from gputop.core.run import RunConfig
from gputop.core.run.session import PM_HELD_BY_COUNTERS
from gputop.core.run.state import RunState
from gputop.core.snapshot import RunSnapshot
from gputop.core.store.writer import SessionWriter

DATA = Path(__file__).parent / "data" / "pm_sampling"
DECODE_S = DECODE_EVERY_S  # as the engine's PM watch decodes


def load(name: str) -> dict[str, Any]:
    """`mm_f32` or `mm_f16`: the file's fields, with `rows` and `calls` as arrays."""
    with gzip.open(DATA / f"{name}_h100.json.gz", "rb") as handle:
        data: dict[str, Any] = json.loads(handle.read())
    data["rows"] = np.array(data["rows"], dtype=np.float64)
    data["calls"] = np.array(data["calls"], dtype=np.float64)
    return data


def ready_info(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "metrics": data["metrics"],
        "roles": data["roles"],
        "interval_ms": data["interval_ms"],
        "source": "CUPTI PM sampling 13.4.1",
        "chip": "GH100",
        "metric_set": "TriageCompute",
    }


def fed_state(
    name: str, tmp_path: Path, *, until_s: float | None = None, paused: tuple[float, float] | None = None
) -> tuple[RunState, dict[str, Any]]:
    """A RunState given the file's calls and samples in time order, one decode every DECODE_S (up to `until_s`
    seconds after the first sample, else all of them). With `paused` (from, to: seconds after the first sample),
    the watch pauses as it does for a counters pass (`pm_not_sampling("paused", ...)`) and starts again
    (`pm_ready`): the samples it would have decoded between are never handed over, the calls still are."""
    data = load(name)
    config = RunConfig(target="demo:mlp", session_dir=tmp_path)
    state = RunState(config.target, tmp_path, SessionWriter(tmp_path, to_json(config)))
    state.pm.pm_ready(ready_info(data))
    rows, calls = data["rows"], data["calls"]
    first = rows[0, 0]
    last = rows[-1, 1] if until_s is None else first + until_s
    added = 0
    at = first + DECODE_S
    while at <= last + DECODE_S:
        ended = added
        while ended < len(calls) and calls[ended, 1] <= at:  # the calls that ended by this decode
            ended += 1
        batch_calls = calls[added:ended]
        state.calls.add_batch((batch_calls[:, 1] - batch_calls[:, 0]).tolist(), batch_calls[:, 1].tolist())
        added = ended
        held = paused is not None and first + paused[0] < at <= first + paused[1] + DECODE_S
        if held and state.pm.status()[0] == "sampling":
            state.pm.pm_not_sampling("paused", PM_HELD_BY_COUNTERS)
        elif not held and state.pm.status()[0] == "paused":
            state.pm.pm_ready(ready_info(data))
        if not held:
            batch = rows[(rows[:, 1] > at - DECODE_S) & (rows[:, 1] <= at)]
            state.pm.pm_samples(batch, False, 0.002)
        at += DECODE_S
    state.publish(force=True)
    return state, data


def pm_of(snapshot: RunSnapshot) -> Any:
    assert snapshot.pm_sampling is not None
    return snapshot.pm_sampling
