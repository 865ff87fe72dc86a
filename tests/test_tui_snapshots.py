"""SVG snapshots of the TUI from a replay of recorded real snapshots (deterministic)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gputop.tui.app import GputopApp
from gputop.tui.bridge import ReplaySource

RECORDING = Path(__file__).parent / "data" / "mlp_local_task.jsonl"


@pytest.fixture(autouse=True)
def _utc() -> None:
    os.environ["TZ"] = "UTC"
    time.tzset()


PROFILED = Path(__file__).parent / "data" / "mlp_profiled_local_task.jsonl"


async def _settle(pilot: object) -> None:
    await pilot.pause(0.5)  # type: ignore[attr-defined]


def replay_app() -> GputopApp:
    return GputopApp(ReplaySource.from_file(RECORDING))


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)], ids=["80x24", "120x40", "200x60"])
def test_running_at(snap_compare: object, size: tuple[int, int]) -> None:
    """The recorded profiled run at each size: compact tabs at 80x24, two columns above."""
    app = GputopApp(ReplaySource.from_file(PROFILED))
    assert snap_compare(app, terminal_size=size, run_before=_settle)  # type: ignore[operator]


def test_kernels_forward_at_80x24(snap_compare: object) -> None:
    """At 80x24 the panes take turns: 3 brings Kernels forward (p does too, on a live run)."""
    app = GputopApp(ReplaySource.from_file(PROFILED))
    assert snap_compare(app, press=["3"], terminal_size=(80, 24), run_before=_settle)  # type: ignore[operator]


def test_help_screen(snap_compare: object) -> None:
    async def settle(pilot: object) -> None:
        await pilot.pause(0.3)  # type: ignore[attr-defined]

    assert snap_compare(replay_app(), press=["question_mark"], terminal_size=(120, 40), run_before=settle)  # type: ignore[operator]


ROOFLINE_RECORDING = Path(__file__).parent / "data" / "mlp_local_task_roofline.jsonl"


def test_timeline_at_80x24(snap_compare: object) -> None:
    """The Timeline view (t) of a recorded real profile pass on local-task, at the smallest size."""
    app = GputopApp(ReplaySource.from_file(PROFILED))
    assert snap_compare(app, press=["t"], terminal_size=(80, 24), run_before=_settle)  # type: ignore[operator]


def test_timeline_at_120x40(snap_compare: object) -> None:
    app = GputopApp(ReplaySource.from_file(PROFILED))
    assert snap_compare(app, press=["t"], terminal_size=(120, 40), run_before=_settle)  # type: ignore[operator]


def test_kernels_with_efficiency_at_120x40(snap_compare: object) -> None:
    """A profile with each kernel's FLOPs, bytes and share of the CPU's peak (recorded by this gputop)."""
    app = GputopApp(ReplaySource.from_file(ROOFLINE_RECORDING))
    assert snap_compare(app, terminal_size=(120, 40), run_before=_settle)  # type: ignore[operator]


def test_roofline_view(snap_compare: object) -> None:
    app = GputopApp(ReplaySource.from_file(ROOFLINE_RECORDING))
    assert snap_compare(app, press=["f"], terminal_size=(120, 40), run_before=_settle)  # type: ignore[operator]


BASELINE_REPORT = Path(__file__).parent / "data" / "mlp_baseline_report.json"


def baseline_app() -> GputopApp:
    """The recorded profiled run against a recorded baseline run of demo:mlp on local-task (a real report)."""
    import json

    from gputop.tui.bridge import LiveBaseline

    baseline = LiveBaseline("baseline-mlp (demo:mlp)", json.loads(BASELINE_REPORT.read_text()))
    return GputopApp(ReplaySource.from_file(PROFILED), baseline=baseline)


def test_baseline_run_and_kernels_at_120x40(snap_compare: object) -> None:
    """With a baseline: the Run pane's `vs base` line and the Kernels table's `vs base` column."""
    assert snap_compare(baseline_app(), terminal_size=(120, 40), run_before=_settle)  # type: ignore[operator]


def test_baseline_timeline_at_120x40(snap_compare: object) -> None:
    """With a baseline: its median call drawn under the live one, on one time axis."""
    assert snap_compare(baseline_app(), press=["t"], terminal_size=(120, 40), run_before=_settle)  # type: ignore[operator]
