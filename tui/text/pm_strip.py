"""The GPU's own counters in the Run pane: the PM sampling strip's lines (issue 48).

A profile pass says where one call's time went; the strip says what the GPU
did over the last seconds while the calls went on: how busy its SMs, tensor
pipes and DRAM were (percent of the part's peak) and its SM clock, each as a
sparkline with its newest value (a quarter second without samples drawn apart
from an idle one: `MISSING`). It is text built here from the snapshot's
`PmSampling`, not in the pane, so it is tested without the app and fits any
width the pane has: two metrics a line where the sparklines keep some length,
one a line where the pane is narrow (a narrower pane shows fewer of the last
seconds, a quarter second a character), and the calls' median and 95th
percentile on lines of their own where the pane has the rows for them. When it
does not sample, one line says why; on a CPU device nothing (no GPU counters
there is no news, as the clock line says nothing there either).
"""

from __future__ import annotations

from collections.abc import Sequence

from gputop.tui.bridge import PmMetric, PmSampling, mhz, percent

__all__ = ["BLOCKS", "MISSING", "cut_end", "pm_calls_lines", "pm_strip_lines", "sparkline", "value_text"]

BLOCKS = "▁▂▃▄▅▆▇█"
MISSING = "·"  # a quarter second without samples: not read, which a blank (read as idle) would hide
PAIR_MIN_SPARK = 10  # two metrics a line while each sparkline keeps at least this many points, else one a line
GAP = "  "  # between the two metrics of a line
# A clock's sparkline spans at least this share of its highest point: boost clocks wander by a few MHz, and
# scaled to their own min..max those few MHz would draw as a cliff.
CLOCK_SPAN_MIN = 0.1


def sparkline(series: Sequence[float | None], unit: str, width: int) -> str:
    """The newest `width` points of `series` (oldest first) as block characters, one a bin (`bin_s`), the newest
    at the right end.

    A narrow pane shows fewer seconds rather than merged bins: a bin is a quarter second, the length of an
    idle gap between bursts of calls, and averaged with its neighbours the gap would be gone. Percentages
    are drawn against 0..100 (how busy, against the part's peak); a clock in MHz against its own range. A
    point of 0 is a blank: an idle GPU (its counters read, and read nothing), told from a busy 3% (▁). A
    point without samples (None: before sampling began, a pause, a profile pass) is `MISSING`, neither a
    blank nor a block: a gap in what was read is not an idle GPU.
    """
    points = list(series[-width:]) if width > 0 else []
    if not points:
        return ""
    if unit == "%":
        low, high = 0.0, 100.0
    else:
        drawn = [p for p in points if p is not None and p > 0]
        high = max(drawn, default=0.0)
        low = min(min(drawn, default=0.0), high * (1 - CLOCK_SPAN_MIN))
    span = high - low
    cells = []
    for point in points:
        if point is None:
            cells.append(MISSING)
            continue
        if point <= 0:
            cells.append(" ")
            continue
        level = (point - low) / span if span > 0 else 1.0
        cells.append(BLOCKS[min(len(BLOCKS) - 1, max(0, int(level * len(BLOCKS))))])
    return "".join(cells)


def value_text(value: float | None, unit: str) -> str:
    """A metric's value as the strip writes it: `7.9%`, `1995 MHz` (`-` when it has none)."""
    if value is None:
        return "-"
    return mhz(value) if unit == "MHz" else percent(value)


def pm_strip_lines(pm: PmSampling | None, device_kind: str | None, width: int) -> list[str]:
    """The strip's lines in `width` columns: `SM ▁▂▅▇ 7.9%  tensor ▁▁▁▁ 0.0%` and `DRAM ▂▃▅▅ 0.9%  clock ▇▇▇▇
    1995 MHz` while it samples (and, frozen, once the run has ended); `pm  paused: <why>` while it does not;
    nothing on a CPU device, or before the engine has a word on it (`pm` is None)."""
    if pm is None or device_kind != "gpu":
        return []
    if not pm.metrics or pm.state not in ("sampling", "ended"):
        if pm.state == "ended":  # it never sampled, and said why while the run went on
            return []
        return [cut_end(f"pm  {pm.state}: {pm.reason or 'no metrics'}", width)]
    metrics = pm.metrics
    per_line = 2 if _spark_width(metrics[:2], width) >= PAIR_MIN_SPARK else 1
    columns = [metrics[column::per_line] for column in range(per_line)]
    # Each column's labels and values padded alike, so the sparklines of a column start and end together.
    label_widths = [max(len(m.label) for m in column) for column in columns]
    value_widths = [max(_value_width(m.unit) for m in column) for column in columns]
    fixed_cells = sum(label_widths) + sum(value_widths) + 2 * per_line + len(GAP) * (per_line - 1)
    spark = max(1, (width - fixed_cells) // per_line)
    lines = []
    for first in range(0, len(metrics), per_line):
        cells = []
        for column, index in enumerate(range(first, min(first + per_line, len(metrics)))):
            metric = metrics[index]
            series = pm.series[index] if index < len(pm.series) else ()
            newest = pm.newest[index] if index < len(pm.newest) else None
            label = metric.label.ljust(label_widths[column])
            value = value_text(newest, metric.unit).ljust(value_widths[column])
            cells.append(f"{label} {sparkline(series, metric.unit, spark).ljust(spark)} {value}")
        lines.append(GAP.join(cells).rstrip())
    return lines


def cut_end(text: str, width: int) -> str:
    """`text` in at most `width` characters, its end given up for `…` (a reason reads from its start)."""
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def _value_width(unit: str) -> int:
    return len("1995 MHz") if unit == "MHz" else len("100.0%")


def _spark_width(metrics: Sequence[PmMetric], width: int) -> int:
    """Each sparkline's length with `metrics` side by side on one line of `width`."""
    fixed_cells = sum(len(m.label) + 2 + _value_width(m.unit) for m in metrics) + len(GAP) * (len(metrics) - 1)
    return (width - fixed_cells) // max(1, len(metrics))


def pm_calls_lines(pm: PmSampling | None, device_kind: str | None, width: int) -> list[str]:
    """`over 55 calls: SM p50 4.8% p95 5.1%  tensor p50 0.0% p95 0.0%  ...`: each metric's median and 95th
    percentile of the calls' own averages, in as many lines of `width` as they take (a metric's figures are
    never split); none before samples covered a call."""
    if pm is None or device_kind != "gpu" or not pm.calls or not pm.calls_aligned:
        return []
    parts = [f"over {pm.calls_aligned} {'call' if pm.calls_aligned == 1 else 'calls'}:"]
    for metric in pm.metrics:
        figures = pm.figures(metric.name)
        if figures is not None:
            p50, p95 = value_text(figures.p50, metric.unit), value_text(figures.p95, metric.unit)
            parts.append(f"{metric.label} p50 {p50} p95 {p95}")
    lines = [parts[0]]
    for part in parts[1:]:
        joined = f"{lines[-1]}{' ' if lines[-1].endswith(':') else GAP}{part}"
        if len(joined) <= width:
            lines[-1] = joined
        else:
            lines.append(part)
    return [cut_end(line, width) for line in lines]
