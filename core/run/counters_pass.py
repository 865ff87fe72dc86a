"""A run's counters passes: one call of its module under Nsight Compute, beside the run, never in it.

The profile pass times the live module's own calls; hardware counters cannot
be had that way, because ncu replays each kernel many times over and owns the
process it profiles. So a counters pass hands the run's `.vmfb`, function and
inputs (the same `.npy` files the profile pass gives IREE's benchmark tool) to
`iree-run-module` under `ncu` (`core/profiling/ncu/ncu_command.py`), in a process of its
own, on a thread of its own: the run's call loop only starts it and goes on
calling. Its result is a `CountersPass` in the run's state, joined to the
Kernels table by kernel name; a run with no profile yet gets the counters'
own table (rated as a pass would rate it). A failure is one line in the log
and on the pass, and a failure every later pass would meet too (counters
reserved for admin users) is kept as the run's reason to refuse the next.
"""

from __future__ import annotations

import shlex
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from gputop.core.errors import GputopError, Interrupted, ProfileError
from gputop.core.processes import child_options, run_logged
from gputop.core.profiling.dispatches import pass_stem
from gputop.core.profiling.ncu.kernel_counters import read_counters, summary_from_counters
from gputop.core.profiling.ncu.ncu_command import (
    PERMISSION,
    counters_command,
    find_ncu,
    import_command,
    ncu_failure,
    ncu_version,
    one_call_command,
)
from gputop.core.records.counters import CountersPass, KernelCounters
from gputop.core.records.devices import DeviceInfo
from gputop.core.records.profile import ProfileSummary
from gputop.core.run.flow import RunContext
from gputop.core.units import seconds

__all__ = ["CALLS", "CountersRunner"]

CALLS = 1  # calls of the module one pass profiles: ncu replays each kernel of it as often as its counters need
IMPORT_TIMEOUT_S = 300.0
# ncu replays every kernel of the call as often as its counters need: a large model takes minutes, but a pass
# that never ends (ncu waiting on another profiler's lock) would refuse every later one as "already running".
PASS_TIMEOUT_S = 1800.0
PAGES = ("raw", "details")


class CountersRunner:
    """Takes counters passes of one IREE module on one CUDA device, one at a time, each on its own thread."""

    def __init__(
        self, ctx: RunContext, device: DeviceInfo, vmfb: Path, rate: Callable[[ProfileSummary], ProfileSummary]
    ) -> None:
        """`rate` rates a kernel table against the module's work and the device's peaks (a profile pass's)."""
        self._ctx = ctx
        self._device = device
        self._vmfb = vmfb
        self._rate = rate
        self._thread: threading.Thread | None = None
        self.refusal: str | None = None  # what every later pass would meet too

    def start(self, function: str, input_args: list[str], parameters: list[Path] | None = None) -> None:
        """Begin a pass (the caller checked `why_no_counters`); returns at once."""
        self._ctx.state.profile.set_counting(True)
        self._thread = threading.Thread(
            target=self._run, args=(function, input_args, parameters or []), name="gputop-counters", daemon=True
        )
        self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the pass under way, if any; True once none is."""
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def _run(self, function: str, input_args: list[str], parameters: list[Path]) -> None:
        state = self._ctx.state
        calls_before = state.calls.count
        try:
            result = self._measure(function, input_args, parameters)
        except Interrupted:
            state.log.add("info", "counters: stopped with the run")
            state.profile.set_counting(False)
            return
        except (GputopError, OSError) as exc:
            log = exc.log_path if isinstance(exc, GputopError) else None
            result = CountersPass(source="ncu", command="", wall_s=0.0, calls=0, log_path=log, error=str(exc))
        except Exception as exc:  # a gputop bug on this thread: said, never a thread that dies in silence
            result = CountersPass(source="ncu", command="", wall_s=0.0, calls=0, error=f"internal error: {exc}")
        try:
            result = replace(result, live_calls=state.calls.count - calls_before)
            table = summary_from_counters(result.kernels, self._device.id) if result.kernels else None
            state.profile.set_counters(result, self._rate(table) if table is not None else None)
            self._say(result)
        finally:  # the result is in the state before the pass reads as over: a face waiting on it sees both at once
            state.profile.set_counting(False)

    def _measure(self, function: str, input_args: list[str], parameters: list[Path]) -> CountersPass:
        """One call under ncu, then its report's raw and details pages read back.

        What ncu says went wrong (`ncu_failure`) is the pass's error only where its report holds no
        kernel: a kernel it could not profile, or a complaint on its way out, does not lose the others
        (it is said in the log).

        Raises:
            ProfileError: ncu is not there (it went since the request), or its report cannot be read.
            Interrupted: the run stopped meanwhile (ncu and its child are ended).
        """
        ctx = self._ctx
        ncu, missing = find_ncu()
        if ncu is None:
            raise ProfileError(missing or "ncu not found")
        version = ncu_version(ncu)
        source = f"ncu {version}" if version else "ncu"
        folder = ctx.session_dir
        stem = pass_stem(folder, "counters")
        call = one_call_command(self._vmfb, self._device, function, input_args, parameters)
        command = counters_command(ncu, call, folder / stem)
        log = folder / f"{stem}.log"
        ctx.state.log.add("info", f"counters: one call under {source} on {self._device.id}...")
        started = time.monotonic()
        output, code = run_logged(command, log, ctx.controls.stop_event, timeout_s=PASS_TIMEOUT_S, what="ncu")
        problem = ncu_failure(output, code)
        report = folder / f"{stem}.ncu-rep"
        kernels: tuple[KernelCounters, ...] = ()
        if report.is_file() and problem != PERMISSION:
            try:
                raw, details = (_import_page(ncu, report, page, folder / f"{stem}-{page}.csv") for page in PAGES)
                kernels = read_counters(raw, details, source)
            except ProfileError:
                if problem is None:
                    raise
        wall = time.monotonic() - started
        if problem == PERMISSION:
            self.refusal = problem
        if kernels and problem:
            ctx.state.log.add("warning", f"counters: {problem} (the kernels it measured are kept)", str(log))
        return CountersPass(
            source=source,
            command=shlex.join(command),
            wall_s=wall,
            calls=CALLS,
            kernels=kernels,
            report_path=str(report) if report.is_file() else None,
            log_path=str(log),
            error=None if kernels else problem or f"ncu's report {report.name} holds no kernel counters",
        )

    def _say(self, result: CountersPass) -> None:
        state = self._ctx.state
        if result.error:
            state.log.add("warning", f"counters: {result.error}", result.log_path)
            return
        measured = sum(k.flops is not None for k in result.kernels)
        state.log.add(
            "info",
            f"counters: {result.source} measured {len(result.kernels)} kernels ({measured} with FLOPs) of "
            f"{result.calls} call in {seconds(result.wall_s)}; the run made {result.live_calls} calls meanwhile; "
            f"report {result.report_path}",
        )


def _import_page(ncu: str, report: Path, page: str, path: Path) -> str:
    """One page of the report as CSV, kept beside it; its text.

    Raises:
        ProfileError: ncu could not read its own report.
    """
    try:
        proc = subprocess.run(
            import_command(ncu, report, page),
            capture_output=True,
            text=True,
            timeout=IMPORT_TIMEOUT_S,
            **child_options(),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ProfileError(f"ncu --import {report.name} --page {page}: {exc}") from None
    failure = ncu_failure(proc.stdout + proc.stderr, proc.returncode)
    if failure is not None:
        raise ProfileError(f"reading {report.name} ({page} page): {failure}")
    path.write_text(proc.stdout, encoding="utf-8")
    return proc.stdout
