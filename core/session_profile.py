"""A session's profile pass: kernel times between calls, merged over passes.

CUDA kernels are recorded in-process with CUPTI around real calls; other IREE
backends are profiled by IREE's shipped benchmark tool on the same module and
inputs. Either way the pass runs on the session's thread, between calls.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gputop.core.cupti_profile import record_kernels
from gputop.core.errors import GputopError, Interrupted
from gputop.core.opencl_runner import OpenCLRun
from gputop.core.profiles import ProfileError, profile_with_ireeprof, summarize_events, write_trace

if TYPE_CHECKING:
    from gputop.core.session import Session


KEEP_PASSES = 5  # periodic profiling (the TUI's --profile-every, gputop serve) keeps the newest passes' files


def _keep_newest_passes(folder: Path) -> None:
    """Delete the files of all but the newest KEEP_PASSES profile passes: a server profiles for days."""
    passes = sorted({p.name.split(".")[0].removesuffix("-calls") for p in folder.glob("profile-*")})
    for stamp in passes[:-KEEP_PASSES]:
        for path in folder.glob(f"{stamp}[.-]*"):
            path.unlink(missing_ok=True)


def take_profile(session: Session, runner: Any, calls: int) -> None:
    """One profile pass between calls; merged with earlier passes of this session."""
    device = session._devices[0]
    if isinstance(runner, OpenCLRun):
        session._event("info", "profile: OpenCL kernels are timed by device events on every call already")
        return
    with session._lock:
        session._profiling = True
    session._event("info", f"profiling {calls} calls on {device.id}...")
    try:
        if device.backend == "cuda":
            events, walls = record_kernels(lambda: runner.timed_calls(calls))
            trace = write_trace(
                events, device.id, session.session_dir / f"profile-{time.strftime('%H%M%S')}.trace.json"
            )
            latest = summarize_events(
                events, calls=calls, source="cupti", device_id=device.id,
                call_wall_ms=statistics.fmean(walls) * 1e3, trace_path=str(trace),
            )  # fmt: skip
        else:
            if session._vmfb is None:
                raise ProfileError("no compiled module to profile")
            latest, events = profile_with_ireeprof(
                session._vmfb, session._devices, session._function or runner.default_function(),
                session._save_inputs(), calls, session.session_dir, cancel=session._stop,
            )  # fmt: skip
        with session._lock:
            session._profile_events.extend(events)
            session._profile_calls += calls
            merged = latest
            if session._profile_calls > calls:
                merged = summarize_events(
                    list(session._profile_events), calls=session._profile_calls, source=latest.source,
                    device_id=device.id, call_wall_ms=latest.call_wall_ms, pools=list(latest.pools),
                    profile_path=latest.profile_path, trace_path=latest.trace_path,
                )  # fmt: skip
            session._profile = merged
        if session.config.profile_every_s:
            _keep_newest_passes(session.session_dir)
        gap = f", gap {latest.gap_ms:.3f} ms" if latest.gap_ms is not None else ""
        wall = f" of {latest.call_wall_ms:.3f} ms synced" if latest.call_wall_ms is not None else ""
        session._event(
            "info",
            f"profile: {len(latest.kernels)} kernels, {latest.call_kernel_ms:.3f} ms kernel time per call"
            f"{wall}{gap}; trace {latest.trace_path}",
        )
    except Interrupted:
        raise
    except GputopError as exc:
        session._event("warning", f"profile failed: {exc}", exc.log_path)
    finally:
        with session._lock:
            session._profiling = False
        session._publish(force=True)
