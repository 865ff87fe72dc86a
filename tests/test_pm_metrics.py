"""The GPU's own counters in Prometheus (issue 48): `gputop_pm_sampling_active` and `gputop_pm_value`.

The snapshots are a real RunState's, fed with the samples recorded on an H100
(`pm_records.py`), scraped through the exporter's own collector and text format.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pm_records import fed_state, pm_of
from prometheus_client import CollectorRegistry, generate_latest

from gputop.core.serving.metrics import METRICS, SnapshotCollector
from gputop.core.snapshot import RunSnapshot


def _scrape(snap: RunSnapshot) -> list[str]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(lambda: snap, {}))
    return [line for line in generate_latest(registry).decode().splitlines() if "gputop_pm_" in line]


def test_the_newest_counters_are_gauges_while_sampling(tmp_path: Path) -> None:
    state, _ = fed_state("mm_f32", tmp_path, until_s=2.0)  # two seconds in: the matmuls' first busy phase
    pm = pm_of(state.snapshot)
    assert pm.sampling
    lines = _scrape(state.snapshot)
    assert 'gputop_pm_sampling_active{device="none"} 1.0' in lines
    values = {}
    for line in lines:
        if line.startswith("gputop_pm_value{"):
            labels, value = line.rsplit(" ", 1)
            values[labels] = float(value)
    assert len(values) == 4  # SM, tensor, DRAM, clock
    sm = 'gputop_pm_value{device="none",metric="TriageCompute.sm__throughput.avg.pct_of_peak_sustained_elapsed",'
    assert values[sm + 'role="sm",unit="%"}'] == next(
        v for m, v in zip(pm.metrics, pm.newest, strict=True) if m.role == "sm"
    )
    clock = 'gputop_pm_value{device="none",metric="gpc__cycles_elapsed.avg.per_second",role="clock",unit="MHz"}'
    assert 1900 < values[clock] < 2000
    names = {name for name, _, _ in METRICS}
    assert {"gputop_pm_sampling_active", "gputop_pm_value"} <= names


def test_paused_refused_or_absent_counters_leave_no_stale_values(tmp_path: Path) -> None:
    state, _ = fed_state("mm_f32", tmp_path, until_s=2.0)
    state.pm.pm_not_sampling("paused", "a counters pass (ncu) holds the GPU's counters: the strip goes on when it ends")
    state.publish(force=True)
    assert pm_of(state.snapshot).state == "paused"
    assert [line for line in _scrape(state.snapshot) if not line.startswith("#")] == [
        'gputop_pm_sampling_active{device="none"} 0.0'
    ]
    # A run whose engine has not decided about PM sampling: the families are there, empty.
    lines = _scrape(dataclasses.replace(state.snapshot, pm_sampling=None))
    assert [line for line in lines if not line.startswith("#")] == []
    assert "# TYPE gputop_pm_value gauge" in lines
