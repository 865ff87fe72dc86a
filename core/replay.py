"""Snapshots back from JSON: recorded runs replayed exactly as they were seen.

A run's snapshots are written as JSON lines (`to_json`). Reading them back
into the same frozen dataclasses lets the TUI show a recorded run with the
very code that shows a live one: that is how its visual tests stay
deterministic and how a finished session can be opened again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gputop.core.errors import UsageError
from gputop.core.records import (
    CallStats,
    CaptureInfo,
    DeviceInfo,
    DeviceMemory,
    Diagnostic,
    Event,
    ExportAffinity,
    KernelTiming,
    MemorySample,
    Phases,
    PoolStats,
    PoolUsage,
    ProfileSummary,
    RunSnapshot,
    Transfer,
    to_json,
)


def _tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if value is not None else ()


def device_from_json(data: dict[str, Any] | None) -> DeviceInfo | None:
    if data is None:
        return None
    fields = dict(data)
    if fields.get("compile_target") is not None:
        fields["compile_target"] = tuple(fields["compile_target"])
    return DeviceInfo(**fields)


def memory_from_json(data: dict[str, Any] | None) -> MemorySample | None:
    if data is None:
        return None
    devices = tuple(
        DeviceMemory(
            **{
                **dev,
                "pools": tuple(PoolStats(**pool) for pool in dev.get("pools", ())),
            }
        )
        for dev in data["devices"]
    )
    return MemorySample(
        devices=devices,
        host_rss_bytes=data["host_rss_bytes"],
        host_total_bytes=data["host_total_bytes"],
        timestamp=data["timestamp"],
    )


def profile_from_json(data: dict[str, Any] | None) -> ProfileSummary | None:
    if data is None:
        return None
    kernels = tuple(
        KernelTiming(
            **{
                **k,
                "workgroup_count": _tuple(k.get("workgroup_count")) or None,
                "workgroup_size": _tuple(k.get("workgroup_size")) or None,
            }
        )
        for k in data.get("kernels", ())
    )
    pools = tuple(PoolUsage(**p) for p in data.get("pools", ()))
    return ProfileSummary(**{**data, "kernels": kernels, "pools": pools})


def snapshot_from_json(data: dict[str, Any]) -> RunSnapshot:
    """Rebuild a `RunSnapshot` from what `to_json` made of it."""
    try:
        calls = dict(data["calls"])
        calls["recent_ms"] = _tuple(calls.get("recent_ms"))
        calls["buckets"] = _tuple(calls.get("buckets"))
        return RunSnapshot(
            state=data["state"],
            target=data["target"],
            function=data.get("function"),
            device=device_from_json(data.get("device")),
            phases=Phases(**data["phases"]),
            calls=CallStats(**calls),
            memory=memory_from_json(data.get("memory")),
            memory_history=_tuple(data.get("memory_history")),
            diagnostics=tuple(Diagnostic(**d) for d in data.get("diagnostics", ())),
            events=tuple(Event(**e) for e in data.get("events", ())),
            error=data.get("error"),
            error_exit_code=data.get("error_exit_code"),
            result_types=_tuple(data.get("result_types")),
            device_ids=_tuple(data.get("device_ids")),
            session_dir=data.get("session_dir"),
            profile=profile_from_json(data.get("profile")),
            exports=tuple(ExportAffinity(**r) for r in data.get("exports", ())),
            transfers=tuple(Transfer(**t) for t in data.get("transfers", ())),
            device_names=tuple((str(a), str(b)) for a, b in data.get("device_names", ())),
            profiling=bool(data.get("profiling", False)),
            enqueue=CallStats(**{**data["enqueue"], "recent_ms": _tuple(data["enqueue"].get("recent_ms"))})
            if data.get("enqueue")
            else None,
            captures=tuple(
                CaptureInfo(
                    **{
                        **c,
                        "dispatch_names": _tuple(c.get("dispatch_names")),
                        "gpu_durations_us": _tuple(c.get("gpu_durations_us")),
                    }
                )
                for c in data.get("captures", ())
            ),
            renderdoc=data.get("renderdoc"),
            seq=int(data.get("seq", 0)),
            errors=int(data.get("errors", 0)),
            state_since=data.get("state_since"),
            timestamp=data["timestamp"],
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UsageError(f"not a gputop snapshot record ({exc})") from None


def write_snapshots(path: Path, snapshots: list[RunSnapshot]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for snapshot in snapshots:
            handle.write(json.dumps(to_json(snapshot)) + "\n")


def read_snapshots(path: Path) -> list[RunSnapshot]:
    """Every complete line of a snapshot file (a torn last line is skipped)."""
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    snapshots = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                if line.endswith("\n"):
                    raise UsageError(f"{path}:{number}: not JSON") from None
                break  # the run was cut off while writing its last line
            snapshots.append(snapshot_from_json(data))
    return snapshots
