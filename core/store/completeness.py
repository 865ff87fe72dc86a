"""Whether a session folder holds its whole record, and if not, what is missing and why.

A face that ends a run (the TUI's `q`) used to say `session recorded in
FOLDER` whatever was on the disk; after a disk filled, that was untrue. This
reads what the run itself wrote about its record (the manifest's ending, its
`write_error` and `samples_lost`, the run's own error) and what is in the
folder (`report.json`), so the last word names what was lost and where.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gputop.core.errors import GputopError, no_space_left
from gputop.core.store.reader import effective_state, read_manifest
from gputop.core.store.writer import FINAL_STATES, MANIFEST, REPORT

__all__ = ["RecordCheck", "check_record"]


@dataclass(frozen=True)
class RecordCheck:
    """What a session folder holds of its record, read after its run ended."""

    folder: Path
    state: str | None  # the run's final state (`crashed` when its process died without one); None: no manifest
    error: str | None  # the run's own one-line error, where it ended in one
    missing: tuple[str, ...]  # what the record lacks, each said with its reason
    disk_full: bool  # the folder's disk has no room left now

    @property
    def whole(self) -> bool:
        return not self.missing


def check_record(folder: Path) -> RecordCheck:
    """Read `folder` as its run left it: its state, its error, and what its record lacks (files by name)."""
    disk_full = no_space_left(folder)
    try:
        manifest = read_manifest(folder)
    except GputopError as exc:
        return RecordCheck(folder, None, None, (f"{MANIFEST}: {exc.message}",), disk_full)
    state = effective_state(manifest)
    error = manifest.get("error")
    missing: list[str] = []
    if state not in FINAL_STATES:
        missing.append(f"no ending ({MANIFEST} still says {manifest.get('state')})")
    write_error = manifest.get("write_error")
    if write_error:
        lost = manifest.get("samples_lost")
        count = f", {lost} sample{'' if lost == 1 else 's'} lost" if isinstance(lost, int) and lost else ""
        missing.append(f"{_within(str(write_error), folder)}{count}")
    if state in FINAL_STATES and not (folder / REPORT).exists():
        missing.append(f"{REPORT} not written")
    return RecordCheck(folder, state, str(error) if error else None, tuple(missing), disk_full)


def _within(text: str, folder: Path) -> str:
    """`text` with the folder's own path taken off its start: the folder is named once, beside it."""
    for prefix in {f"{folder}/", f"{folder.resolve()}/"}:
        if text.startswith(prefix):
            return text[len(prefix) :]
    return text
