"""A `Session` owns one run: it picks a flow, drives its one call loop, tears down, and says how it ended.

The session runs its work on a background thread and tells subscribers what
is happening by handing them immutable `RunSnapshot`s. The command line waits
for it to finish; the TUI subscribes and keeps drawing while it runs. Pause,
resume, stop, profile, capture and counters requests are honoured between
calls by the same loop whichever flow (in-process IREE, OpenCL, IREE's
shipped tools) makes the calls (a counters pass is only started there: it
runs in another process while the calls go on), and every failure ends as a snapshot in state `error`
carrying a one-line message and gputop's exit code, never as an exception on
the thread. At the end the session folder gets the report and the manifest's
ending, written by the store. While it runs, viewers in other processes reach
it through `control.sock` in its session folder (`remote` says what they may
ask); a second signal writes the ending at once (`record_interrupted_now`).
"""

from __future__ import annotations

import contextlib
import hashlib
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gputop.core.errors import (
    EXIT_CHECK,
    EXIT_RUNTIME,
    GputopError,
    Interrupted,
    RuntimeFailure,
    UnwritableFile,
    unwritable_file,
)
from gputop.core.files import file_sha256
from gputop.core.profiling.overhead import PROFILE_LEVELS
from gputop.core.records.base import to_json
from gputop.core.records.counters import CountersPass
from gputop.core.records.neighbours import Neighbours
from gputop.core.run.capture import RenderDocHook
from gputop.core.run.config import RunConfig
from gputop.core.run.flow import Flow, RunContext
from gputop.core.run.iree import IreeFlow
from gputop.core.run.opencl import OpenCLFlow
from gputop.core.run.parts import RunParts
from gputop.core.run.prepare import prepare_module
from gputop.core.run.requests import Controls, why_no_capture, why_no_counters, why_no_profile
from gputop.core.run.state import RunOutcome, Subscriber
from gputop.core.run.tool import ToolFlow
from gputop.core.run.viewer_ops import OwnerOps
from gputop.core.snapshot import RunSnapshot
from gputop.core.store.report import CUT_SHORT

__all__ = ["RunConfig", "Session"]

PM_HELD_BY_COUNTERS = "a counters pass (ncu) holds the GPU's counters: the strip goes on when it ends"
PM_TURNED_OFF = "turned off (g turns it on again)"
PM_OFF_BY_FLAG = "turned off (--no-pm-sampling; g turns it on)"
PM_PAUSE_WAIT_S = 3.0  # how long a counters pass waits for PM sampling to let go of the counters


