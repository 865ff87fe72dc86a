"""What the app holds: a `SnapshotSource`, whichever run it shows, and the `Poster` every source posts to.

The app never holds engine names (harlequin's adapter, nvitop's `tui/library`):
it drives a source through this one interface, and each source (`in_process`,
`engine_process`, `attach`, `replay`) keeps its own module. Every request says
why not, or None, so the app can put the refusal in its Log pane whatever the
source is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from textual.message import Message

from gputop.core.records.captures import CaptureInfo
from gputop.core.records.devices import DeviceInfo

__all__ = ["Poster", "SnapshotSource"]


class Poster(Protocol):
    """Where a source's messages go: the app, or a test's stand-in for it."""

    def post_message(self, message: Message) -> bool: ...


class SnapshotSource(Protocol):
    """What the app drives: a live engine or a recorded run. Every request says why not, or None."""

    live: bool
    origin: str | None  # whose run this is, when another process drives it (pid, host, command, since)
    generation: int  # counts restarts: snapshots carry the one they belong to

    def attach(self, target: Poster) -> None:
        """Where snapshots go (`post_message`)."""

    def start(self) -> None:
        """Start sending snapshots (non-blocking)."""

    def stop(self, timeout: float = 30.0) -> bool:
        """End the run and wait for its teardown (blocking: call from a worker); True when it ended."""

    def interrupt(self, exit_code: int) -> None:
        """A signal ends the run: record it as interrupted with `exit_code` (non-blocking)."""

    def toggle_pause(self) -> str | None:
        """Pause or resume; returns the new state, or None when neither applies.

        A source that can say why (a viewer whose run's channel did not answer) sets `pause_refused`.
        """

    def request_profile(self, level: str = "default") -> str | None:
        """Ask for a profile pass at `level` (default or full); returns why not, or None."""

    def request_capture(self) -> str | None:
        """Ask for a RenderDoc capture of the next call; returns why not, or None."""

    def request_counters(self) -> str | None:
        """Ask for a counters pass (Nsight Compute, beside the run); returns why not, or None."""

    def request_pm_sampling(self, on: bool) -> str | None:
        """Turn the GPU's own counters, sampled live (CUPTI PM sampling), `on` or off; returns why not, or None."""

    def abandon(self, exit_code: int) -> None:
        """A second signal: write the run's record as interrupted now; the process leaves right after."""

    def refusal(self, action: str = "") -> str | None:
        """Why `action` (reload, device, export) cannot happen here, or None."""

    def restart(self, **changes: Any) -> None:
        """Stop, then start again with `changes` to the config, as generation + 1 (blocking)."""

    def runnable_devices(self) -> list[DeviceInfo]:
        """Devices a run can move to (blocking: drivers are asked)."""

    def export_report(self) -> Path:
        """Write the report as it stands into the session directory; returns its path (blocking)."""

    def current_report(self) -> dict[str, Any]:
        """The report as it stands, for a browser to download (blocking)."""

    def read_capture(self, path: str) -> CaptureInfo:
        """A capture's dispatch list, replayed for GPU times where it can be (blocking: call from a worker)."""

    @property
    def session_dir(self) -> Path | None:
        """Where the run's record is (screenshots go there too)."""
