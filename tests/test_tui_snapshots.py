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
