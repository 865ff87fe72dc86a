"""Reading reports for a comparison: a value at a path, a cell's text, the kept samples, and plain numbers.

A comparison reads report dictionaries only (`gputop run --json`, a
session's `report.json`, with their kept samples, `samples.py`), whatever
gputop wrote them: a key an older report lacks reads as None. The plain
numbers of each side, set side by side without a test (the call breakdown,
the phases, the memory peaks), are `Row`s read here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Row",
    "breakdown_rows",
    "cell_text",
    "memory_rows",
    "number",
    "phase_rows",
    "report_samples",
    "report_value",
]


@dataclass(frozen=True)
class Row:
    """A plain number of each side (a breakdown segment, a phase, a memory peak)."""

    what: str
    a: float | None
    b: float | None
    unit: str  # ms, s, bytes

    @property
    def change(self) -> float | None:
        if self.a is None or self.b is None or not self.a:
            return None
        return self.b / self.a - 1.0


def report_value(report: Mapping[str, Any], *path: str) -> Any:
    """The value at `path` of nested mappings, or None where a key (or a mapping) is missing."""
    value: Any = report
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def cell_text(value: Any) -> str:
    """A value as a table cell shows it: `-` for none, a list's items joined by spaces."""
    if value is None or value == "" or value == []:
        return "-"
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value)
    return str(value)


def report_samples(report: Mapping[str, Any], *path: str) -> Any:
    """The report's kept samples at `path` (`samples.calls.ms`, `samples.dispatches.us`), or None."""
    return report_value(report, "samples", *path)


def number(value: Any) -> float | None:
    """A JSON number as a float; None for anything else (a bool is not a number here)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def breakdown_rows(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Row]:
    """The call breakdown's wall and totals of each side; none where neither side has one."""
    ta = report_value(a, "call_breakdown", "totals") or {}
    tb = report_value(b, "call_breakdown", "totals") or {}
    rows = [
        Row(
            "wall",
            number(report_value(a, "call_breakdown", "wall_ms")),
            number(report_value(b, "call_breakdown", "wall_ms")),
            "ms",
        )
    ]
    for key in list(ta) + [k for k in tb if k not in ta]:
        rows.append(Row(key.removesuffix("_ms"), number(ta.get(key)), number(tb.get(key)), "ms"))
    return rows if ta or tb else []


def phase_rows(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Row]:
    """Each phase either side has, in A's order, then B's own."""
    pa, pb = a.get("phases") or {}, b.get("phases") or {}
    keys = list(pa) + [k for k in pb if k not in pa]
    rows = [Row(k.removesuffix("_s"), number(pa.get(k)), number(pb.get(k)), "s") for k in keys]
    return [r for r in rows if r.a is not None or r.b is not None]


def _memory(report: Mapping[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for dev in report_value(report, "memory", "devices") or []:
        if not isinstance(dev, Mapping):
            continue
        device = str(dev.get("device_id"))
        if (peak := number(dev.get("peak_live_bytes"))) is not None:
            out[f"{device} live peak"] = peak
        for pool in dev.get("pools") or []:
            if isinstance(pool, Mapping) and (value := number(pool.get("peak_bytes"))) is not None:
                out[f"{device} {pool.get('memory_type')} pool peak"] = value
    if (rss := number(report_value(report, "memory", "host_rss_peak_bytes"))) is not None:
        out["host RSS peak"] = rss
    return out


def memory_rows(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Row]:
    """Each device's live and pool peaks and the host's RSS peak, side by side."""
    ma, mb = _memory(a), _memory(b)
    keys = list(ma) + [k for k in mb if k not in ma]
    return [Row(k, ma.get(k), mb.get(k), "bytes") for k in keys]
