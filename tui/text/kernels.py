"""A profile pass in a report's text: its kernels line, limits, cost, kernel table, call breakdown and hints.

`gputop run --profile`'s and `gputop report`'s kernels part. Each number is
written as the Kernels pane writes it (one unit per column, `>100%*` above an
estimated ceiling), the limits and the work in the engine's own sentences, so
the printout and the TUI agree.
"""

from __future__ import annotations

from typing import Any

from gputop.tui.bridge import (
    ABOVE_ESTIMATE,
    ESTIMATE_NOTE,
    NAME_MARK,
    RATE,
    TIME_US,
    breakdown_cost_text,
    column,
    kernels_cost_text,
    limits_lines,
    ms_fixed,
    name_marked,
    neighbours_lines,
    overhead_text,
    overhead_warning,
    pct_of_bound,
    percent,
    share_of_ceiling,
    work_lines,
)
from gputop.tui.text.layers import REPORT_FROM_WIDTH, from_cell

__all__ = ["BREAKDOWN_ROWS", "KERNEL_NUMBERS", "breakdown_table", "kernel_table", "kernels_lines", "overhead_lines"]


def kernels_lines(report: dict[str, Any]) -> list[str]:
    """The profile pass's part of a report, in the order a person reads it; nothing without kernels."""
    kernels = report.get("kernels") or []
    if not kernels:
        return []
    profile = report.get("profile") or {}
    lines = [_pass_line(report, profile)]
    lines.extend(limits_lines(profile))
    lines.extend(overhead_lines(profile))
    lines.extend(neighbours_lines(profile.get("neighbours"), "pass"))
    estimate = bool((profile.get("peaks") or {}).get("estimate"))
    table = kernel_table(kernels, estimate)
    lines.extend("  " + line for line in table.splitlines())
    if ABOVE_ESTIMATE in table:
        lines.append(f"          {ESTIMATE_NOTE} (the peaks line says how they were estimated)")
    lines.extend(work_lines(kernels))
    breakdown = report.get("call_breakdown")
    if breakdown:
        lines.extend(breakdown_table(breakdown))
    lines.extend(f"hint      {hint}" for hint in report.get("hints") or [])
    if profile.get("trace_path"):
        lines.append(f"trace     {profile['trace_path']} (open in Perfetto)")
    return lines


def _pass_line(report: dict[str, Any], profile: dict[str, Any]) -> str:
    """`kernels   cupti over 10 calls: 0.700 ms kernel time per call of 0.712 ms synced (gap 0.012 ms)`."""
    line = (
        f"kernels   {profile.get('source')} over {profile.get('calls')} calls: "
        f"{ms_fixed(report['call_kernel_ms'])} kernel time per call"
    )
    if report.get("call_wall_ms") is None:
        return line
    gap = report["call_gap_ms"]
    said = f"gap {ms_fixed(gap)})" if gap >= 0 else "dispatches overlap: their summed time exceeds the call)"
    return f"{line} of {ms_fixed(report['call_wall_ms'])} synced ({said}"


def overhead_lines(profile: dict[str, Any]) -> list[str]:
    """The pass's own cost: its calls against unprofiled ones, how those were had, and a warning over 1.05."""
    cost = profile.get("overhead")
    if not cost:
        return []
    lines = [f"overhead  {overhead_text(cost)}", f"          unprofiled: {cost['method']}"]
    warning = overhead_warning(cost, profile.get("profiling_on"))
    if warning:
        lines.append(f"WARNING   {warning}")
    separate = kernels_cost_text(profile.get("kernels_overhead"))
    if separate:
        lines.append(f"kernels   {separate}")
        lines.append(f"          {overhead_text(profile['kernels_overhead'])}, {profile.get('kernels_profiling_on')}")
    apart = breakdown_cost_text(profile.get("breakdown_overhead"))
    if apart:
        lines.append(f"breakdown {apart}")
        on = profile.get("breakdown_profiling_on")
        lines.append(f"          {overhead_text(profile['breakdown_overhead'])}, {on}")
    return lines


