"""What `gputop fleet` says of a run: a fleet row's cells and its one line in full, in plain text.

The view (`gputop.tui.screens.fleet`, which adds the colours) and `gputop fleet --json` read the same
`FleetRow`s; the cells are written here with the units every face prints a figure in (the bridge's
`seconds`, `human_bytes`), so a p95 in the fleet reads as it does in the Run pane.
"""

from __future__ import annotations

from pathlib import PurePath

from gputop.tui.bridge import FleetRow, human_bytes, seconds

__all__ = ["FLEET_HEADERS", "calls_rate", "detail_parts", "fleet_cells", "memory_text", "what_runs"]

FLEET_HEADERS: tuple[str, ...] = ("host", "gpu", "run", "what", "function", "p50", "p95", "calls/s", "SM MHz")
FLEET_HEADERS += ("memory", "growth", "state", "⚠")


def calls_rate(value: float | None) -> str:
    """Calls a second, three digits or whole: `0.52`, `12.3`, `845`, `12,400`."""
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def what_runs(row: FleetRow) -> str:
    """The program watched (its command, cut at 28 cells), else the target's file name."""
    if row.program:
        return row.program if len(row.program) <= 28 else row.program[:27] + "…"
    return PurePath(row.target).name if row.target else "-"


def memory_text(row: FleetRow) -> str:
    """The device's memory in use and its share: `91 GiB 65%`, `7.5 GiB 5%` (whole GiB from 10: a narrow cell)."""
    used = row.memory_used_bytes
    if used is None:
        return "-"
    text = human_bytes(used, 0 if used >= 10 * 2**30 else 1)
    return f"{text} {100 * used / row.memory_total_bytes:.0f}%" if row.memory_total_bytes else text


def fleet_cells(row: FleetRow) -> tuple[str, ...]:
    """The row's cells, in `FLEET_HEADERS` order."""
    function = row.function or "-"
    if row.functions > 1:
        function += f" +{row.functions - 1}"
    return (
        row.host,
        row.gpu or "-",
        row.run or "?",
        what_runs(row),
        function,
        seconds(row.p50_s),
        seconds(row.p95_s),
        calls_rate(row.calls_per_s),
        f"{row.sm_clock_hz / 1e6:.0f}" if row.sm_clock_hz else "-",
        memory_text(row),
        f"+{human_bytes(row.growth_bytes_per_call, 0)}" if row.growth_bytes_per_call else "-",
        row.state or "?",
        "⚠" if row.hints else "",  # how many and which: the line under the table
    )


def detail_parts(row: FleetRow) -> list[str]:
    """The row at the cursor in full, field by field: what the columns cut or leave out."""
    parts = [f"{row.host} {row.run or '(no run label: a gputop serve older than gputop fleet)'}"]
    parts += [" ".join(part for part in (row.device, row.gpu_name) if part)]
    parts += [row.program or row.target, f"via {row.instance}" if row.instance else ""]
    if row.function:
        others = f" (of {row.functions} functions)" if row.functions > 1 else ""
        parts.append(f"{row.function}{others}")
    if row.over == "run":
        parts.append("p50/p95 over the whole run: no calls in the window")
    if row.growth_bytes_per_call:
        parts.append(f"memory grows {human_bytes(row.growth_bytes_per_call)} a call")
    if row.hints:
        parts.append("⚠ " + ", ".join(row.hints))
    return [part for part in parts if part]
