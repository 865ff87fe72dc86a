"""Past sessions: find them, list them, and read back a finished or cut-off one.

A session directory is all gputop needs to tell a run again: the manifest
says what ran where and how it ended, `samples.jsonl` holds every snapshot
taken, `report.json` the final report. A run killed before its end has no
report and a manifest still saying `running`: its report is rebuilt from the
last complete sample, and its state is shown as `crashed` once its process
is gone.
"""

from __future__ import annotations

import json
import os
import socket
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputop.core.errors import UsageError
from gputop.core.paths import state_dir
from gputop.core.record import FINAL_STATES, INDEX, MANIFEST, REPORT, SAMPLES
from gputop.core.records import RunSnapshot, to_json
from gputop.core.replay import snapshot_from_json


@dataclass(frozen=True)
class SessionEntry:
    """One past or running session, as `gputop sessions` lists it."""

    id: str
    path: str
    started_at: float
    target: str | None
    device: str | None
    state: str
    duration_s: float | None
    exit_code: int | None
    samples: int | None


def sessions_root() -> Path:
    return state_dir() / "sessions"


def _candidate_dirs() -> list[Path]:
    """Folders under the default root, plus every --session-dir the index remembers."""
    seen: dict[str, Path] = {}
    root = sessions_root()
    if root.is_dir():
        for child in root.iterdir():
            if (child / MANIFEST).is_file():
                seen[str(child.resolve())] = child
    index = state_dir() / INDEX
    if index.is_file():
        for line in index.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                path = Path(json.loads(line)["path"])
            except (ValueError, KeyError, TypeError):
                continue  # a torn or foreign line: the index is only a hint
            if (path / MANIFEST).is_file():
                seen.setdefault(str(path.resolve()), path)
    return list(seen.values())


def read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{folder}: not a gputop session (no {MANIFEST})") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: unreadable manifest ({exc})") from None
    if not isinstance(data, dict) or "started_at" not in data:
        raise UsageError(f"{path}: not a gputop session manifest")
    return data


def _process_alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def effective_state(manifest: dict[str, Any]) -> str:
    """The manifest's state, or `crashed` when it never ended and its process is gone."""
    state = str(manifest.get("state", "unknown"))
    if state in FINAL_STATES:
        return state
    same_host = manifest.get("host") == socket.gethostname()
    if same_host and _process_alive(manifest.get("pid")):
        return state
    return "crashed"


def entry_for(folder: Path) -> SessionEntry:
    manifest = read_manifest(folder)
    state = effective_state(manifest)
    duration = manifest.get("duration_s")
    if duration is None:
        last = last_sample_time(folder)
        if last is not None:
            duration = round(last - float(manifest["started_at"]), 3)
    device = manifest.get("device") or {}
    return SessionEntry(
        id=str(manifest.get("id", folder.name)),
        path=str(folder),
        started_at=float(manifest["started_at"]),
        target=manifest.get("target"),
        device=device.get("id") if isinstance(device, dict) else None,
        state=state,
        duration_s=duration,
        exit_code=manifest.get("exit_code"),
        samples=manifest.get("samples") if state in FINAL_STATES else count_samples(folder),
    )


def list_sessions() -> list[SessionEntry]:
    """Every session gputop can find, oldest first; unreadable folders are skipped."""
    entries = []
    for folder in _candidate_dirs():
        try:
            entries.append(entry_for(folder))
        except UsageError:
            continue
    return sorted(entries, key=lambda e: e.started_at)


def resolve_session(text: str) -> Path:
    """SESSION as a directory, or an id (a folder name; a unique prefix will do)."""
    path = Path(text).expanduser()
    if path.is_dir():
        if not (path / MANIFEST).is_file():
            raise UsageError(f"{text}: not a gputop session (no {MANIFEST})")
        return path
    folders = _candidate_dirs()
    exact = [f for f in folders if f.name == text]
    if exact:
        return exact[-1]
    matches = [f for f in folders if f.name.startswith(text)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise UsageError(f"{text}: {len(matches)} sessions match; give more of the id (gputop sessions lists them)")
    raise UsageError(f"{text}: no such session (gputop sessions lists them)")


def count_samples(folder: Path) -> int:
    path = folder / SAMPLES
    if not path.is_file():
        return 0
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.endswith(b"\n"))