BREAKDOWN_ROWS = (
    ("host_ms", "host", "the host working, nothing submitted pending"),
    ("queue_ms", "queue", "queue operations submitted, not yet running or done"),
    ("alloc_ms", "alloc", "queue-ordered allocations and frees pending"),
    ("device_busy_ms", "device busy", "dispatches running"),
    ("device_idle_ms", "device idle", "inside a device submission, no dispatch running"),
    ("return_wait_ms", "return wait", "device done, host not yet back"),
    ("unaccounted_ms", "unaccounted", "outside what the records see"),
)


def breakdown_table(breakdown: dict[str, Any]) -> list[str]:
    """`gputop run --profile`'s call breakdown: each part's time per call and share, largest marked."""
    wall = breakdown["wall_ms"] or 0.0
    totals = breakdown["totals"]
    largest = max((key for key, _, _ in BREAKDOWN_ROWS[:-1]), key=lambda key: totals.get(key, 0.0))
    lines = [
        f"breakdown {breakdown['calls']} calls, {ms_fixed(wall)} synced per call, "
        f"kernels {ms_fixed(breakdown['kernel_ms'])} "
        f"({'timed in another run' if breakdown.get('kernels_apart') else 'inside device busy'}); "
        f"from {breakdown['source']}",
        f"          device time on the host clock: {breakdown['fit']}",
    ]
    for key, label, meaning in BREAKDOWN_ROWS:
        value = totals.get(key, 0.0)
        share = percent(100 * value / wall).rjust(6) if wall else "    -"
        mark = "  <- largest" if key == largest and value > 0 else ""
        lines.append(f"  {label:<12} {ms_fixed(value):>13}  {share}  {meaning}{mark}")
    return lines


KERNEL_NUMBERS = ("avg", "min", "max", "share", "FLOP", "B", "FLOP/s", "B/s", "%peak")


def kernel_table(kernels: list[dict[str, Any]], estimate: bool = False) -> str:
    """The report's kernels, one row each, its numbers written as the Kernels pane writes them
    (`estimate`: the peaks are estimates, and a share above them is `>100%*`).

    Each numeric column is in the one unit the pane would pick for it (`avg ms`, `GFLOP/s`); the
    full dispatch names, the FLOPs and bytes of one dispatch are the report's own (the pane has
    no room for them). A name marked `*` has its work read from the name (`work_lines` says so).
    """
    labels: dict[str, str] = {}
    cells: dict[str, list[str]] = {}
    for name in ("avg", "min", "max"):
        labels[name], cells[name] = column(name, [k.get(f"{name}_us") for k in kernels], TIME_US)
    labels["share"], cells["share"] = "share", [percent(k["share"] * 100) for k in kernels]
    for name, values in (
        ("FLOP", [k.get("flops") for k in kernels]),
        ("B", [k.get("bytes") for k in kernels]),
        ("FLOP/s", [_scaled(k.get("achieved_tflops"), 1e12) for k in kernels]),
        ("B/s", [_scaled(k.get("achieved_gbps"), 1e9) for k in kernels]),
    ):
        prefix, cells[name] = column("", values, RATE)
        labels[name] = f"{prefix.strip()}{name}"  # GFLOP, MB, GFLOP/s, MB/s
    labels["%peak"] = "%peak"
    cells["%peak"] = [
        share_of_ceiling(pct_of_bound(k.get("bound"), k.get("pct_peak_compute"), k.get("pct_peak_bandwidth")), estimate)
        for k in kernels
    ]
    header = ("kernel", "from", "count", *(labels[n] for n in KERNEL_NUMBERS), "bound")
    rows = [header] + [
        (
            k["name"] + (f" {NAME_MARK}" if name_marked(k) else ""),
            from_cell(k, REPORT_FROM_WIDTH),
            str(k["count"]),
            *(cells[n][i] for n in KERNEL_NUMBERS),
            k.get("bound") or "-",
        )
        for i, k in enumerate(kernels)
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    last = len(header) - 1

    def cell(i: int, text: str) -> str:  # the names (kernel, from) left-aligned, the numbers right
        return text if i == last else text.ljust(widths[i]) if i <= 1 else text.rjust(widths[i])

    return "\n".join("  ".join(cell(i, text) for i, text in enumerate(row)).rstrip() for row in rows)


def _scaled(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor
