"""The operations device queues ran in a profiled call, read from IREE's ireeperf-jsonl export.

IREE's HAL profiling (`--device_profiling_mode=queue-events,...`) records each
operation a device queue runs as a `queue_event`: alloca, execute, copy, fill,
update, dealloca, with its submission, device, host times and payload bytes.
A command buffer's own commands (the copies and dispatches inside an execute)
are recorded once per command buffer as `command_operation` rows when the
profile also holds command metadata (local-task: host-execution or
command-region-events; Vulkan: dispatch-events). This module turns those
records into frozen values and answers one question with them: which copies
ran, on which device, with how many bytes. It is the one reader of queue
records, for the affinity cross-check and for a call's breakdown.

API: `parse_queue_log(text)` or `load_queue_log(bundle, iree_profile)` -> `QueueLog`
(`.events`, `.operations`, `.copies()`).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputop.core.errors import ProfileError
from gputop.core.processes import child_options

__all__ = [
    "CommandOperation",
    "Copy",
    "QueueEvent",
    "QueueLog",
    "load_queue_log",
    "parse_queue_log",
    "queue_event_from",
]

NONE = 0xFFFFFFFF  # IREE writes UINT32_MAX for "no binding slot" and "no time"


@dataclass(frozen=True)
class QueueEvent:
    """One operation a device queue ran (`queue_event`)."""

    op: str  # alloca | execute | copy | fill | update | dealloca | ...
    submission_id: int
    device_ordinal: int  # the order of the --device flags
    queue_ordinal: int
    host_time_ns: int  # when it was submitted
    ready_host_time_ns: int | None  # when its waits were met, where the producer knows it
    payload_bytes: int  # bytes it allocates, copies or fills (0 for an execute)
    command_buffer_id: int | None  # execute: the command buffer it ran
    allocation_id: int | None  # alloca / dealloca: joins memory events


@dataclass(frozen=True)
class CommandOperation:
    """One command recorded into a command buffer (`command_operation`)."""

    device_ordinal: int
    command_buffer_id: int
    index: int
    op: str  # copy | fill | update | dispatch | barrier | ...
    key: str  # the dispatch's function name, or the op
    length: int  # bytes for copy / fill / update
    source_slot: int | None  # binding slots of a copy (the execute's captured resources, in order)
    target_slot: int | None


@dataclass(frozen=True)
class Copy:
    """A copy a device ran: a queue copy, or a copy inside an executed command buffer."""

    device_ordinal: int
    bytes: int
    submission_id: int
    source_slot: int | None
    target_slot: int | None


@dataclass(frozen=True)
class QueueLog:
    events: tuple[QueueEvent, ...]
    operations: tuple[CommandOperation, ...]

    def copies(self) -> tuple[Copy, ...]:
        """Every copy that ran, in submission order: one per queue copy, and per execute its buffer's copies."""
        recorded: dict[tuple[int, int], list[CommandOperation]] = {}
        for operation in self.operations:
            if operation.op == "copy":
                recorded.setdefault((operation.device_ordinal, operation.command_buffer_id), []).append(operation)
        copies: list[Copy] = []
        for event in self.events:
            if event.op == "copy":
                copies.append(Copy(event.device_ordinal, event.payload_bytes, event.submission_id, None, None))
            elif event.op == "execute" and event.command_buffer_id is not None:
                for operation in recorded.get((event.device_ordinal, event.command_buffer_id), []):
                    copies.append(
                        Copy(event.device_ordinal, operation.length, event.submission_id,
                             operation.source_slot, operation.target_slot)
                    )  # fmt: skip
        return tuple(copies)


def _optional(value: Any) -> int | None:
    return None if value is None or int(value) in (0, NONE) else int(value)


def _slot(value: Any) -> int | None:
    return None if value is None or int(value) == NONE else int(value)


def ireeperf_records(text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each record of an ireeperf-jsonl export with its line number, for every reader of one.

    A torn or non-object line is one error naming its line; an export without
    the schema record is refused once every line has been read.
    """
    saw_schema = False
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise ProfileError(f"profile export line {number} is not a JSON record (truncated file?)") from None
        if not isinstance(record, dict):
            raise ProfileError(f"profile export line {number} is not a JSON record")
        if record.get("record_type") == "schema":
            saw_schema = record.get("format") == "ireeperf-jsonl"
        yield number, record
    if not saw_schema:
        raise ProfileError("not an ireeperf-jsonl export (no schema record)")


def queue_event_from(record: dict[str, Any]) -> QueueEvent:
    """One `queue_event` record as a value (KeyError, TypeError or ValueError when it is malformed)."""
    return QueueEvent(
        str(record["op"]), int(record["submission_id"]), int(record["physical_device_ordinal"]),
        int(record.get("queue_ordinal") or 0), int(record["host_time_ns"]),
        _optional(record.get("ready_host_time_ns")), int(record.get("payload_length") or 0),
        _optional(record.get("command_buffer_id")), _optional(record.get("allocation_id")),
    )  # fmt: skip


def parse_queue_log(text: str) -> QueueLog:
    """Queue events and command operations of an ireeperf-jsonl export (other records are skipped)."""
    events: list[QueueEvent] = []
    operations: list[CommandOperation] = []
    buffer_device: dict[int, int] = {}  # command buffer id -> the device of its latest `command_buffer` record
    for number, record in ireeperf_records(text):
        kind = record.get("record_type")
        try:
            if kind == "command_buffer":
                buffer_device[int(record["command_buffer_id"])] = int(record["physical_device_ordinal"])
            elif kind == "command_operation":
                buffer = int(record["command_buffer_id"])
                operations.append(
                    CommandOperation(
                        buffer_device.get(buffer, 0), buffer, int(record["command_index"]), str(record["op"]),
                        str(record.get("key") or record["op"]), int(record.get("length") or 0),
                        _slot(record.get("source_ordinal")), _slot(record.get("target_ordinal")),
                    )
                )  # fmt: skip
            elif kind == "queue_event":
                events.append(queue_event_from(record))
        except (KeyError, TypeError, ValueError) as exc:
            raise ProfileError(f"profile export line {number}: bad {kind} record ({exc})") from None
    return QueueLog(tuple(events), tuple(operations))


def export_jsonl(bundle: Path, iree_profile: str) -> str:
    """An `.ireeprof` bundle as ireeperf-jsonl text, by `iree-profile export`; one error when it cannot be read.

    The caller passes the tool's path (`profiles.runtime_tool("iree-profile")`),
    so this module depends on nothing but the errors and `profiles` may use it.
    """
    proc = subprocess.run(
        [iree_profile, "export", "--format=ireeperf-jsonl", "--output=-", str(bundle)],
        capture_output=True,
        text=True,
        **child_options(),
    )
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or ["unknown error"])[-1]
        raise ProfileError(f"{bundle}: not a readable .ireeprof bundle ({detail})")
    return proc.stdout


def load_queue_log(bundle: Path, iree_profile: str) -> QueueLog:
    """The queue log of an `.ireeprof` bundle, decoded by `iree-profile export`."""
    return parse_queue_log(export_jsonl(bundle, iree_profile))