def last_sample_time(folder: Path) -> float | None:
    snapshot = last_snapshot(folder)
    return snapshot.timestamp if snapshot else None


def last_snapshot(folder: Path) -> RunSnapshot | None:
    tail = read_tail(folder, 1)
    return tail[-1] if tail else None


def read_tail(folder: Path, keep: int) -> list[RunSnapshot]:
    """The last `keep` complete snapshots of a session; a torn or corrupt line is skipped.

    Streams the file, so a 30-minute session (tens of thousands of lines) costs
    only the lines kept.
    """
    path = folder / SAMPLES
    if not path.is_file():
        return []
    lines: deque[bytes] = deque(maxlen=keep)
    with open(path, "rb") as handle:
        for line in handle:
            if line.endswith(b"\n") and line.strip():
                lines.append(line)
    snapshots = []
    for line in lines:
        try:
            snapshots.append(snapshot_from_json(json.loads(line)))
        except (ValueError, UsageError):
            continue
    return snapshots


def read_report(folder: Path) -> dict[str, Any]:
    """report.json, or for a session cut off before its end, a report rebuilt from its record."""
    path = folder / REPORT
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(f"{path}: unreadable report ({exc})") from None
        if isinstance(data, dict):
            return data
        raise UsageError(f"{path}: not a gputop report")
    return rebuild_report(folder)


def rebuild_report(folder: Path) -> dict[str, Any]:
    """A report from the manifest and the last complete sample of an unfinished session."""
    manifest = read_manifest(folder)
    snapshot = last_snapshot(folder)
    if snapshot is None:
        raise UsageError(f"{folder}: the session ended before its first sample; nothing to report")
    state = effective_state(manifest)
    memory_devices = []
    if snapshot.memory is not None:
        for dev in snapshot.memory.devices:
            row = to_json(dev)
            row["peak_live_bytes"] = max((p.peak_bytes for p in dev.pools), default=0)
            memory_devices.append(row)
    calls = to_json(snapshot.calls)
    calls.pop("recent_ms", None)
    versions = manifest.get("versions") or {}
    config = manifest.get("config") or {}
    return {
        "gputop_version": versions.get("gputop"),
        "iree_version": {"compiler": versions.get("iree_compiler"), "runtime": versions.get("iree_runtime")},
        "target": snapshot.target,
        "function": snapshot.function,
        "state": state if state in FINAL_STATES or state == "crashed" else snapshot.state,
        "error": snapshot.error,
        "exit_code": manifest.get("exit_code"),
        "rebuilt": f"no {REPORT}: rebuilt from the last of {count_samples(folder)} samples",
        "device": to_json(snapshot.device),
        "phases": to_json(snapshot.phases),
        "calls": calls,
        "memory": {
            "devices": memory_devices,
            "host_rss_bytes": snapshot.memory.host_rss_bytes if snapshot.memory else None,
            "host_rss_peak_bytes": None,
            "host_total_bytes": snapshot.memory.host_total_bytes if snapshot.memory else None,
            "samples": None,
        },
        "kernels": to_json(snapshot.profile.kernels) if snapshot.profile else [],
        "call_wall_ms": snapshot.profile.call_wall_ms if snapshot.profile else None,
        "call_kernel_ms": snapshot.profile.call_kernel_ms if snapshot.profile else None,
        "call_gap_ms": snapshot.profile.gap_ms if snapshot.profile else None,
        "profile": None,
        "exports": to_json(snapshot.exports),
        "transfers": to_json(snapshot.transfers),
        "device_names": dict(snapshot.device_names),
        "captures": to_json(snapshot.captures),
        "renderdoc": snapshot.renderdoc,
        "enqueue": None,
        "stages": None,
        "diagnostics": to_json(snapshot.diagnostics),
        "compile": manifest.get("compile")
        or {"vmfb": None, "flags": None, "cache_hit": None, "cache_key": None, "log": None},
        "parameters": {"files": config.get("params", []), "mode": None},
        "inputs": [],
        "outputs": [],
        "check": None,
        "session_dir": str(folder),
    }
