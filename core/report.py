"""The report of a run: one JSON document that `gputop run --json` writes.

Its top-level keys are gputop's contract with scripts and CI jobs:
`device`, `phases`, `calls`, `memory`, `kernels`, `exports`, `captures` and
`diagnostics`, plus what helps a person read it (target, function, versions,
outputs, the reference check and where the session's files are).
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

from gputop.core.records import CallStats, ProfileSummary, to_json
from gputop.core.session import Session, summarize


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


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


def build_report(session: Session) -> dict[str, Any]:
    snap = session.snapshot
    outcome = session.outcome
    compiled = outcome.compiled
    calls = _calls_json(snap.calls)
    memory_devices = []
    if snap.memory is not None:
        peaks = session.peak_live_bytes
        for dev in snap.memory.devices:
            row = to_json(dev)
            row["peak_live_bytes"] = peaks.get(dev.device_id, 0)
            memory_devices.append(row)
    return {
        "gputop_version": package_version("gputop"),
        "iree_version": {
            "compiler": package_version("iree-base-compiler"),
            "runtime": package_version("iree-base-runtime"),
        },
        "target": snap.target,
        "function": snap.function,
        "state": "interrupted" if session.interrupt_code is not None else snap.state,
        "error": snap.error,
        "exit_code": session.exit_code(),
        "device": to_json(snap.device),
        "phases": to_json(snap.phases),
        "calls": calls,
        "memory": {
            "devices": memory_devices,
            "host_rss_bytes": snap.memory.host_rss_bytes if snap.memory else None,
            "host_rss_peak_bytes": session.peak_rss_bytes or None,
            "host_total_bytes": snap.memory.host_total_bytes if snap.memory else None,
            "samples": session.memory_samples,
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
        "stages": to_json(outcome.stages),
        "diagnostics": to_json(snap.diagnostics),
        "compile": {
            "vmfb": str(compiled.vmfb_path) if compiled else None,
            "flags": list(compiled.flags) if compiled else None,
            "cache_hit": compiled.cache_hit if compiled else None,
            "cache_key": compiled.cache_key if compiled else None,
            "log": str(compiled.log_path) if compiled and compiled.log_path else None,
        },
        "parameters": {
            "files": [str(p) for p in session.parameter_files()],
            "mode": outcome.parameter_mode,
        },
        "inputs": to_json(summarize(outcome.inputs)),
        "outputs": to_json(summarize(outcome.outputs)),
        "check": to_json(outcome.check),
        "session_dir": str(session.session_dir),
    }
