"""Snapshots back from JSON: recorded runs replayed exactly as they were seen.

A run's snapshots are written as JSON lines (`to_json`). Reading them back
into the same frozen dataclasses lets the TUI show a recorded run with the
very code that shows a live one: that is how its visual tests stay
deterministic and how a finished session can be opened again.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any

from gputop.core.errors import UsageError
from gputop.core.records.base import to_json
from gputop.core.snapshot import RunSnapshot

__all__ = ["read_snapshots", "snapshot_from_json", "value_from_json", "write_snapshots"]

T = typing.TypeVar("T")
_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _convert(kind: Any, value: Any) -> Any:
    """`value` (from JSON) as the annotated type `kind`: nested values, tuples, optionals."""
    if value is None:
        return None
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(kind) if a is not type(None)]
        return _convert(options[0], value) if len(options) == 1 else value
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        return value_from_json(kind, value)
    if origin is tuple:
        args = typing.get_args(kind)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(args[0], v) for v in value)
        return tuple(_convert(a, v) for a, v in zip(args, value, strict=True))
    if origin is dict:
        _, item = typing.get_args(kind)
        return {k: _convert(item, v) for k, v in value.items()}
    return value


def value_from_json(cls: type[T], data: dict[str, Any]) -> T:
    """Rebuild the frozen value `cls` from what `to_json` made of it.

    Keys this gputop does not know are ignored and fields the record lacks
    take their defaults, so sessions recorded by an older or newer gputop open.
    """
    if not isinstance(data, dict):
        raise TypeError(f"{cls.__name__}: expected an object, got {type(data).__name__}")
    hints = _hints(cls)
    fields = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    return cls(**{name: _convert(hints[name], value) for name, value in data.items() if name in fields})


def snapshot_from_json(data: dict[str, Any]) -> RunSnapshot:
    """Rebuild a `RunSnapshot` from what `to_json` made of it."""
    try:
        return value_from_json(RunSnapshot, data)
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
