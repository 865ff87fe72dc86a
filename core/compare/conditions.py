"""The conditions of two runs side by side, and the warnings that make their times incomparable.

Target, flags, versions, device, the clocks the calls ran at (NVML's and the
GPU's own counters'), who else used the machine, the inputs and the state:
one `Condition` row each, flagged where a difference makes the times a
comparison of clocks or machines rather than of code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gputop.core.compare.pm_condition import pm_clock_mhz, pm_sampled, pm_sampling_text
from gputop.core.compare.reading import cell_text, report_value
from gputop.core.wording import neighbours_text

__all__ = ["CALL_CLOCK_APART", "CLOCK_APART", "Condition", "report_conditions"]

CLOCK_APART = 0.10  # mean SM clocks this far apart make the comparison one of clocks, flagged at the top
CALL_CLOCK_APART = 0.05  # ... and, over the calls, median SM clocks this far apart (`calls.clocks`)


@dataclass(frozen=True)
class Condition:
    """One condition of the runs (target, flags, versions, device, clocks, inputs), and whether it differs."""

    what: str
    a: str
    b: str
    differs: bool
    warning: bool = False  # a difference that makes the times incomparable (clocks, a cold GPU)


def _inputs_text(report: Mapping[str, Any]) -> str:
    inputs = report.get("inputs") or []
    parts = []
    for item in inputs:
        if isinstance(item, Mapping):
            shape = "x".join(str(d) for d in item.get("shape") or []) or "scalar"
            mean = item.get("mean")
            parts.append(f"{shape}x{item.get('dtype')}" + (f" mean {mean:.4g}" if isinstance(mean, float) else ""))
    return ", ".join(parts) or "-"


def _clocks(report: Mapping[str, Any]) -> Mapping[str, Any] | None:
    clocks = report_value(report, "profile", "clocks")
    return clocks if isinstance(clocks, Mapping) else None


def _call_clocks(report: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """`calls.clocks` where a clock was read (not only a reason), else None."""
    clocks = report_value(report, "calls", "clocks")
    return clocks if isinstance(clocks, Mapping) and clocks.get("sm_mhz_median") else None


def _call_clocks_text(clocks: Mapping[str, Any] | None) -> str:
    """`median 345 MHz (345-1980)`: the SM clock the calls ran at, the row compare shows."""
    if clocks is None:
        return "-"
    low, median, high = clocks.get("sm_mhz_min"), clocks["sm_mhz_median"], clocks.get("sm_mhz_max")
    return f"median {median} MHz" + (f" ({low}-{high})" if low != high else "")


def _call_clock_conditions(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[Condition | None, list[str]]:
    """The SM clock each side's calls ran at, and a warning where their medians are more than 5% apart (calls
    at a lower clock run slower whatever the code) or a side's own clocks moved."""
    ca, cb = _call_clocks(a), _call_clocks(b)
    if ca is None and cb is None:
        return None, []
    warnings = []
    sm_a, sm_b = (ca["sm_mhz_median"] if ca else None), (cb["sm_mhz_median"] if cb else None)
    apart = bool(sm_a and sm_b and abs(sm_b - sm_a) > CALL_CLOCK_APART * max(sm_a, sm_b))
    if apart:
        warnings.append(
            f"the GPU ran the calls at other clocks: median SM {sm_a} MHz in A, {sm_b} MHz in B "
            "(calls at a lower clock are slower whatever the code)"
        )
    for side, clocks in (("A", ca), ("B", cb)):
        if clocks and clocks.get("warning"):
            warnings.append(f"{side}'s calls: {clocks['warning']}")
    ta, tb = _call_clocks_text(ca), _call_clocks_text(cb)
    return Condition("SM clock (calls)", ta, tb, apart or (ca is None) != (cb is None), apart), warnings


def _pm_sampling_conditions(
    a: Mapping[str, Any], b: Mapping[str, Any], clocks_warned: bool
) -> tuple[Condition | None, list[str]]:
    """The GPU's own counters over each side's calls (`pm_sampling`, `compare/pm_condition.py`), where a side sampled
    them, and a warning where the SM clocks they saw are more than 5% apart (unless NVML's clocks said so already)."""
    pa, pb = a.get("pm_sampling"), b.get("pm_sampling")
    if not (pm_sampled(pa) or pm_sampled(pb)):
        return None, []  # neither side sampled (CPU runs, older reports): nothing to set side by side
    sm_a, sm_b = pm_clock_mhz(pa), pm_clock_mhz(pb)
    apart = bool(sm_a and sm_b and abs(sm_b - sm_a) > CALL_CLOCK_APART * max(sm_a, sm_b))
    warnings = []
    if apart and not clocks_warned:
        warnings.append(
            f"the GPU's counters saw other SM clocks over the calls: median {sm_a:.0f} MHz in A, {sm_b:.0f} MHz "
            "in B (calls at a lower clock are slower whatever the code)"
        )
    ta, tb = cell_text(pm_sampling_text(pa)), cell_text(pm_sampling_text(pb))
    return Condition("PM sampling (calls p50)", ta, tb, ta != tb, apart), warnings