class Session:
    """One run on one or more devices, driven by a background thread."""

    def __init__(
        self,
        config: RunConfig,
        *,
        segment: int = 0,
        owner_pid: int | None = None,
        owner_ops: OwnerOps | None = None,
    ) -> None:
        """`segment` > 0 continues `config.session_dir` as that run segment (a reload in the TUI).

        `owner_pid` names the process that started this engine (a TUI): its
        requests on the control channel may also use `owner_ops` (stop, reload,
        device switch), which a `RunHost` provides.
        """
        self.config = config
        self.segment = segment
        self._parts = RunParts(
            to_json(config),
            target=config.target,
            label=config.target_info.label,
            session_dir=config.session_dir,
            record_every_s=config.record_every_s,
            function=config.function,
            segment=segment,
            owner_pid=owner_pid,
        )
        self.session_dir = self._parts.session_dir
        self._writer = self._parts.writer
        self._state = self._parts.state
        self._owner_ops = owner_ops
        self._controls = Controls()
        self._context = RunContext(config, self._state, self._controls, self.session_dir)
        self._flow: Flow | None = None
        self._thread: threading.Thread | None = None
        self._done = threading.Event()
        self.report: dict[str, Any] | None = None  # report.json's content, once the run has ended
        self._pm_held = False  # a counters pass holds the GPU's counters: PM sampling waits for its end
        self._digest: str | None = None  # the target's SHA-256 ("" when it has none), see _target_digest

    # -- control (any thread) -------------------------------------------------------
    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call `callback` with every new snapshot; returns an unsubscribe function."""
        return self._state.subscribe(callback)

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("a session runs once")
        self._open_control()
        self._thread = threading.Thread(target=self._run, name="gputop-session", daemon=True)
        self._thread.start()

    def pause(self) -> None:
        if self._state.lifecycle.state == "running":
            self._controls.pause()
            self._state.lifecycle.enter("paused")

    def resume(self) -> None:
        if self._state.lifecycle.state == "paused":
            self._controls.resume()
            self._state.lifecycle.enter("running")

    def stop(self, exit_code: int | None = None) -> None:
        """Ask the run to end after the call in flight; teardown still runs.

        `exit_code` (130 or 143) says a signal ended it: the record then says
        `interrupted` with that code instead of `stopped`.
        """
        self._controls.stop(exit_code)

    def request_profile(self, level: str = "default") -> str | None:
        """Take a profile pass at `level` between calls, as soon as the call in flight is done; returns why not,
        or None."""
        if level not in PROFILE_LEVELS:
            return f"no profile level {level!r}: one of {', '.join(PROFILE_LEVELS)}"
        reason = why_no_profile(self.snapshot, self._flow_kind())
        if reason is None:
            self._controls.ask_profile(level)
        return reason

    def request_counters(self) -> str | None:
        """Measure one call's hardware counters with Nsight Compute, beside the run; returns why not, or None."""
        reason = self._why_no_counters()
        if reason is None:
            self._controls.ask_counters()
        return reason

    def _why_no_counters(self) -> str | None:
        flow = self._flow
        return why_no_counters(self.snapshot, self._flow_kind(), flow.counters_refusal() if flow is not None else None)

    def request_pm_sampling(self, on: bool) -> str | None:
        """Turn the PM sampling strip on or off (the TUI's `g`); returns why not, or None."""
        watch = self._parts.pm_watch
        state, reason = self._state.pm.status()
        if watch is not None and watch.refused is not None:
            return watch.refused.line
        if self._pm_held:
            return PM_HELD_BY_COUNTERS
        if watch is not None and watch.alive:
            if on:
                watch.resume()
            else:
                watch.pause("off", PM_TURNED_OFF)
            return None
        if not on:
            return None
        if state == "refused":
            return reason
        flow = self._flow
        if flow is None or self._state.lifecycle.state not in ("running", "paused"):
            return f"PM sampling starts with the calls: nothing to sample while {self._state.lifecycle.state}"
        devices = self._state.devices.devices
        why = self._pm_why_not(flow, asked=True)
        self._parts.start_pm(devices[0] if devices else None, why, self.config.pm_interval_ms)
        if why is not None:
            return why
        state, reason = self._state.pm.status()
        return reason if state == "refused" else None

    def _pm_why_not(self, flow: Flow, asked: bool = False) -> str | None:
        """Why this run's calls cannot be PM sampled before the device is asked (`asked`: the user's key)."""
        if not self.config.pm_sampling and not asked:
            return PM_OFF_BY_FLAG
        if flow.kind == "tool":
            return (
                "a multi-device module's calls run in IREE's tools, a process of their own, and PM sampling sees "
                "only the work of the process that samples: a one-device run of the module is sampled"
            )
        return None

    def request_capture(self, calls: int = 1) -> str | None:
        """Capture the next `calls` calls with RenderDoc; returns why not, or None."""
        reason = why_no_capture(self.snapshot, self._capture_ready())
        if reason is None:
            self._controls.ask_capture(calls)
        return reason

    def keep_samples(self, seconds: float) -> None:
        """A viewer follows the record live: keep it dense (thinned runs too) for `seconds`."""
        self._writer.watch(seconds)

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def record_interrupted_now(self, exit_code: int) -> None:
        """A second signal: write the ending (`interrupted`, the report from the newest snapshot) now.

        The run's thread may be stuck in a call or a teardown that will not come
        back soon; the process leaves right after this, so the record must not
        wait for it. The report says it was cut short.
        """
        self._controls.stop(exit_code)
        self._parts.close_control()
        report: dict[str, Any] | None = None
        try:
            report = self.current_report(cut_short=CUT_SHORT)
        except Exception:  # a report that cannot be built must not keep the manifest from its ending
            self._log_traceback()
        self._parts.close_record(report, state="interrupted", exit_code=exit_code, drain_s=1.0)

    def current_report(self, cut_short: str | None = None) -> dict[str, Any]:
        """The report as it stands now (the same JSON as report.json, which is written at the end); `cut_short`:
        why it is written from the newest snapshot (a second signal)."""
        state = "interrupted" if self._controls.interrupt_code is not None else self._state.lifecycle.state
        # The samples are what gputop compare tests (core/compare/samples.py).
        extra = {"target_sha256": self._target_digest(), "samples": self._state.calls.samples()}
        return self._parts.report(state, self.exit_code(), extra, cut_short)

    def _target_digest(self) -> str | None:
        """SHA-256 of the target file as this run found it (a demo: of its source), hashed once; compare shows it."""
        if self._digest is None:
            info = self.config.target_info
            self._digest = ""
            with contextlib.suppress(OSError):
                if info.path is not None and stat.S_ISREG(info.path.stat().st_mode):  # never a FIFO: it would block
                    self._digest = file_sha256(info.path)
                elif info.demo is not None:
                    self._digest = hashlib.sha256(info.demo.source()).hexdigest()
        return self._digest or None

    def engine_info(self) -> dict[str, Any]:
        """Where this run's engine ran: its pid, the process that owns it (a TUI), how many viewers subscribed."""
        return self._parts.engine_info()

    def export_report(self) -> Path:
        """The report as it stands (the TUI's `e`), written beside the record; the run goes on."""
        return self._parts.export_report(self.current_report())

    @property
    def snapshot(self) -> RunSnapshot:
        return self._state.snapshot

    @property
    def outcome(self) -> RunOutcome:
        return self._state.outcome.value

    @property
    def interrupt_code(self) -> int | None:
        return self._controls.interrupt_code

    @property
    def error(self) -> GputopError | None:
        return self._state.lifecycle.error

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def exit_code(self) -> int:
        """The code this run ends with: signal, error, failed check, or 0."""
        if self._controls.interrupt_code is not None:
            return self._controls.interrupt_code
        error = self._state.lifecycle.error
        if error is not None:
            return error.exit_code
        check = self._state.outcome.value.check
        if check is not None and not check.passed:
            return EXIT_CHECK
        if self._writer.record_error is not None:  # a full disk: the run went on, its record did not
            return EXIT_RUNTIME
        return 0

    @property
    def record_error(self) -> str | None:
        """Why the session's record is incomplete (samples.jsonl, report.json or the manifest not written)."""
        return self._writer.record_error

    def _flow_kind(self) -> str | None:
        flow = self._flow
        return flow.kind if flow is not None else None

    def _capture_ready(self) -> bool:
        flow = self._flow
        return flow is not None and flow.capture_ready()

    def _open_control(self) -> None:
        """The control channel for viewers in other processes; a run goes on without one if it cannot open."""
        self._parts.open_control(self, self._owner_ops)

    # -- the run (its own thread) ------------------------------------------------------
    def _run(self) -> None:
        ctx = self._context
        renderdoc: RenderDocHook | None = None
        try:
            target = self.config.target_info
            if target.is_opencl:
                flow: Flow = OpenCLFlow(ctx)
            else:
                self._state.lifecycle.enter("compiling")
                renderdoc = RenderDocHook(ctx)
                renderdoc.prepare()  # before any device is opened: RenderDoc must precede Vulkan
                module = prepare_module(ctx)
                flow = ToolFlow(ctx, module) if module.needs_tools else IreeFlow(ctx, module, renderdoc)
            self._flow = flow
            flow.open()
            self._state.lifecycle.enter("running")
            devices = self._state.devices.devices
            watch = self._parts.start_watch(devices[0] if devices else None)
            self._parts.start_clocks(devices[0] if devices else None, self.config.sample_interval_s)
            self._parts.start_pm(devices[0] if devices else None, self._pm_why_not(flow), self.config.pm_interval_ms)
            if self.config.capture_calls:
                self._ask_capture_once(self.config.capture_calls)
            calls_window = watch.open_window()
            self._call_loop(flow)
            self._say_call_neighbours(watch.close_window(calls_window))
            self._say_call_clocks()
            if self.config.profile and not self._controls.stopping:
                self._profile_once(flow, self.config.profile_pass_calls or max(self.config.iterations or 1, 1))
            if self.config.counters and not self._controls.stopping:
                self._count_once(flow)
            self._state.lifecycle.enter("stopped" if self._controls.stopping else "finished")
        except GputopError as exc:
            self._fail(exc)
        except OSError as exc:  # a disk that filled under a file of the run's (a profile pass's, a trace)
            self._fail(unwritable_file(exc, self.session_dir) or self._internal_error(exc))
        except Exception as exc:  # anything else is a gputop bug: keep the traceback
            self._fail(self._internal_error(exc))
        finally:
            try:
                self._teardown(renderdoc)
            finally:  # whatever teardown met, the run is over: waiters (the command line, a host) must see it
                self._done.set()

    def _teardown(self, renderdoc: RenderDocHook | None) -> None:
        """Close the capture hook, the flow and the channel, then write the ending; a failure is logged, not raised."""
        self._parts.stop_watch()
        self._parts.stop_pm()
        self._parts.stop_clocks()
        if renderdoc is not None:
            try:
                renderdoc.close()
            except Exception:  # the record must still be written: keep the traceback
                self._log_traceback()
        if self._flow is not None:
            self._close_flow(self._flow)
        self._parts.close_control()
        self._state.publish(force=True)
        self._finish_record()

    def _internal_error(self, exc: Exception) -> RuntimeFailure:
        """A gputop bug as the run's one-line error, its traceback in session.log where that can be written."""
        log = self._log_traceback()
        if log is None:
            return RuntimeFailure(f"internal error: {exc} (no traceback could be written)")
        return RuntimeFailure(f"internal error: {exc}", log_path=str(log))

    def _call_loop(self, flow: Flow) -> None:
        """Calls until the count is reached or a stop; profile passes and captures between calls."""
        remaining = self.config.iterations
        every = self.config.profile_every_s
        next_profile = time.monotonic() + every if every else None
        controls = self._controls
        while remaining is None or remaining > 0:
            if controls.stopping:
                return
            capture_calls = controls.take_capture_request()
            if capture_calls:
                made = flow.capture(capture_calls)
                if remaining is not None:
                    remaining = max(0, remaining - made)
                continue
            if controls.take_counters_request():
                self._start_counters(flow)
                continue
            periodic = next_profile is not None and time.monotonic() >= next_profile
            asked = controls.take_profile_request()
            if asked or periodic:
                if periodic:
                    reason = why_no_profile(self.snapshot, flow.kind)
                    if reason is not None:  # say it once, and stop trying
                        self._state.log.add("warning", f"profile: {reason}")
                        every = next_profile = None
                        continue
                self._profile_pass(flow, self.config.profile_calls, asked or self.config.profile_level)
                if every:
                    next_profile = time.monotonic() + every
                continue
            if controls.paused:
                controls.wait_while_paused(0.1)  # wake for resume, stop or a request
                continue
            made = flow.calls(remaining if remaining is not None else 1)
            if remaining is not None:
                remaining -= made
            if self._pm_held and not self._state.snapshot.counting:
                self._pm_held = False
                self._parts.resume_pm()
            self._state.publish()

    def _profile_once(self, flow: Flow, calls: int) -> None:
        """`gputop run --profile`: one pass after the steady calls, refused for the same reasons as `p`."""
        reason = why_no_profile(self.snapshot, flow.kind)
        if reason is not None:
            self._state.log.add("warning", f"profile: {reason}")
            return
        self._profile_pass(flow, calls, self.config.profile_level)

    def _start_counters(self, flow: Flow) -> bool:
        """Start a counters pass beside the calls (refused for the same reasons as `n`); whether it started."""
        reason = self._why_no_counters()  # asked for a moment ago: the run may have changed since
        if reason is not None:
            self._state.log.add("warning", f"counters: {reason}")
            return False
        # ncu replays the call in a process of its own and needs the GPU's counters: PM sampling lets go first.
        watch = self._parts.pm_watch
        if watch is not None and watch.alive:
            watch.pause("paused", PM_HELD_BY_COUNTERS, wait_s=PM_PAUSE_WAIT_S)
            self._pm_held = True
        try:
            flow.count()
        except (Interrupted, UnwritableFile):
            raise
        except GputopError as exc:
            self._state.log.add("warning", f"counters: {exc}", exc.log_path)
            return False
        return True

    def _count_once(self, flow: Flow) -> None:
        """`gputop run --counters`: one pass after the steady calls (and any profile pass), waited for.

        Refused, the reason is the report's `counters_pass.error` too: a script reads why there are none.
        """
        reason = self._why_no_counters()
        if reason is not None:
            self._state.log.add("warning", f"counters: {reason}")
            self._state.profile.set_counters(CountersPass(source="ncu", command="", wall_s=0.0, calls=0, error=reason))
            return
        if self._start_counters(flow):
            flow.wait_counters()

    def _say_call_neighbours(self, neighbours: Neighbours) -> None:
        self._state.neighbours.set_over_calls(neighbours)
        if neighbours.warning:
            self._state.log.add("warning", f"calls: {neighbours.warning}")

    def _say_call_clocks(self) -> None:
        """The calls are over: the clock watch's last reading, and its warning in the log; PM sampling ends."""
        self._parts.stop_pm()
        self._parts.stop_clocks()
        clocks = self._state.clocks.summary()
        if clocks is not None and clocks.warning and not self._state.clocks.warned:
            self._state.log.add("warning", f"clocks: {clocks.warning}")

    def _profile_pass(self, flow: Flow, calls: int, level: str) -> None:
        """One pass, with who else used the GPU and the host meanwhile on its summary (and a warning if anyone)."""
        watch = self._parts.watch
        window = watch.open_window() if watch is not None else None
        before = self._state.profile.profile
        try:
            flow.profile(calls, level)
        finally:
            neighbours = watch.close_window(window) if watch is not None and window is not None else None
        after = self._state.profile.profile
        if neighbours is None or after is None or after is before:
            return  # the pass failed or was refused: it has no summary to carry them
        self._state.profile.set_pass_neighbours(after, neighbours)
        if neighbours.warning:
            self._state.log.add("warning", f"profile: {neighbours.warning}")

    def _ask_capture_once(self, calls: int) -> None:
        """`gputop run --capture N`: refused for the same reasons as the TUI's `c`."""
        reason = self.request_capture(calls)
        if reason is not None:
            self._state.log.add("warning", f"capture: {reason}")

    def _log_traceback(self) -> Path | None:
        """The exception being handled, appended to session.log; None when the log cannot be written."""
        return self._parts.log_traceback()

    def _close_flow(self, flow: Flow) -> None:
        try:
            flow.close()
        except Exception:  # teardown must not lose the record: keep the traceback
            self._log_traceback()

    def _fail(self, exc: GputopError) -> None:
        if isinstance(exc, Interrupted) and self._controls.stopping:
            self._state.lifecycle.enter("stopped")
            return
        self._state.lifecycle.fail(exc)

    def _finish_record(self) -> None:
        """Write report.json and the manifest's ending; never lets the run's end fail."""
        state = "interrupted" if self._controls.interrupt_code is not None else self._state.lifecycle.state
        report: dict[str, Any] | None = None
        try:
            report = self.current_report()
        except Exception:  # a bug in the report must not lose the samples: keep the traceback
            self._log_traceback()
        self.report = self._parts.close_record(report, state=state, exit_code=self.exit_code())
