"""A recorded run played into the app: `gputop open`, and the tests' and screenshots' deterministic screens.

Every snapshot is posted at once, in order; the app's coalescing draws the
last. Nothing here can change the run, so every request is refused with the
same words.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gputop.core.records.captures import CaptureInfo
from gputop.core.records.devices import DeviceInfo
from gputop.core.renderdoc.capture_files import capture_info
from gputop.core.snapshot import RunSnapshot
from gputop.core.store.replay import read_snapshots
from gputop.tui.sources.messages import SnapshotArrived
from gputop.tui.sources.protocol import Poster

__all__ = ["RECORDED", "ReplaySource"]

RECORDED = "this is a recorded run"


class ReplaySource:
    """Recorded snapshots played into the app: deterministic screens for tests and `open`."""

    live = False
    origin = None
    generation = 0

    def __init__(self, snapshots: list[RunSnapshot]) -> None:
        self._snapshots = snapshots
        self._target: Poster | None = None

    @classmethod
    def from_file(cls, path: Path) -> ReplaySource:
        return cls(read_snapshots(path))

    @property
    def session_dir(self) -> Path | None:
        last = self._snapshots[-1] if self._snapshots else None
        return Path(last.session_dir) if last and last.session_dir else None

    def attach(self, target: Poster) -> None:
        self._target = target

    def start(self) -> None:
        if self._target is None:
            raise RuntimeError("attach the replay to an app first")
        for snapshot in self._snapshots:
            self._target.post_message(SnapshotArrived(snapshot))

    def stop(self, timeout: float = 30.0) -> bool:
        return True

    def interrupt(self, exit_code: int) -> None:
        return None

    def abandon(self, exit_code: int) -> None:
        return None

    def toggle_pause(self) -> str | None:
        return None

    def request_profile(self, level: str = "default") -> str | None:
        return RECORDED

    def request_capture(self) -> str | None:
        return RECORDED

    def request_counters(self) -> str | None:
        return RECORDED

    def request_pm_sampling(self, on: bool) -> str | None:
        return RECORDED

    def refusal(self, action: str = "") -> str | None:
        return RECORDED

    def restart(self, **changes: Any) -> None:
        raise RuntimeError(RECORDED)

    def runnable_devices(self) -> list[DeviceInfo]:
        return []

    def export_report(self) -> Path:
        raise RuntimeError(RECORDED)

    def read_capture(self, path: str) -> CaptureInfo:
        # RenderDoc never enters this process: the reader runs as a child of it directly.
        return capture_info(Path(path), replay=True)

    def current_report(self) -> dict[str, Any]:
        raise RuntimeError(RECORDED)