def _neighbours_text(neighbours: Any) -> str | None:
    """`host 0.02 of 2 cores; nobody else on cuda:0`: who else used the host and the GPU, the row compare shows."""
    if not isinstance(neighbours, Mapping):
        return None
    parts = []
    host = neighbours.get("host")
    if isinstance(host, Mapping):
        parts.append(f"host {host.get('other_cores', 0):.2f} of {host.get('cores')} cores")
    if neighbours.get("gpu"):
        parts.append(neighbours_text(neighbours) or f"nobody else on {neighbours.get('device_id')}")
    return "; ".join(parts) or None


def _device_text(report: Mapping[str, Any]) -> str:
    device = report.get("device") or {}
    if not isinstance(device, Mapping):
        return "-"
    name = device.get("name") or ""
    return f"{device.get('id', '?')} ({name})" if name and name != device.get("id") else str(device.get("id", "-"))


def report_conditions(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[list[Condition], list[str]]:
    """One row per condition of the runs, in the order compare shows them, and the warnings they raise."""
    rows: list[Condition] = []
    warnings: list[str] = []

    def add(what: str, va: Any, vb: Any, *, warning: bool = False) -> None:
        ta, tb = cell_text(va), cell_text(vb)
        rows.append(Condition(what, ta, tb, ta != tb, warning and ta != tb))

    add("target", a.get("target"), b.get("target"))
    add("target sha256", (a.get("target_sha256") or "")[:16] or None, (b.get("target_sha256") or "")[:16] or None)
    add("function", a.get("function"), b.get("function"))
    add("compile cache key", report_value(a, "compile", "cache_key"), report_value(b, "compile", "cache_key"))
    flags_a = list(report_value(a, "compile", "flags") or [])
    flags_b = list(report_value(b, "compile", "flags") or [])
    only_a = [f for f in flags_a if f not in flags_b]
    only_b = [f for f in flags_b if f not in flags_a]
    rows.append(
        Condition("compile flags", cell_text(only_a) if only_a else "(same)", cell_text(only_b) if only_b else "(same)",
                  bool(only_a or only_b))
    )  # fmt: skip
    add("IREE compiler", report_value(a, "iree_version", "compiler"), report_value(b, "iree_version", "compiler"))
    add("IREE runtime", report_value(a, "iree_version", "runtime"), report_value(b, "iree_version", "runtime"))
    add("gputop", a.get("gputop_version"), b.get("gputop_version"))
    add("device", _device_text(a), _device_text(b), warning=True)
    add("driver", report_value(a, "device", "driver_info"), report_value(b, "device", "driver_info"))
    ca, cb = _clocks(a), _clocks(b)
    if ca or cb:
        sm_a = ca.get("mean_sm_mhz") if ca else None
        sm_b = cb.get("mean_sm_mhz") if cb else None
        apart = bool(sm_a and sm_b and abs(sm_b - sm_a) > CLOCK_APART * max(sm_a, sm_b))
        add(
            "SM clock (profile)",
            f"{sm_a:.0f} MHz" if sm_a else None,
            f"{sm_b:.0f} MHz" if sm_b else None,
        )
        if apart:
            warnings.append(f"the GPU ran at other clocks: mean SM {sm_a:.0f} MHz in A, {sm_b:.0f} MHz in B")
        for side, clocks in (("A", ca), ("B", cb)):
            if clocks and clocks.get("warning"):
                warnings.append(f"{side}'s clocks: {clocks['warning']}")
    call_clocks, clock_warnings = _call_clock_conditions(a, b)
    if call_clocks is not None:
        rows.append(call_clocks)
        warnings += clock_warnings
    pm_row, pm_warnings = _pm_sampling_conditions(a, b, clocks_warned=bool(call_clocks and call_clocks.warning))
    if pm_row is not None:
        rows.append(pm_row)
        warnings += pm_warnings
    for what, path in (("others (calls)", ("neighbours",)), ("others (profile)", ("profile", "neighbours"))):
        na, nb = report_value(a, *path), report_value(b, *path)
        if not (isinstance(na, Mapping) or isinstance(nb, Mapping)):
            continue
        flagged = False
        for side, neighbours in (("A", na), ("B", nb)):
            if isinstance(neighbours, Mapping) and neighbours.get("warning"):
                flagged = True
                warnings.append(f"{side}'s {what.removeprefix('others ').strip('()')}: {neighbours['warning']}")
        # A quiet host's load differs in the second decimal from run to run: only a flagged side makes it differ.
        ta, tb = cell_text(_neighbours_text(na)), cell_text(_neighbours_text(nb))
        rows.append(Condition(what, ta, tb, flagged and ta != tb, flagged and ta != tb))
    add("inputs", _inputs_text(a), _inputs_text(b))
    add("state", a.get("state"), b.get("state"))
    if report_value(a, "device", "id") != report_value(b, "device", "id"):
        warnings.append(f"different devices: {_device_text(a)} against {_device_text(b)}")
    if a.get("target") != b.get("target"):
        warnings.append(f"different targets: {a.get('target')} against {b.get('target')}")
    return rows, warnings
