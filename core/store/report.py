"""The report of a run: one JSON document that `gputop run --json` writes.

Its top-level keys are gputop's contract with scripts and CI jobs:
`device`, `phases`, `calls`, `memory`, `kernels`, `exports`, `captures` and
`diagnostics`, plus what helps a person read it (target, function, versions,
outputs, the reference check and where the session's files are). It is built
from values only, a snapshot and the run's closing `RunSummary` (or a cut-off
session's `ManifestFacts`), so a live run, a finished one and one rebuilt from
its samples share one builder.

It is assembled once: each top-level key has one author here, and nothing
rewrites a built report. A watched program's own keys (`program`, `functions`;
the issue's contract) and its parts of `parameters`, `memory` and `hints` come
from the snapshot's `program` view inside those sections' authors; what only
the live engine knows (`engine`, `target_sha256`, `samples`, and `cut_short`
on a second signal) it hands to the builder, keys the builder never writes
itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gputop.core.records.base import to_json
from gputop.core.records.calls import CallStats
from gputop.core.records.counters import CountersPass
from gputop.core.records.pm import PmSampling
from gputop.core.records.profile import ProfileSummary
from gputop.core.records.program import ProgramView
from gputop.core.snapshot import RunSnapshot, RunSummary
from gputop.core.versions import package_version
from gputop.core.wording import weight_bytes

__all__ = ["CUT_SHORT", "ManifestFacts", "build_report", "pm_sampling_json", "snapshot_report"]


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


CUT_SHORT = "a second signal: written from the newest snapshot"  # `cut_short`: the process leaves right after


@dataclass(frozen=True)
class ManifestFacts:
    """What a cut-off session's manifest tells of it: `gputop report` rebuilds its report from these and the
    session's last sample (core/store/reader.py reads them)."""

    gputop_version: str | None
    iree_version: dict[str, Any]
    state: str
    exit_code: int | None
    rebuilt: str  # why the report was rebuilt, and from what
    parameter_files: list[str]
    session_dir: str
    compile: dict[str, Any] | None


def _load_json(loaded: int | None, seconds: float | None, zero_copy: bool = False) -> dict[str, Any]:
    """Bytes, seconds and decimal GB/s of the parameters' load; no rate when the file was mapped in place."""
    gbps = loaded / seconds / 1e9 if loaded and seconds and not zero_copy else None
    return {"bytes": loaded, "seconds": seconds, "gbps": gbps, "zero_copy": zero_copy}


def _run_parameters(snap: RunSnapshot, summary: RunSummary | None, facts: ManifestFacts | None) -> dict[str, Any]:
    """`files` and `mode`, the load's bytes, seconds and GB/s, and the streamed loader's `stages`
    (`ParameterStages`: how to read them is in its docstring; None for IREE's): the run's summary where there is
    one, else the snapshot's load with the manifest's files (none without a manifest)."""
    if summary is not None:
        return {
            "files": list(summary.parameter_files),
            "mode": summary.parameter_mode,
            **_load_json(summary.parameter_bytes, summary.parameter_seconds, summary.parameter_zero_copy),
            "stages": to_json(summary.parameter_stages),
        }
    files = list(facts.parameter_files) if facts is not None else []
    load = snap.parameters
    if load is None or not load.done:
        return {"files": files, "mode": None, **_load_json(None, None), "stages": None}
    return {
        "files": files,
        "mode": load.mode,
        **_load_json(load.loaded_bytes, load.seconds, load.zero_copy),
        "stages": to_json(load.stages),
    }


def _program_parameters(base: dict[str, Any], view: ProgramView | None) -> dict[str, Any]:
    """A watched program's `parameters`: the run's block with the loads the program made (`bytes`, `mode`,
    `through`, ...), or `through` null where it loaded none. A gputop run's block as it is."""
    if view is None:
        return base
    params = [load for load in view.loads if load.kind == "parameters"]
    if not params:
        return {**base, "through": base.get("through")}
    total = sum(load.bytes for load in params)
    spent = sum(load.seconds for load in params)
    throughs = {load.through for load in params if load.through}
    return {
        **base,
        "files": sorted({file for load in params for file in load.files}),
        "mode": params[0].how,
        "api": params[0].api,
        "bytes": total,
        "seconds": spent,
        "gbps": total / spent / 1e9 if spent > 0 and total else None,
        # One load through host memory makes the program's parameters slow: say so over the file handles.
        "through": "host memory" if "host memory" in throughs else (throughs.pop() if throughs else None),
        "tensors": sum(load.tensors or 0 for load in params) or None,
    }


