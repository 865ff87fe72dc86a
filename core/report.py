"""The report of a run: one JSON document that `gputop run --json` writes.

Its top-level keys are gputop's contract with scripts and CI jobs:
`device`, `phases`, `calls`, `memory`, `kernels`, `exports`, `captures` and
`diagnostics`, plus what helps a person read it (target, function, versions,
outputs, the reference check and where the session's files are).
"""

from __future__ import annotations

from typing import Any

from gputop.core.record import package_version
from gputop.core.records import CallStats, ProfileSummary, RunSnapshot, to_json
from gputop.core.session import Session, summarize


def _profile_json(profile: ProfileSummary | None, steady_p50_ms: float | None) -> dict[str, Any] | None:
    if profile is None:
        return None
    data = to_json(profile)
    data.pop("kernels", None)
    # Profiling overhead: a profiled call's synced time against the steady p50 of this run.
    if profile.call_wall_ms and steady_p50_ms:
        data["overhead_ratio"] = profile.call_wall_ms / steady_p50_ms
    return data


def _calls_json(stats: CallStats) -> dict[str, Any]:
    data = to_json(stats)
    data.pop("recent_ms", None)
    return data


def snapshot_report(snap: RunSnapshot, peak_live: dict[str, int] | None = None) -> dict[str, Any]:
    """The report as far as one snapshot tells it, in the report's key order.

    What only a live session knows (versions, state and exit code, compile,
    parameters, inputs, outputs, check) is left empty for the caller to fill:
    `build_report` from the session, `gputop report` from a cut-off session's
    manifest. Without `peak_live`, a device's peak is its pools' peak.
    """
    memory_devices = []
    for dev in snap.memory.devices if snap.memory else ():
        row = to_json(dev)
        row["peak_live_bytes"] = (
            peak_live.get(dev.device_id, 0)
            if peak_live is not None
            else max((p.peak_bytes for p in dev.pools), default=0)
        )
        memory_devices.append(row)
    return {
        "gputop_version": None,
        "iree_version": None,
        "target": snap.target,
        "function": snap.function,
        "state": snap.state,
        "error": snap.error,
        "exit_code": None,
        "device": to_json(snap.device),
        "phases": to_json(snap.phases),
        "calls": _calls_json(snap.calls),
        "memory": {
            "devices": memory_devices,
            "host_rss_bytes": snap.memory.host_rss_bytes if snap.memory else None,
            "host_rss_peak_bytes": None,
            "host_total_bytes": snap.memory.host_total_bytes if snap.memory else None,
            "samples": None,
        },
        "kernels": to_json(snap.profile.kernels) if snap.profile else [],
        "call_wall_ms": snap.profile.call_wall_ms if snap.profile else None,
        "call_kernel_ms": snap.profile.call_kernel_ms if snap.profile else None,
        "call_gap_ms": snap.profile.gap_ms if snap.profile else None,
        "profile": _profile_json(snap.profile, snap.calls.p50_ms),
        "exports": to_json(snap.exports),
        "transfers": to_json(snap.transfers),
        "device_names": dict(snap.device_names),
        "captures": to_json(snap.captures),
        "renderdoc": snap.renderdoc,
        "enqueue": _calls_json(snap.enqueue) if snap.enqueue else None,
        "stages": None,
        "diagnostics": to_json(snap.diagnostics),
        "compile": {"vmfb": None, "flags": None, "cache_hit": None, "cache_key": None, "log": None},
        "parameters": {"files": [], "mode": None},
        "inputs": [],
        "outputs": [],
        "check": None,
        "session_dir": snap.session_dir,
    }


def build_report(session: Session) -> dict[str, Any]:
    snap = session.snapshot
    outcome = session.outcome
    compiled = outcome.compiled
    report = snapshot_report(snap, session.peak_live_bytes)
    report["memory"].update(host_rss_peak_bytes=session.peak_rss_bytes or None, samples=session.memory_samples)
    report.update(
        gputop_version=package_version("gputop"),
        iree_version={
            "compiler": package_version("iree-base-compiler"),
            "runtime": package_version("iree-base-runtime"),
        },
        state="interrupted" if session.interrupt_code is not None else snap.state,
        exit_code=session.exit_code(),
        stages=to_json(outcome.stages),
        parameters={"files": [str(p) for p in session.parameter_files()], "mode": outcome.parameter_mode},
        inputs=to_json(summarize(outcome.inputs)),
        outputs=to_json(summarize(outcome.outputs)),
        check=to_json(outcome.check),
        session_dir=str(session.session_dir),
    )
    if compiled is not None:
        report["compile"] = {
            "vmfb": str(compiled.vmfb_path),
            "flags": list(compiled.flags),
            "cache_hit": compiled.cache_hit,
            "cache_key": compiled.cache_key,
            "log": str(compiled.log_path) if compiled.log_path else None,
        }
    return report
