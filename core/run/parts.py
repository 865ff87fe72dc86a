"""The parts every run is made of, composed in one place: its folder, record, state, control channel and watch.

A run made by gputop's own call loop (`Session`) and a run of a user's own
program that gputop only watches (`gputop.core.program`) publish the same
snapshots, write the same session folder and answer the same viewers; what
differs is only what feeds the state. So the parts are built and torn down
here, once, and each producer holds a `RunParts`:

- the session folder (made, or continued as a later segment) and its
  `SessionWriter` (samples.jsonl, the manifest, report.json at the end);
- the one `RunState` (its single writer is the producer's thread);
- the control channel (`control.sock`) through which other processes' viewers
  ask, answered by whatever `Remote` the producer is;
- the neighbour watch (who else uses the GPU and the host), the clock
  watch (the GPU's clocks while the calls go) and the PM sampling watch (the
  GPU's own counters, sampled on a thread of this process: CUDA only).

Every method that ends a run is safe to call from a failing path: the record
is written whatever the report builder or the disk did.
"""

from __future__ import annotations

import contextlib
import os
import time
import traceback
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from gputop.core.errors import UnwritableFolder
from gputop.core.paths import new_session_dir, note_session_dir
from gputop.core.records.devices import DeviceInfo
from gputop.core.run.state import RunState
from gputop.core.run.viewer_ops import OwnerOps, Remote, answer
from gputop.core.serving.control_socket import ControlServer
from gputop.core.snapshot import RunSnapshot
from gputop.core.store.report import build_report
from gputop.core.store.writer import SessionWriter
from gputop.core.watch.call_clocks import CallClockWatch
from gputop.core.watch.clock_watch import gpu_clock_for
from gputop.core.watch.neighbour_watch import NeighbourWatch, watch_roots
from gputop.core.watch.pm_watch import PmWatch

__all__ = ["PM_START_WAIT_S", "RunParts", "pm_refusal_for"]

PM_START_WAIT_S = 5.0  # how long the calls wait for PM sampling to start (or be refused) before they begin


def pm_refusal_for(device: DeviceInfo | None) -> str | None:
    """Why `device`'s counters cannot be PM sampled, in one line with what to use instead; None on CUDA."""
    if device is None:
        return "no device: no GPU counters to sample"
    if device.backend == "cuda":
        return None
    if device.kind != "gpu":
        what = "a software GPU on the CPU" if device.kind == "software-gpu" else "a CPU device"
        return (
            f"PM sampling reads an NVIDIA GPU's counters through CUDA; {device.id} is {what}: the Kernels pane's "
            "times (p) are the figures it has"
        )
    if "nvidia" in device.name.lower():
        return (
            f"PM sampling reads the GPU's counters through CUDA, and {device.id} runs on {device.backend}: run the "
            "same module with --device cuda for the live counters, or take a counters pass (n) there"
        )
    return (
        f"PM sampling is CUPTI's, for NVIDIA GPUs on CUDA; {device.id} ({device.name}) is not one: its vendor's "
        "profiler (rocprofv3 on AMD) reads its counters"
    )


