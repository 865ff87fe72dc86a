"""`gputop compare` with the GPU's own counters (issue 48): the `PM sampling (calls p50)` condition and its warning.

The two sides are one real report of a tiny CPU run whose `pm_sampling` block
is replaced by the real block of each H100 recording (`pm_records.py`:
mm_f32, a 4096-cube f32 matmul on the SMs' FMA pipes, and mm_f16, the same
on the tensor pipes), so the comparison reads what a CUDA run's report holds.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pm_records import fed_state, pm_of

from conftest import run_gputop, run_json
from gputop.core.compare import compare_reports, comparison_text
from gputop.core.compare.conditions import Condition
from gputop.core.compare.pm_condition import pm_clock_mhz, short_reason
from gputop.core.compare.verdict import Comparison
from gputop.core.profiling.cupti.pm_sampler import PERMISSION
from gputop.core.store.report import pm_sampling_json

ROW = "PM sampling (calls p50)"


@pytest.fixture(scope="module")
def cpu_report() -> dict[str, Any]:
    proc, report = run_json("demo:mlp", "--device", "local-task", "-n", "5")
    assert proc.returncode == 0, proc.stderr
    return report


@pytest.fixture(scope="module")
def blocks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Each recording's report block, as `gputop run --json` writes it (through JSON)."""
    out = {}
    for name in ("mm_f32", "mm_f16"):
        state, _ = fed_state(name, tmp_path_factory.mktemp(name))
        out[name] = json.loads(json.dumps(pm_sampling_json(pm_of(state.snapshot))))
    return out


def _with(report: dict[str, Any], block: dict[str, Any] | None) -> dict[str, Any]:
    """The report with `block` as its `pm_sampling`, or without the key (a report of an older gputop)."""
    out = copy.deepcopy(report)
    out.pop("pm_sampling", None)
    if block is not None:
        out["pm_sampling"] = block
    return out


def _row(comparison: Comparison) -> Condition | None:
    return next((c for c in comparison.conditions if c.what == ROW), None)


def test_the_row_sets_the_two_runs_counters_side_by_side(
    cpu_report: dict[str, Any], blocks: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    a, b = _with(cpu_report, blocks["mm_f32"]), _with(cpu_report, blocks["mm_f16"])
    comparison = compare_reports(a, b)
    row = _row(comparison)
    assert row is not None
    # f32 keeps the SMs busy without the tensor pipes; f16 runs on them, so SM and tensor read the same.
    assert row.a == "SM 4.8% tensor 0.0% DRAM 0.9% clock 1995 MHz"
    assert row.b == "SM 0.9% tensor 0.9% DRAM 0.8% clock 1987 MHz"
    assert row.differs and not row.warning  # 1995 and 1987 MHz: the same clock within 5%
    assert not any("counters saw other SM clocks" in w for w in comparison.warnings)
    assert f"  {ROW}  A {row.a}" in comparison_text(comparison).splitlines()
    # The same through the command line, from the two report files.
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    proc = run_gputop("compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    at = lines.index(f"  {ROW}  A {row.a}")
    assert lines[at + 1] == f"  {' ' * len(ROW)}  B {row.b}"
    # A run compared with itself: the row is there and nothing differs, so the printout leaves it out.
    same = compare_reports(a, a)
    same_row = _row(same)
    assert same_row is not None and not same_row.differs
    assert ROW not in comparison_text(same)


def test_a_side_that_did_not_sample_says_why_in_short(
    cpu_report: dict[str, Any], blocks: dict[str, dict[str, Any]]
) -> None:
    reason = cpu_report["pm_sampling"]["reason"]  # the real refusal of a CPU device
    assert cpu_report["pm_sampling"]["calls"] is None and "CPU device" in reason
    row = _row(compare_reports(cpu_report, _with(cpu_report, blocks["mm_f16"])))
    assert row is not None and row.differs and not row.warning
    assert row.a == "not sampled: " + reason.partition(": ")[0]
    assert row.a.endswith("local-task is a CPU device")
    assert row.b.startswith("SM 0.9% tensor 0.9%")
    # A reason whose first clause is still long is cut at a word, and says it was.
    assert short_reason(PERMISSION) == "the GPU's performance counters are open to admin users only (ERR_NVGPUCTRPERM)"
    long = "PM sampling needs the nvidia-cuda-cupti wheel's libcupti.so.13, libnvperf_target.so, libnvperf_host.so"
    cut = short_reason(long + " (pip install 'gputop[cuda]'); looked in /usr/lib")
    assert cut.endswith("…") and len(cut) <= 90 and long.startswith(cut[:-1])


def test_reports_without_counters_compare_as_before(
    cpu_report: dict[str, Any], blocks: dict[str, dict[str, Any]]
) -> None:
    older = _with(cpu_report, None)  # a report of a gputop before issue 48: no block at all
    assert _row(compare_reports(older, older)) is None
    assert _row(compare_reports(cpu_report, cpu_report)) is None  # both CPU runs: only reasons, nothing to show
    assert _row(compare_reports(older, cpu_report)) is None
    comparison = compare_reports(older, _with(cpu_report, blocks["mm_f32"]))
    row = _row(comparison)
    assert row is not None and (row.a, row.differs) == ("-", True)
    assert comparison.verdict  # the rest of the comparison is untouched


def test_counters_that_saw_other_clocks_warn(cpu_report: dict[str, Any], blocks: dict[str, dict[str, Any]]) -> None:
    """B's clock moved to 1500 MHz (a throttled GPU): more than 5% below A's 1995 MHz, so the row warns."""
    slow = copy.deepcopy(blocks["mm_f32"])
    clock = next(m for m, role in slow["roles"].items() if role == "clock")
    slow["calls"][clock]["p50"] = 1500.0
    assert (pm_clock_mhz(blocks["mm_f32"]), pm_clock_mhz(slow)) == (1995.0, 1500.0)
    comparison = compare_reports(_with(cpu_report, blocks["mm_f32"]), _with(cpu_report, slow))
    row = _row(comparison)
    assert row is not None and row.warning and row.b.endswith("clock 1500 MHz")
    assert (
        "the GPU's counters saw other SM clocks over the calls: median 1995 MHz in A, 1500 MHz in B "
        "(calls at a lower clock are slower whatever the code)"
    ) in comparison.warnings
