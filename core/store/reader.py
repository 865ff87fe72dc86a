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

from gputop.core.compare.samples import CALLS_FILE
from gputop.core.errors import UsageError
from gputop.core.paths import state_dir
from gputop.core.snapshot import RunSnapshot
from gputop.core.store.replay import snapshot_from_json
from gputop.core.store.writer import FINAL_STATES, INDEX, MANIFEST, REPORT, SAMPLES


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
    samples = manifest.get("samples")
    if duration is None or state not in FINAL_STATES:
        # Never ended (or still running): what its samples say, read once.
        samples, tail = scan_samples(folder, 1)
        if duration is None and tail:
            duration = round(tail[-1].timestamp - float(manifest["started_at"]), 3)
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
        samples=samples,
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


def scan_samples(folder: Path, keep: int) -> tuple[int, list[RunSnapshot]]:
    """(complete lines, the last `keep` of them as snapshots), in one streaming pass.

    A 30-minute session has tens of thousands of lines: only the kept ones are
    parsed, and a torn or corrupt line is skipped.
    """
    path = folder / SAMPLES
    if not path.is_file():
        return 0, []
    count = 0
    lines: deque[bytes] = deque(maxlen=keep)
    with open(path, "rb") as handle:
        for line in handle:
            if line.endswith(b"\n") and line.strip():
                count += 1
                lines.append(line)
    snapshots = []
    for line in lines:
        try:
            snapshots.append(snapshot_from_json(json.loads(line)))
        except (ValueError, UsageError):
            continue
    return count, snapshots


def read_tail(folder: Path, keep: int) -> list[RunSnapshot]:
    """The last `keep` complete snapshots of a session."""
    return scan_samples(folder, keep)[1]


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
    from gputop.core.store.report import snapshot_report

    manifest = read_manifest(folder)
    count, tail = scan_samples(folder, 1)
    if not tail:
        raise UsageError(f"{folder}: the session ended before its first sample; nothing to report")
    snapshot = tail[-1]
    state = effective_state(manifest)
    versions = manifest.get("versions") or {}
    config = manifest.get("config") or {}
    report = snapshot_report(snapshot)
    report.update(
        gputop_version=versions.get("gputop"),
        iree_version={"compiler": versions.get("iree_compiler"), "runtime": versions.get("iree_runtime")},
        state=state if state in FINAL_STATES or state == "crashed" else snapshot.state,
        exit_code=manifest.get("exit_code"),
        rebuilt=f"no {REPORT}: rebuilt from the last of {count} samples",
        parameters={**report["parameters"], "files": config.get("params", [])},
        session_dir=str(folder),
    )
    if manifest.get("compile"):
        report["compile"] = manifest["compile"]
    return report


def with_samples(report: dict[str, Any], folder: Path | None = None) -> dict[str, Any]:
    """The report with the samples its session kept (calls.json) where the report itself has none."""
    if isinstance(report.get("samples"), dict) and report["samples"].get("calls") is not None:
        return report
    where = folder or (Path(report["session_dir"]) if report.get("session_dir") else None)
    if where is None or not (where / CALLS_FILE).is_file():
        return report
    try:
        samples = json.loads((where / CALLS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return report
    return {**report, "samples": samples} if isinstance(samples, dict) else report


def read_side(text: str) -> tuple[str, dict[str, Any]]:
    """(a label, the report with its samples) of a session (id, prefix or folder) or a `gputop run --json` file."""
    path = Path(text).expanduser()
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(f"{path}: not a readable report ({exc})") from None
        if not isinstance(data, dict) or "calls" not in data:
            raise UsageError(f"{path}: not a gputop report (no calls)")
        return str(path), with_samples(data)
    folder = resolve_session(text)
    return f"{folder.name} ({read_manifest(folder).get('target')})", with_samples(read_report(folder), folder)


def baseline_candidates(target: str, exclude: Path | None = None) -> list[SessionEntry]:
    """Past sessions of `target` that ended with calls kept to compare with, newest first."""
    entries = []
    skip = exclude.resolve() if exclude is not None else None
    for entry in reversed(list_sessions()):
        folder = Path(entry.path)
        if entry.target != target or (skip is not None and folder.resolve() == skip):
            continue
        if (folder / CALLS_FILE).is_file():
            entries.append(entry)
    return entries