class RunParts:
    """One run's folder, record, state, control channel, neighbour watch and clock watch."""

    def __init__(
        self,
        manifest_config: dict[str, Any],
        *,
        target: str,
        label: str,
        session_dir: Path | None = None,
        record_every_s: float = 0.0,
        function: str | None = None,
        segment: int = 0,
        owner_pid: int | None = None,
    ) -> None:
        """Make (or continue, as `segment`) the session folder and the run's record and state.

        Raises:
            UnwritableFolder: the folder cannot be made or written (a read-only or full state folder).
        """
        self.owner_pid = owner_pid
        self.session_dir = session_dir or new_session_dir(label=label)
        note_session_dir(self.session_dir)
        try:
            self.session_dir.mkdir(parents=True, exist_ok=True)
            self.writer = SessionWriter(self.session_dir, manifest_config, every_s=record_every_s, segment=segment)
        except OSError as exc:
            raise UnwritableFolder(self.session_dir, exc) from exc
        self.state = RunState(target, self.session_dir, self.writer, function=function, segment=segment)
        self.control: ControlServer | None = None
        self.watch: NeighbourWatch | None = None
        self.clock_watch: CallClockWatch | None = None
        self.pm_watch: PmWatch | None = None
        self._viewers_seen = 0  # how many viewers subscribed to the stream, kept once the channel closes

    # -- the control channel --------------------------------------------------------------
    def open_control(self, remote: Remote, owner_ops: OwnerOps | None = None) -> None:
        """The channel for viewers in other processes; a run goes on without one if it cannot open."""
        server = ControlServer(
            self.session_dir, lambda request: answer(remote, request, owner_ops), owner_pid=self.owner_pid
        )
        try:
            server.start()
        except OSError as exc:
            why = f"control channel: {server.path}: {exc.strerror or exc}"
            self.state.log.add("warning", f"{why} (gputop attach can follow this run but not pause or profile it)")
            return
        self.control = server
        # Viewers get every snapshot as the record writer serialises it: off the producer's thread, once for all.
        # A viewer under Ctrl-Z costs nothing: while no subscriber can take a line, none is made for them.
        self.writer.stream_lines_to(server.offer, lambda: server.stream.wanting)

    def close_control(self) -> None:
        server, self.control = self.control, None
        if server is not None:
            self._viewers_seen = server.stream.subscribed_total
            server.close()

    def engine_info(self) -> dict[str, Any]:
        """Where this run's engine ran: its pid, the process that owns it (a TUI), how many viewers subscribed.

        `viewers` counts every viewer there has been; `viewers_now` those subscribed now (0 once the run ended).
        """
        control = self.control
        viewers = control.stream.subscribed_total if control is not None else self._viewers_seen
        viewers_now = control.stream.subscribers if control is not None else 0
        return {"pid": os.getpid(), "owner_pid": self.owner_pid, "viewers": viewers, "viewers_now": viewers_now}

    # -- the neighbour watch --------------------------------------------------------------
    def start_watch(self, device: DeviceInfo | None, own_pids: Iterable[int] = ()) -> NeighbourWatch:
        """Who else uses `device` and the host; the trees of this process, its owner and `own_pids` are the run's."""
        watch = NeighbourWatch(device, [*watch_roots(self.owner_pid), *own_pids])
        watch.on_update = self.state.neighbours.set_live
        watch.start()
        self.watch = watch
        return watch

    def stop_watch(self) -> None:
        if self.watch is not None:
            self.watch.stop()

    # -- the clock watch ------------------------------------------------------------------
    def start_clocks(self, device: DeviceInfo | None, every_s: float) -> None:
        """Read `device`'s GPU clocks every `every_s` while the calls go; where it has none, the state says why."""
        if device is None:
            self.state.clocks.set_source(None, "no device: no GPU clock to read")
            return
        clock, reason = gpu_clock_for(device)
        self.state.clocks.set_source(clock.label if clock is not None else None, reason)
        if clock is None:
            return
        watch = CallClockWatch(clock, every_s, self.state.clocks.on_reading)
        with contextlib.suppress(Exception):  # the clock before the first call: it counts for none
            self.state.clocks.on_reading(watch.look())
        watch.start()
        self.clock_watch = watch

    # -- the PM sampling watch ------------------------------------------------------------
    def start_pm(self, device: DeviceInfo | None, why_not: str | None, interval_ms: float) -> None:
        """Sample `device`'s counters on a thread of this process, or say in the state why not (`why_not`, or
        the device's own reason: not CUDA)."""
        reason = why_not or pm_refusal_for(device)
        if reason is not None:
            self.state.pm.pm_not_sampling("off" if why_not and why_not.startswith("turned off") else "refused", reason)
            return
        assert device is not None
        self.state.pm.pm_not_sampling("starting", "PM sampling is starting")
        watch = PmWatch(self.state.pm, device.uuid, interval_ms)
        watch.start()
        self.pm_watch = watch
        # The strip starts with the calls: a short run's calls would otherwise be over before CUPTI is ready
        # (about a second on an H100: the libraries, the profiler, the metric set, enabling the device).
        started = time.perf_counter()
        if watch.wait_settled(PM_START_WAIT_S) and watch.refused is None:
            self.state.log.add("info", f"pm sampling: on in {time.perf_counter() - started:.2f} s")

    def pause_pm(self, state: str, why: str) -> None:
        if self.pm_watch is not None:
            self.pm_watch.pause(state, why)

    def resume_pm(self) -> None:
        if self.pm_watch is not None:
            self.pm_watch.resume()

    def stop_pm(self) -> None:
        """End PM sampling (last decode, disable) and wait for its thread. Safe to call twice."""
        watch, self.pm_watch = self.pm_watch, None
        if watch is not None:
            watch.stop()

    def stop_clocks(self) -> None:
        """Stop reading the clocks, with one last reading: it counts for the calls since the one before (a run of
        a few fast calls has only that one). Safe to call twice."""
        watch, self.clock_watch = self.clock_watch, None
        if watch is None:
            return
        watch.stop()
        with contextlib.suppress(Exception):  # an NVML error at the end: the tally keeps what it had
            self.state.clocks.on_reading(watch.look())

    # -- the record -----------------------------------------------------------------------
    def report(
        self, state: str, exit_code: int, extra: Mapping[str, Any] | None = None, cut_short: str | None = None
    ) -> dict[str, Any]:
        """The report as it stands, in `state` with `exit_code` (the same JSON as report.json); `extra` and
        `cut_short` as core/store/report.py's `build_report` takes them (`extra` after `engine`)."""
        summary = self.state.summary(state=state, exit_code=exit_code)
        extra = {"engine": self.engine_info(), **(extra or {})}
        return build_report(self.snapshot, summary, extra=extra, cut_short=cut_short)

    def export_report(self, report: dict[str, Any]) -> Path:
        """`report` written beside the record (the TUI's `e`); the run goes on."""
        return self.writer.write_export(report, published=self.state.published)

    def close_record(
        self, report: dict[str, Any] | None, *, state: str, exit_code: int, drain_s: float | None = None
    ) -> dict[str, Any] | None:
        """Write report.json and the manifest's ending; returns what was written (None where nothing could be).

        With `drain_s` (a second signal's ending, the process about to leave) the samples get that long to
        drain, and the manifest carries no `error` (the newest snapshot says what there is).
        """
        snapshot = self.snapshot
        error = self.state.lifecycle.error
        check = self.state.outcome.value.check
        extra: dict[str, Any] = (
            {"error": str(error) if error is not None else None} if drain_s is None else {"drain_s": drain_s}
        )
        return self.writer.close(
            report,
            state=state,
            exit_code=exit_code,
            published=self.state.published,
            device=snapshot.device,
            devices=list(self.state.devices.devices),
            # The output check's verdict: `gputop sessions` lists a run whose check failed as `check failed`.
            check=None if check is None else ("passed" if check.passed else "failed"),
            **extra,  # `error`: a viewer says it when no sample could carry it
        )

    def log_traceback(self) -> Path | None:
        """The exception being handled, appended to the session's log (a gputop bug: keep it); the log.

        None when the log cannot be written (a full disk): the error being handled must still end the
        run as an error, not be replaced by this one on the way.
        """
        log = self.session_dir / "session.log"
        try:
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(traceback.format_exc())
        except OSError:
            return None
        return log

    @property
    def snapshot(self) -> RunSnapshot:
        return self.state.snapshot

    @property
    def record_error(self) -> str | None:
        """Why the session's record is incomplete (samples.jsonl, report.json or the manifest not written)."""
        return self.writer.record_error
