"""The report of a run: one JSON document that `gputop run --json` writes.

Its top-level keys are gputop's contract with scripts and CI jobs:
`device`, `phases`, `calls`, `memory`, `kernels`, `exports`, `captures` and
`diagnostics`, plus what helps a person read it (target, function, versions,
outputs, the reference check and where the session's files are). It is built
from values only, a snapshot and the run's closing `RunSummary`, so a live
run, a finished one and one rebuilt from its samples share one builder.
"""

from __future__ import annotations

from typing import Any

from gputop.core.snapshot import (
    CallStats,
    CountersPass,
    PmSampling,
    ProfileSummary,
    RunSnapshot,
    RunSummary,
    to_json,
)
from gputop.core.versions import package_version
from gputop.core.wording import weight_bytes

__all__ = ["build_report", "pm_sampling_json", "snapshot_report"]


def _profile_json(profile: ProfileSummary | None, steady_p50_ms: float | None) -> dict[str, Any] | None:
    if profile is None:
        return None
    data = to_json(profile)
    for key in ("kernels", "layers", "call_breakdown", "hints"):  # top-level keys of the report
        data.pop(key, None)
    # Profiling overhead: a profiled call's synced time against the steady p50 of this run.
    if profile.call_wall_ms and steady_p50_ms:
        data["overhead_ratio"] = profile.call_wall_ms / steady_p50_ms
    return data


def _counters_json(counters: CountersPass | None, table: ProfileSummary | None) -> dict[str, Any] | None:
    """The pass, its kernels by name (their counters are on the report's kernels); a kernel the table
    lacks keeps its counters here, under `unmatched`."""
    if counters is None:
        return None
    data = to_json(counters)
    data["kernels"] = [k.name for k in counters.kernels]
    joined = {k.counters.name for k in table.kernels if k.counters is not None} if table else set()
    data["unmatched"] = [to_json(k) for k in counters.kernels if k.name not in joined]
    return data


def _calls_json(stats: CallStats) -> dict[str, Any]:
    data = to_json(stats)
    data.pop("recent_ms", None)
    return data


NO_CALL_CLOCKS = "no clock was read while calls ran: the run has made no steady calls"


def _call_clocks_json(snap: RunSnapshot) -> dict[str, Any]:
    """`calls.clocks`: the GPU's clocks over the calls (`CallClocks`), or only a `reason` where there are none."""
    if snap.call_clocks is not None:
        return to_json(snap.call_clocks)
    return {"reason": snap.call_clocks_reason or NO_CALL_CLOCKS}


NO_PM_SAMPLING = "PM sampling did not start: the run ended before its calls"


def pm_sampling_json(pm: PmSampling | None) -> dict[str, Any]:
    """`pm_sampling`: the metrics sampled (CUPTI's names), the interval, each metric's p50 and p95 over the calls,
    the source and `reason` (null where it ran; else why not, with the figures null). Every run has the block."""
    if pm is None or (not pm.metrics and pm.state != "sampling"):
        reason = pm.reason if pm is not None and pm.reason else NO_PM_SAMPLING
        return {"metrics": [], "interval_ms": None, "calls": None, "source": None, "reason": reason}
    ran = pm.samples > 0
    return {
        "metrics": [m.name for m in pm.metrics],
        "interval_ms": pm.interval_ms,
        "calls": {f.metric: {"p50": f.p50, "p95": f.p95} for f in pm.calls} if ran else None,
        "source": pm.source,
        "reason": None if ran and pm.state in ("sampling", "ended") else pm.reason or "no samples were decoded",
        # What the figures mean and how they were had (issue 48): roles and units, the set and chip, the counts.
        "roles": {m.name: m.role for m in pm.metrics},
        "units": {m.name: m.unit for m in pm.metrics},
        "state": pm.state,
        "metric_set": pm.metric_set,
        "chip": pm.chip,
        "samples": pm.samples,
        "calls_aligned": pm.calls_aligned,
        "overflow": pm.overflow,
        "decode_ms_per_s": pm.decode_ms_per_s,
        "newest": {m.name: v for m, v in zip(pm.metrics, pm.newest, strict=False)},
    }


def _load_json(loaded: int | None, seconds: float | None, zero_copy: bool = False) -> dict[str, Any]:
    """Bytes, seconds and decimal GB/s of the parameters' load; no rate when the file was mapped in place."""
    gbps = loaded / seconds / 1e9 if loaded and seconds and not zero_copy else None
    return {"bytes": loaded, "seconds": seconds, "gbps": gbps, "zero_copy": zero_copy}


