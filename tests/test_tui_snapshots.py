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


def replay_app() -> GputopApp:
    return GputopApp(ReplaySource.from_file(RECORDING))


def test_running_at_120x40(snap_compare: object) -> None:
    async def settle(pilot: object) -> None:
        await pilot.pause(0.5)  # type: ignore[attr-defined]

    assert snap_compare(replay_app(), terminal_size=(120, 40), run_before=settle)  # type: ignore[operator]


def test_running_at_80x24(snap_compare: object) -> None:
    async def settle(pilot: object) -> None:
        await pilot.pause(0.5)  # type: ignore[attr-defined]

    assert snap_compare(replay_app(), terminal_size=(80, 24), run_before=settle)  # type: ignore[operator]


def test_help_screen(snap_compare: object) -> None:
    async def settle(pilot: object) -> None:
        await pilot.pause(0.3)  # type: ignore[attr-defined]

    assert snap_compare(replay_app(), press=["question_mark"], terminal_size=(120, 40), run_before=settle)  # type: ignore[operator]


PROFILED = Path(__file__).parent / "data" / "mlp_profiled_local_task.jsonl"
ROOFLINE_RECORDING = Path(__file__).parent / "data" / "mlp_local_task_roofline.jsonl"


async def _settle(pilot: object) -> None:
    await pilot.pause(0.5)  # type: ignore[attr-defined]


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
