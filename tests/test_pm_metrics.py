"""The GPU's own counters in Prometheus (issue 48): `gputop_pm_sampling_active` and `gputop_pm_value`.

The snapshots are a real RunState's, fed with the samples recorded on an H100
(`pm_records.py`), scraped through the exporter's own collector and text format.
"""

from __future__ import annotations

import dataclasses
import socket
from pathlib import Path

from pm_records import fed_state, pm_of
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

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
    # The run's labels on every series (issue 58): no device yet in these fed snapshots, so no GPU labels either.
    run = {"Hostname": socket.gethostname(), "device": "none", "target": "demo:mlp"}
    run["run"] = Path(state.snapshot.session_dir or "").name
    samples = [s for f in text_string_to_metric_families("\n".join(lines) + "\n") for s in f.samples]
    assert [(s.labels, s.value) for s in samples if s.name == "gputop_pm_sampling_active"] == [(run, 1.0)]
    values = {s.labels["role"]: s for s in samples if s.name == "gputop_pm_value"}
    assert len(values) == 4  # SM, tensor, DRAM, clock
    sm = values["sm"]
    assert sm.labels == {
        **run,
        "metric": "TriageCompute.sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "role": "sm",
        "unit": "%",
        "dcgm_field": "DCGM_FI_PROF_SM_ACTIVE",
    }
    assert sm.value == next(v for m, v in zip(pm.metrics, pm.newest, strict=True) if m.role == "sm")
    clock = values["clock"]
    assert clock.labels["metric"] == "gpc__cycles_elapsed.avg.per_second" and clock.labels["unit"] == "MHz"
    assert clock.labels["dcgm_field"] == "DCGM_FI_DEV_SM_CLOCK" and 1900 < clock.value < 2000
    help_line = next(line for line in lines if line.startswith("# HELP gputop_pm_value "))
    assert "role tensor ~ DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" in help_line and "DCGM_FI_PROF_DRAM_ACTIVE" in help_line
    names = {name for name, _, _ in METRICS}
    assert {"gputop_pm_sampling_active", "gputop_pm_value"} <= names


def test_paused_refused_or_absent_counters_leave_no_stale_values(tmp_path: Path) -> None:
    state, _ = fed_state("mm_f32", tmp_path, until_s=2.0)
    state.pm.pm_not_sampling("paused", "a counters pass (ncu) holds the GPU's counters: the strip goes on when it ends")
    state.publish(force=True)
    assert pm_of(state.snapshot).state == "paused"
    run = f'Hostname="{socket.gethostname()}",device="none",run="{Path(state.snapshot.session_dir or "").name}"'
    assert [line for line in _scrape(state.snapshot) if not line.startswith("#")] == [
        f'gputop_pm_sampling_active{{{run},target="demo:mlp"}} 0.0'  # labels in prometheus_client's sorted order
    ]
    # A run whose engine has not decided about PM sampling: the families are there, empty.
    lines = _scrape(dataclasses.replace(state.snapshot, pm_sampling=None))
    assert [line for line in lines if not line.startswith("#")] == []
    assert "# TYPE gputop_pm_value gauge" in lines