def _parameters_json(snap: RunSnapshot) -> dict[str, Any]:
    """`files` and `mode` (filled from the run's summary), the load's bytes, seconds and GB/s, and the
    streamed loader's `stages` (`ParameterStages`: how to read them is in its docstring; None for IREE's)."""
    load = snap.parameters
    if load is None or not load.done:
        return {"files": [], "mode": None, **_load_json(None, None), "stages": None}
    return {
        "files": [],
        "mode": load.mode,
        **_load_json(load.loaded_bytes, load.seconds, load.zero_copy),
        "stages": to_json(load.stages),
    }


def snapshot_report(snap: RunSnapshot, peak_live: dict[str, int] | None = None) -> dict[str, Any]:
    """The report as far as one snapshot tells it, in the report's key order.

    What only a live session knows (versions, state and exit code, compile,
    parameters, inputs, outputs) is left empty for the caller to fill:
    `build_report` from the run's summary, `gputop report` from a cut-off
    session's manifest. Without `peak_live`, a device's peak is its pools' peak.
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
        "calls": {**_calls_json(snap.calls), "clocks": _call_clocks_json(snap)},
        "memory": {
            "devices": memory_devices,
            "host_rss_bytes": snap.memory.host_rss_bytes if snap.memory else None,
            "host_rss_peak_bytes": None,
            "host_total_bytes": snap.memory.host_total_bytes if snap.memory else None,
            "samples": None,
            # Per device: the module's weights (constants inlined in the .vmfb, parameters) and what the allocator
            # took while it loaded; the pools above may not hold them (wording.module_bytes_text says which).
            "module_bytes": [{**to_json(m), "weight_bytes": weight_bytes(to_json(m))} for m in snap.module_bytes],
        },
        "kernels": to_json(snap.profile.kernels) if snap.profile else [],
        # Kernel time by the model's layers they came from (profiling/source_ops.py), largest first.
        "layers": to_json(snap.profile.layers) if snap.profile else [],
        "call_wall_ms": snap.profile.call_wall_ms if snap.profile else None,
        "call_kernel_ms": snap.profile.call_kernel_ms if snap.profile else None,
        "call_gap_ms": snap.profile.gap_ms if snap.profile else None,
        "profile": _profile_json(snap.profile, snap.calls.p50_ms),
        "call_breakdown": to_json(snap.profile.call_breakdown) if snap.profile else None,
        "hints": list(snap.profile.hints) if snap.profile else [],
        # The newest counters pass (ncu): its cost (wall_s, calls), source, command, or why it failed; each
        # kernel's own counters are in kernels[].counters.
        "counters_pass": _counters_json(snap.counters_pass, snap.profile),
        # The GPU's own counters sampled while the calls ran (CUPTI PM sampling, CUDA), or why not.
        "pm_sampling": pm_sampling_json(snap.pm_sampling),
        "exports": to_json(snap.exports),
        "transfers": to_json(snap.transfers),
        "device_names": dict(snap.device_names),
        "captures": to_json(snap.captures),
        "renderdoc": snap.renderdoc,
        "enqueue": _calls_json(snap.enqueue) if snap.enqueue else None,
        "stages": None,
        "diagnostics": to_json(snap.diagnostics),
        "compile": {"vmfb": None, "flags": None, "cache_hit": None, "cache_key": None, "log": None, "f64": None},
        "parameters": _parameters_json(snap),
        "inputs": [],
        "outputs": [],
        "check": to_json(snap.check),
        "session_dir": snap.session_dir,
        # Live: the last few seconds; a finished run's report: over its calls (build_report).
        "neighbours": to_json(snap.neighbours),
    }


def build_report(snap: RunSnapshot, summary: RunSummary) -> dict[str, Any]:
    """The whole report: what the snapshot shows, completed by what the run knows of itself."""
    report = snapshot_report(snap, dict(summary.peak_live_bytes))
    report["memory"].update(host_rss_peak_bytes=summary.host_rss_peak_bytes or None, samples=summary.memory_samples)
    report.update(
        gputop_version=package_version("gputop"),
        iree_version={
            "compiler": package_version("iree-base-compiler"),
            "runtime": package_version("iree-base-runtime"),
        },
        state=summary.state,
        exit_code=summary.exit_code,
        stages=to_json(summary.stages),
        parameters={
            "files": list(summary.parameter_files),
            "mode": summary.parameter_mode,
            **_load_json(summary.parameter_bytes, summary.parameter_seconds, summary.parameter_zero_copy),
            "stages": to_json(summary.parameter_stages),
        },
        inputs=to_json(summary.inputs),
        outputs=to_json(summary.outputs),
        check=to_json(summary.check),
        session_dir=summary.session_dir,
    )
    if summary.neighbours is not None:
        report["neighbours"] = to_json(summary.neighbours)
    if summary.compile is not None:
        report["compile"] = {
            "vmfb": summary.compile.vmfb,
            "flags": list(summary.compile.flags),
            "cache_hit": summary.compile.cache_hit,
            "cache_key": summary.compile.cache_key,
            "log": summary.compile.log,
            "f64": summary.compile.f64,
        }
    return report
