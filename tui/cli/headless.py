"""The headless runner behind `gputop run` and `gputop serve`: a run driven to its end without a screen.

It exists apart from the commands because both drive a run the same way: echo the run's events
and progress on stderr, stop cleanly on a signal (or when the `gputop web` process that started
it is gone), and end with one line and the exit code of gputop's contract.
"""

from __future__ import annotations

import os
import sys
import time

from gputop.tui.bridge import (
    BUSY_STATES,
    OutputCheck,
    RunHost,
    RunSnapshot,
    Session,
    UsageError,
    discard_session_dir,
    mismatch_text,
    to_json,
    tune_interpreter_for_calls,
)

__all__ = ["PARAMETERS_EVERY_S", "PROGRESS_EVERY_S", "check_failure_lines", "discard_if_unused", "drive", "ending"]

PROGRESS_EVERY_S = 10.0  # a line while a long import, compile or load goes on
PARAMETERS_EVERY_S = 0.5  # a line of bytes loaded, GB/s and time left while parameters load


def drive(host: RunHost, *, progress: bool, first_profile: bool = False) -> int:
    """Run `host`'s session (and any reload its owner asks for) to its end or a signal, echoing its events.

    Returns the signal's exit code, or 0.
    """
    # imported here: only a run needs its signal handling, and the text (~5 ms) only formats the
    # progress lines; --help and `gputop devices` need not load either
    from gputop.tui.ending import SignalEnding, parent_pid
    from gputop.tui.text import parameters_progress

    seen = [0]
    profiled = [not first_profile]

    def on_snapshot(snapshot: RunSnapshot) -> None:
        for event in snapshot.events:
            if event.seq > seen[0]:
                seen[0] = event.seq
                if progress and event.level != "error":
                    print(f"gputop: {event.message}", file=sys.stderr, flush=True)
        if not profiled[0] and snapshot.state == "running":
            profiled[0] = True  # kernel metrics from the start, not only after the first period
            host.request_profile()

    host.subscribe(on_snapshot)
    tune_interpreter_for_calls()
    signals = SignalEnding(
        interrupt=lambda code: host.stop(exit_code=code),
        wait=host.wait,
        abandon=host.record_interrupted_now,
        face="gputop",
    )
    # A child of gputop web lives as long as its server: a server killed outright must not leave it running.
    parent = parent_pid()
    signals.install()
    try:
        host.start()
        next_note = 0.0
        next_parameters = 0.0
        while not host.wait(0.1):
            if parent is not None and os.getppid() != parent:
                gone = f"the process that started this run (pid {parent}) is gone; stopping"
                print(f"gputop: {gone}", file=sys.stderr, flush=True)
                host.stop()
                parent = None
            snapshot = host.session.snapshot
            load = snapshot.parameters
            if progress and load is not None and not load.done and load.observed:
                # The first line as soon as bytes move (a line at 0 B has no rate to give, and a load of under
                # a second would show nothing else), then one every PARAMETERS_EVERY_S.
                if load.loaded_bytes and time.monotonic() >= next_parameters:
                    print(f"gputop: parameters {parameters_progress(load)}", file=sys.stderr, flush=True)
                    next_parameters = time.monotonic() + PARAMETERS_EVERY_S
                continue
            if progress and snapshot.state in BUSY_STATES and snapshot.state_since:
                # Long imports and compiles say they are alive, every PROGRESS_EVERY_S seconds.
                elapsed = time.time() - snapshot.state_since
                if elapsed >= PROGRESS_EVERY_S and elapsed >= next_note:
                    print(f"gputop: still {snapshot.state} ({elapsed:.0f} s)", file=sys.stderr, flush=True)
                    next_note = elapsed + PROGRESS_EVERY_S
                elif elapsed < next_note - PROGRESS_EVERY_S:
                    next_note = 0.0  # a new busy state began
    finally:
        signals.uninstall()
    return signals.code or 0


def ending(session: Session, stop_code: int) -> int:
    """The last line and exit code of a headless run: interrupted, failed, check failed, or ok."""
    if stop_code:
        print("gputop: interrupted", file=sys.stderr)
        return stop_code
    if session.error is not None:
        discard_if_unused(session)  # `gputop serve`'s (gputop run has discarded it already)
        print(f"gputop: error: {session.error}", file=sys.stderr)
        return int(session.error.exit_code)
    check = session.outcome.check
    if check is not None and not check.passed:
        print("\n".join(check_failure_lines(check)), file=sys.stderr)
    elif session.record_error is not None:  # a disk that filled: the run ended, its record is incomplete
        print(
            f"gputop: error: the session's record is incomplete: {session.record_error} "
            f"(free space or set GPUTOP_STATE_DIR to a writable folder)",
            file=sys.stderr,
        )
    return int(session.exit_code())


def check_failure_lines(check: OutputCheck) -> list[str]:
    """A failed check on stderr: one error line, then its first few wrong elements, one line each."""
    firsts = check.first_mismatches or ((check.first_mismatch,) if check.first_mismatch is not None else ())
    lines = [
        f"gputop: error: outputs do not match the reference ({check.reference}): "
        f"{check.mismatches} elements differ, max abs err {check.max_abs_err:.3g}"
    ]
    lines += [f"gputop:   {mismatch_text(to_json(mismatch))}" for mismatch in firsts]
    if check.mismatches > len(firsts):
        lines.append(f"gputop:   ... and {check.mismatches - len(firsts)} more")
    return lines


def discard_if_unused(session: Session) -> bool:
    """A run that a usage error ended before its first call leaves no session behind; whether it was discarded.

    Only a folder this process made for segment 0 goes (never a --session-dir, nor a reloaded run's earlier
    segments), and only once the run is over and its record closed.
    """
    snapshot = session.snapshot
    if not session.done or not isinstance(session.error, UsageError) or snapshot.calls.count or snapshot.segment:
        return False
    return discard_session_dir(session.session_dir)
