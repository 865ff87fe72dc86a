"""Past sessions: find them, list them, and read back a finished or cut-off one.

A session directory is all gputop needs to tell a run again: the manifest
says what ran where and how it ended, `samples.jsonl` holds every snapshot
taken, `report.json` the final report. A run killed before its end has no
report and a manifest still saying `running`: its report is rebuilt from the
last complete sample line, and its state is shown as `crashed` once its
process is gone; listing it then gives back the room it kept on the disk for
an ending it never wrote (`.reserve`, see reserve.py).

One bad folder never hides the others: a folder whose manifest cannot be read
or says something no run writes (`started_at` null, a string or infinite, a
list for a target) is skipped and named, with a one-line reason
(`scan_sessions().skipped`), and `report` or `open` of it is a one-line error.
"""

from __future__ import annotations

import json
import math
from array import array
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gputop.core.compare.samples import CALLS_FILE
from gputop.core.errors import EXIT_CHECK, UsageError
from gputop.core.paths import state_dir
from gputop.core.snapshot import RunSnapshot
from gputop.core.store.replay import snapshot_from_json
from gputop.core.store.reserve import release_abandoned_reserve, run_alive_here
from gputop.core.store.writer import FINAL_STATES, INDEX, MANIFEST, REPORT, SAMPLES
from gputop.core.wording import CHECK_FAILED

__all__ = [
    "SessionEntry",
    "SessionScan",
    "SkippedSession",
    "effective_state",
    "entry_for",
    "list_sessions",
    "listed_state",
    "read_manifest",
    "read_report",
    "read_tail",
    "rebuild_report",
    "resolve_session",
    "scan_samples",
    "scan_sessions",
    "sessions_root",
]


@dataclass(frozen=True)
class SessionEntry:
    """One past or running session, as `gputop sessions` lists it."""

    id: str
    path: str
    started_at: float
    target: str | None
    device: str | None
    state: str  # how it ended (or `running`, `crashed`); `check failed` where its outputs were unlike the reference
    duration_s: float | None
    exit_code: int | None
    samples: int | None


@dataclass(frozen=True)
class SkippedSession:
    """A folder that looks like a session but cannot be listed, and why, in one line."""

    path: str
    reason: str


@dataclass(frozen=True)
class SessionScan:
    """What `gputop sessions` finds: the sessions it can list (oldest first) and the folders it skipped."""

    entries: list[SessionEntry] = field(default_factory=list)
    skipped: list[SkippedSession] = field(default_factory=list)


def sessions_root() -> Path:
    return state_dir() / "sessions"


def _why(exc: Exception) -> str:
    """An OS error as a short phrase ("permission denied"), anything else as its text."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc)


def _has_manifest(folder: Path) -> bool:
    """Whether `folder` holds a manifest entry of any kind (a directory or a broken link counts: it is named)."""
    path = folder / MANIFEST
    return path.is_symlink() or path.exists()


def _candidate_dirs(skipped: list[SkippedSession] | None = None) -> list[Path]:
    """Folders under the default root, plus every --session-dir the index remembers.

    A folder that cannot even be looked into is added to `skipped` (when given) instead of failing the scan.
    """
    seen: dict[str, Path] = {}

    def consider(path: Path, first: bool) -> None:
        try:
            if not _has_manifest(path):
                return
            key = str(path.resolve())
        except (OSError, ValueError, RuntimeError) as exc:  # EACCES, a NUL in an index line, a symlink loop
            if skipped is not None:
                skipped.append(SkippedSession(str(path), f"cannot be read ({_why(exc)})"))
            return
        if first:
            seen[key] = path
        else:
            seen.setdefault(key, path)

    root = sessions_root()
    try:
        children = sorted(root.iterdir()) if root.is_dir() else []
    except OSError as exc:
        children = []
        if skipped is not None:
            skipped.append(SkippedSession(str(root), f"cannot be listed ({_why(exc)})"))
    for child in children:
        consider(child, True)
    index = state_dir() / INDEX
    try:
        lines = index.read_text(encoding="utf-8", errors="replace").splitlines() if index.is_file() else []
    except OSError:
        lines = []  # the index is only a hint: the default root was listed anyway
    for line in lines:
        try:
            path = Path(json.loads(line)["path"])
        except (ValueError, KeyError, TypeError):
            continue  # a torn or foreign line: the index is only a hint
        consider(path, False)
    return list(seen.values())


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# What a manifest's keys hold when a run wrote them; anything else is a damaged or foreign file.
_LAST_TIME = 253402300800.0  # 10000-01-01: beyond it no clock formats a start time


def _manifest_problem(data: dict[str, Any]) -> str | None:
    """Why `data` cannot be a manifest gputop wrote (None when it can): the first key that is wrong."""
    started: Any = data.get("started_at")
    if not _number(started) or not 0 <= started < _LAST_TIME:
        return f"started_at is {json.dumps(started)}, not a time"
    expected: dict[str, tuple[type, ...]] = {
        "id": (str,),
        "target": (str,),
        "state": (str,),
        "device": (dict,),
        "versions": (dict,),
        "config": (dict,),
        "compile": (dict,),
        "exit_code": (int,),
        "samples": (int,),
    }
    for key, types in expected.items():
        value = data.get(key)
        if value is not None and (not isinstance(value, types) or isinstance(value, bool)):
            return f"{key} is {json.dumps(value)[:40]}, not a {types[0].__name__}"
    duration = data.get("duration_s")
    if duration is not None and not _number(duration):
        return f"duration_s is {json.dumps(duration)}, not a number"
    device = data.get("device")
    if isinstance(device, dict) and device.get("id") is not None and not isinstance(device.get("id"), str):
        return f"device.id is {json.dumps(device.get('id'))[:40]}, not a str"
    return None


def read_manifest(folder: Path) -> dict[str, Any]:
    """A session's manifest; a UsageError (one line) when it is missing, unreadable or not one gputop wrote."""
    path = folder / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{folder}: not a gputop session (no {MANIFEST})") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: unreadable manifest ({_why(exc)})") from None
    if not isinstance(data, dict) or "started_at" not in data:
        raise UsageError(f"{path}: not a gputop session manifest")
    problem = _manifest_problem(data)
    if problem is not None:
        raise UsageError(f"{path}: damaged manifest ({problem})")
    return data


