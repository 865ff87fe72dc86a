"""The counters pass in plain text: `gputop run --counters`' and `gputop report`'s lines of it.

Nsight Compute's figures per kernel are many; the printout keeps what a person
compares at a glance (time, measured FLOPs and DRAM bytes against the estimate,
throughput, occupancy, launch shape, clock), then each kernel's speed-of-light
verdict, with the model's layer the kernel came from, and the rule ncu expects
most from, one line each. Everything else
(every rule, the per-precision FLOPs, the command) is in the JSON
(`kernels[].counters`, `counters_pass`). Numbers are written by
the engine's units, as every other face writes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gputop.tui.bridge import RATE, TIME_US, column, dram_bytes, estimate_ratio, estimated_work, fixed, percent, seconds
from gputop.tui.text.layers import from_cell

__all__ = ["COUNTER_COLUMNS", "counters_lines"]

COUNTER_COLUMNS = (
    "kernel", "launches", "time", "FLOP", "vs est", "DRAM rd", "DRAM wr", "DRAM/est", "L2",
    "SM%", "DRAM%", "occ%", "regs", "smem", "block", "grid", "SM MHz",
)  # fmt: skip


def _table(kernels: Sequence[Mapping[str, Any]]) -> list[str]:
    rows = [(k, k["counters"]) for k in kernels if k.get("counters")]
    labels: dict[str, str] = {}
    cells: dict[str, list[str]] = {}
    labels["time"], cells["time"] = column("time", [c.get("time_us") for _, c in rows], TIME_US)
    for name, values in (
        ("FLOP", [c.get("flops") for _, c in rows]),
        ("DRAM rd", [c.get("dram_read_bytes") for _, c in rows]),
        ("DRAM wr", [c.get("dram_write_bytes") for _, c in rows]),
        ("L2", [c.get("l2_bytes") for _, c in rows]),
    ):
        prefix, cells[name] = column("", values, RATE)
        unit = "" if name == "FLOP" else "B"
        labels[name] = f"{name} {prefix.strip()}{unit}".rstrip()
    table = [tuple(labels.get(name, name) for name in COUNTER_COLUMNS)]
    for index, (kernel, c) in enumerate(rows):
        flops, size, source = estimated_work(kernel)
        ratio = estimate_ratio(c.get("flops"), flops)
        table.append(
            (
                str(kernel["name"]),
                str(c.get("launches", 1)),
                cells["time"][index],
                cells["FLOP"][index],
                f"{ratio} {source}" if ratio != "-" and source else ratio,
                cells["DRAM rd"][index],
                cells["DRAM wr"][index],
                estimate_ratio(dram_bytes(c), size),
                cells["L2"][index],
                percent(c.get("sm_pct")),
                percent(c.get("dram_pct")),
                percent(c.get("occupancy_pct")),
                _whole(c.get("registers_per_thread")),
                _whole(c.get("shared_bytes_per_block")),
                _whole(c.get("block_size")),
                _whole(c.get("grid_size")),
                fixed(c.get("sm_mhz"), 0),
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(COUNTER_COLUMNS))]
    return [
        "  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)).rstrip()
        for row in table
    ]


def _whole(value: float | None) -> str:
    return "-" if value is None else str(round(value))


def _advice(kernels: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each kernel's verdict (naming the layer it came from, `from_cell`), and the rule with the largest
    estimated speedup."""
    lines = []
    for kernel in kernels:
        c = kernel.get("counters")
        if not c:
            continue
        if c.get("verdict"):
            came = from_cell(kernel)
            origin = f" (from {came})" if came != "-" else ""
            lines.append(f"verdict   {kernel['name']}{origin}: {c['verdict']}")
        rules = [r for r in c.get("rules") or () if r.get("text")]
        if rules:
            best = max(rules, key=lambda r: r.get("speedup_pct") or 0.0)
            gain = best.get("speedup_pct")
            speedup = f", est. speedup {percent(gain)} {best.get('speedup_type') or ''}".rstrip() if gain else ""
            lines.append(f"          {best['name']}{speedup}: {best['text']}")
    return lines


def counters_lines(report: Mapping[str, Any]) -> list[str]:
    """The counters pass's lines of a report: what it cost, its table and verdicts, or why there is none."""
    counters = report.get("counters_pass")
    if not counters:
        return []
    if counters.get("error"):
        where = f" (log {counters['log_path']})" if counters.get("log_path") else ""
        what = "failed" if counters.get("calls") else "not taken"
        return [f"counters  {what}: {counters['error']}{where}"]
    kernels = list(report.get("kernels") or [])
    report_path = f"; report {counters['report_path']}" if counters.get("report_path") else ""
    lines = [
        f"counters  {counters['source']}: {counters['calls']} call in {seconds(counters['wall_s'])} wall "
        f"(the run made {counters.get('live_calls', 0)} calls meanwhile){report_path}"
    ]
    unmatched = [k for k in counters.get("unmatched") or () if isinstance(k, dict)]
    shown = [*kernels, *({"name": k["name"], "counters": k} for k in unmatched)]
    lines.extend("  " + line for line in _table(shown))
    lines.extend(_advice(shown))
    if unmatched:
        lines.append(f"          {len(unmatched)} kernels measured by ncu are not in the Kernels table (named apart)")
    return lines