def _memory_json(snap: RunSnapshot, summary: RunSummary | None, view: ProgramView | None) -> dict[str, Any]:
    """`memory`: each device's pools and peak (the run's peak of live bytes, else its pools' peak), the host's,
    the module's weights; a watched program's `growth` and `held`."""
    peak_live = dict(summary.peak_live_bytes) if summary is not None else None
    memory_devices = []
    for dev in snap.memory.devices if snap.memory else ():
        row = to_json(dev)
        row["peak_live_bytes"] = (
            peak_live.get(dev.device_id, 0)
            if peak_live is not None
            else max((p.peak_bytes for p in dev.pools), default=0)
        )
        memory_devices.append(row)
    memory: dict[str, Any] = {
        "devices": memory_devices,
        "host_rss_bytes": snap.memory.host_rss_bytes if snap.memory else None,
        "host_rss_peak_bytes": (summary.host_rss_peak_bytes or None) if summary is not None else None,
        "host_total_bytes": snap.memory.host_total_bytes if snap.memory else None,
        "samples": summary.memory_samples if summary is not None else None,
        # Per device: the module's weights (constants inlined in the .vmfb, parameters) and what the allocator
        # took while it loaded; the pools above may not hold them (wording.module_bytes_text says which).
        "module_bytes": [{**to_json(m), "weight_bytes": weight_bytes(to_json(m))} for m in snap.module_bytes],
    }
    if view is not None:
        memory.update(growth=to_json(view.growth), held=to_json(view.held))
    return memory


def _hints(snap: RunSnapshot, view: ProgramView | None) -> list[str]:
    """`hints`: the profile's, then a watched program's diagnoses."""
    return [*(snap.profile.hints if snap.profile else ()), *(view.hints if view is not None else ())]


def _versions(summary: RunSummary | None, facts: ManifestFacts | None) -> tuple[str | None, dict[str, Any] | None]:
    """(`gputop_version`, `iree_version`): the installed packages' for a live run, the manifest's for a rebuilt one."""
    if summary is not None:
        runtime = {"compiler": package_version("iree-base-compiler"), "runtime": package_version("iree-base-runtime")}
        return package_version("gputop"), runtime
    if facts is not None:
        return facts.gputop_version, facts.iree_version
    return None, None


def _compile_json(summary: RunSummary | None, facts: ManifestFacts | None) -> dict[str, Any]:
    """`compile`: the run's compile record, or the manifest's; empty fields where neither has one."""
    if summary is not None and summary.compile is not None:
        record = summary.compile
        return {
            "vmfb": record.vmfb,
            "flags": list(record.flags),
            "cache_hit": record.cache_hit,
            "cache_key": record.cache_key,
            "log": record.log,
            "f64": record.f64,
        }
    if facts is not None and facts.compile:
        return facts.compile
    return {"vmfb": None, "flags": None, "cache_hit": None, "cache_key": None, "log": None, "f64": None}


def _program_json(view: ProgramView) -> dict[str, Any]:
    """The report's `program`: who ran, and how it ended (`ended`: exited, raised, signal; null while it runs)."""
    return {
        "command": list(view.command),
        "pid": view.pid,
        "exit_code": view.exit_code,
        "ended": view.ended,
        "ended_line": view.ended_line,
        "python": view.python,
        "iree": view.iree,
        "contexts": view.contexts,
        "other_processes": view.others,
        "loads": to_json(view.loads),
        "calls_made": view.calls_made,
        "calls_dropped": view.calls_dropped,
        "context_p50_ms": view.context_p50_ms,
        "stacks": to_json(view.stacks),
    }


def _program_keys(view: ProgramView | None) -> dict[str, Any]:
    """A watched program's own keys (`program`, and `functions`: one row per function, the busiest first)."""
    if view is None:
        return {}
    return {"program": _program_json(view), "functions": [to_json(row) for row in view.functions]}