def effective_state(manifest: dict[str, Any]) -> str:
    """The manifest's state, or `crashed` when it never ended and its process is gone."""
    state = str(manifest.get("state", "unknown"))
    if state in FINAL_STATES:
        return state
    # Alive on this host: still running (or paused). Gone, or on a host where it cannot be known: crashed.
    return state if run_alive_here(manifest) else "crashed"


def listed_state(manifest: dict[str, Any], state: str) -> str:
    """The state a session is listed in: `check failed` for a run that ended (finished or stopped) with
    outputs unlike their reference, else `state` (`effective_state`'s). A manifest written before runs
    recorded their check's verdict says it by its exit code alone (6, which only a failed check gives)."""
    failed = manifest["check"] == "failed" if "check" in manifest else manifest.get("exit_code") == EXIT_CHECK
    return CHECK_FAILED if failed and state in ("finished", "stopped") else state


def entry_for(folder: Path) -> SessionEntry:
    manifest = read_manifest(folder)
    state = effective_state(manifest)
    if state == "crashed":  # its process is gone: the room it kept for an ending it never wrote goes back
        release_abandoned_reserve(folder, manifest)
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
        state=listed_state(manifest, state),
        duration_s=duration,
        exit_code=manifest.get("exit_code"),
        samples=samples,
    )


def scan_sessions() -> SessionScan:
    """Every session gputop can find, oldest first, and every folder skipped with its reason.

    A folder that cannot be read, or whose manifest or samples are damaged, is
    skipped and named; it never hides the others.
    """
    skipped: list[SkippedSession] = []
    entries = []
    for folder in _candidate_dirs(skipped):
        try:
            entries.append(entry_for(folder))
        except UsageError as exc:
            skipped.append(SkippedSession(str(folder), _reason(exc.message, folder)))
        except (OSError, ValueError, TypeError, OverflowError) as exc:  # its samples, mid-read
            skipped.append(SkippedSession(str(folder), f"cannot be read ({_why(exc)})"))
    return SessionScan(sorted(entries, key=lambda e: e.started_at), skipped)


def _reason(message: str, folder: Path) -> str:
    """A UsageError's message without the path it starts with (the skipped line names the folder)."""
    for prefix in (f"{folder / MANIFEST}: ", f"{folder}: "):
        if message.startswith(prefix):
            return message[len(prefix) :]
    return message


def list_sessions() -> list[SessionEntry]:
    """Every session gputop can list, oldest first; damaged folders are left out (`scan_sessions` names them)."""
    return scan_sessions().entries


def resolve_session(text: str) -> Path:
    """SESSION as a directory, or an id (a folder name; a unique prefix will do)."""
    path = Path(text).expanduser()
    try:
        if path.is_dir():
            if not _has_manifest(path):
                raise UsageError(f"{text}: not a gputop session (no {MANIFEST})")
            return path
    except (OSError, ValueError) as exc:
        raise UsageError(f"{text}: cannot be read ({_why(exc)})") from None
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
    """(complete lines, the last `keep` valid snapshots among them), oldest first.

    A 30-minute session has tens of thousands of lines: one streaming pass
    notes where each line starts, and only the last ones are parsed, from the
    end back until `keep` of them are snapshots. A torn or corrupt line, or a
    valid JSON line that is not a sample, is skipped: the snapshots before it
    are still found.
    """
    path = folder / SAMPLES
    if keep <= 0 or not path.is_file():
        return 0, []
    starts = array("q")
    with open(path, "rb") as handle:
        offset = 0
        for line in handle:
            if line.endswith(b"\n") and line.strip():
                starts.append(offset)
            offset += len(line)
        found: deque[RunSnapshot] = deque()
        for start in reversed(starts):
            handle.seek(start)
            try:
                found.appendleft(snapshot_from_json(json.loads(handle.readline())))
            except (ValueError, UsageError):
                continue
            if len(found) == keep:
                break
    return len(starts), list(found)


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
    """A report from the manifest and the last valid sample of an unfinished session."""
    from gputop.core.store.report import ManifestFacts, build_report

    manifest = read_manifest(folder)
    count, tail = scan_samples(folder, 1)
    if not tail:
        if count:
            raise UsageError(f"{folder}: none of its {count} sample lines can be read; nothing to report")
        raise UsageError(f"{folder}: the session ended before its first sample; nothing to report")
    snapshot = tail[-1]
    state = effective_state(manifest)
    versions = manifest.get("versions") or {}
    config = manifest.get("config") or {}
    facts = ManifestFacts(
        gputop_version=versions.get("gputop"),
        iree_version={"compiler": versions.get("iree_compiler"), "runtime": versions.get("iree_runtime")},
        state=state if state in FINAL_STATES or state == "crashed" else snapshot.state,
        exit_code=manifest.get("exit_code"),
        rebuilt=f"no {REPORT}: rebuilt from the last of {count} samples",  # the last that is a sample
        parameter_files=config.get("params", []),
        session_dir=str(folder),
        compile=manifest.get("compile") or None,
    )
    return build_report(snapshot, facts=facts)


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
