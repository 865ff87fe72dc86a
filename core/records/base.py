"""Turning records into JSON, and the clock that stamps them.

Every record is a frozen dataclass; `to_json` turns any of them (or a tuple,
list or dict of them) into JSON-ready data without knowing which it is, and
`now` is the one clock their `timestamp` fields read. Everything else in
`records` imports this module; it imports nothing of gputop's.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

__all__ = ["now", "to_json"]


def now() -> float:
    """Wall-clock time for stamping records (seconds since the epoch)."""
    return time.time()


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def to_json(value: Any) -> Any:
    """Turn a record (or a tuple/list/dict of them) into JSON-ready data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # Field names cached per class: a running session turns ten snapshots a second into JSON.
        return {name: to_json(getattr(value, name)) for name in _field_names(type(value))}
    if isinstance(value, (int, float, str)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    return value