def _outcome(snap: RunSnapshot, summary: RunSummary | None, facts: ManifestFacts | None) -> tuple[str, int | None]:
    """(`state`, `exit_code`): the run's end, the manifest's, or the snapshot's state with no exit code yet."""
    if summary is not None:
        return summary.state, summary.exit_code
    if facts is not None:
        return facts.state, facts.exit_code
    return snap.state, None


def _session_dir(snap: RunSnapshot, summary: RunSummary | None, facts: ManifestFacts | None) -> str | None:
    if summary is not None:
        return summary.session_dir
    return facts.session_dir if facts is not None else snap.session_dir


def build_report(
    snap: RunSnapshot,
    summary: RunSummary | None = None,
    *,
    facts: ManifestFacts | None = None,
    extra: Mapping[str, Any] | None = None,
    cut_short: str | None = None,
) -> dict[str, Any]:
    """The report, in its key order, assembled once from `snap` and what the run knows of itself.

    `summary`: a live run's (its end, or the run as it stands); `facts`: a cut-off session's manifest, for a
    report rebuilt from its last sample; neither: as far as one snapshot tells it. `extra`: keys only the
    live engine knows (`engine`, `target_sha256`, `samples`), after the report's own; never one of them.
    A watched program's keys come from a live build's snapshot (`program`); a rebuilt report has none.
    `cut_short`: why the report was written from the newest snapshot (a second signal), its last key.
    """
    view = snap.program if summary is not None else None
    gputop_version, iree_version = _versions(summary, facts)
    state, exit_code = _outcome(snap, summary, facts)
    neighbours = summary.neighbours if summary is not None and summary.neighbours is not None else snap.neighbours
    report: dict[str, Any] = {
        "gputop_version": gputop_version,
        "iree_version": iree_version,
        "target": snap.target,
        "function": snap.function,
        "state": state,
        "error": snap.error,
        "exit_code": exit_code,
        "device": to_json(snap.device),
        "phases": to_json(snap.phases),
        "calls": {**_calls_json(snap.calls), "clocks": _call_clocks_json(snap)},
        "memory": _memory_json(snap, summary, view),
        "kernels": to_json(snap.profile.kernels) if snap.profile else [],
        # Kernel time by the model's layers they came from (profiling/work/source_ops.py), largest first.
        "layers": to_json(snap.profile.layers) if snap.profile else [],
        "call_wall_ms": snap.profile.call_wall_ms if snap.profile else None,
        "call_kernel_ms": snap.profile.call_kernel_ms if snap.profile else None,
        "call_gap_ms": snap.profile.gap_ms if snap.profile else None,
        "profile": _profile_json(snap.profile, snap.calls.p50_ms),
        "call_breakdown": to_json(snap.profile.call_breakdown) if snap.profile else None,
        "hints": _hints(snap, view),
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
        "stages": to_json(summary.stages) if summary is not None else None,
        "diagnostics": to_json(snap.diagnostics),
        "compile": _compile_json(summary, facts),
        "parameters": _program_parameters(_run_parameters(snap, summary, facts), view),
        "inputs": to_json(summary.inputs) if summary is not None else [],
        "outputs": to_json(summary.outputs) if summary is not None else [],
        "check": to_json(summary.check if summary is not None else snap.check),
        "session_dir": _session_dir(snap, summary, facts),
        # Live: the last few seconds; a finished run's report: over its calls.
        "neighbours": to_json(neighbours),
    }
    if facts is not None:
        report["rebuilt"] = facts.rebuilt
    for key, value in (extra or {}).items():
        if key in report:  # one author per key: the builder's keys are its own
            raise ValueError(f"report key {key!r} is the builder's, not the caller's")
        report[key] = value
    report.update(_program_keys(view))
    if cut_short is not None:
        report["cut_short"] = cut_short
    return report


def snapshot_report(snap: RunSnapshot) -> dict[str, Any]:
    """The report as far as one snapshot tells it (no versions, exit code, compile, inputs or outputs): a
    device's peak is its pools' peak."""
    return build_report(snap)
