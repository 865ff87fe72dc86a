"""Every number a person reads, written one way: bytes, times, rates and % of bound.

gputop has several faces: the Textual panes and the roofline render snapshot
dataclasses, `gputop report` and `gputop run`'s printout render the report's
JSON dictionaries, and the web view shows the TUI. When each face kept its
own formatters they drifted apart: the TUI and `gputop report` could show a
different % of peak for the same kernel, the same bytes as `1.5 GiB` and
`1.50 GiB`, a call's p95 as `152.5 ms` and `152.455 ms`. This module is the
one place where a number becomes text, so the faces cannot disagree: each of
them passes values (never its own dataclasses or dictionaries) and prints
what comes back. The sentences built from these numbers (the limits a pass
ran under, who else used the GPU) are `gputop.core.wording`'s.

It is engine code, usable by every face: no Textual, no Rich, and nothing of
a live run or the session store. The rules every formatter keeps: an unknown
value (None) is `-`; a value that rounds to zero never reads `-0` (rounding
noise such as -0.0004 is shown as zero); units are SI (decimal) for rates and
work, binary (KiB, MiB) for sizes in memory.

Table columns pick one unit for the whole column (`column`): a column that
reads `19.57 ms` above `4691.2 µs` makes the eye compare digits that do not
compare, so each numeric column takes the unit its largest value reads best
in (three significant digits, under 1000), names it in the header (`avg
ms`), and writes every cell as a bare number in it.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "ABOVE_ESTIMATE",
    "BYTES",
    "ESTIMATE_NOTE",
    "RATE",
    "TIME_US",
    "column",
    "estimate_ratio",
    "fixed",
    "flop_per_byte",
    "gbps",
    "human_bytes",
    "in_unit",
    "mhz",
    "ms",
    "ms_fixed",
    "pct_of_bound",
    "percent",
    "pick_unit",
    "seconds",
    "share_of_ceiling",
    "si",
    "watts",
]

TIME_US = ((1.0, "µs"), (1e3, "ms"), (1e6, "s"))  # value given in µs
RATE = ((1.0, ""), (1e3, "k"), (1e6, "M"), (1e9, "G"), (1e12, "T"), (1e15, "P"))
BYTES = ((1, "B"), (1024, "KiB"), (1024**2, "MiB"), (1024**3, "GiB"), (1024**4, "TiB"))


def fixed(value: float | None, decimals: int = 1) -> str:
    """`value` with `decimals` places (`-` when unknown); what rounds to zero reads `0.0`, never `-0.0`."""
    if value is None:
        return "-"
    text = f"{value:.{decimals}f}"
    if text.startswith("-") and float(text) == 0:
        text = text[1:]
    return text


def _three_digits(scaled: float) -> str:
    """About three significant digits, up to 999: `123`, `12.3`, `1.23`, `0.123`.

    A small value keeps its digits (`0.000488`), but a negative one under 0.0005 is rounding noise
    (two clock readings subtracted; no time, size or rate here is negative) and reads `0`.
    """
    if -0.0005 < scaled <= 0:
        return "0"
    if abs(scaled) >= 99.95:
        return fixed(scaled, 0)
    if abs(scaled) >= 9.995:
        return fixed(scaled, 1)
    if abs(scaled) >= 0.9995:
        return fixed(scaled, 2)
    return f"{scaled:.3g}"


# Bytes


def human_bytes(value: float | None, decimals: int = 1) -> str:
    """A size in binary units: `512 B`, `7.5 MiB`, `23.5 GiB`, `2.0 TiB` (`-` when unknown).

    One decimal reads well beside other figures; `decimals=2` is for sentences that set two close
    sizes side by side (a parameter that cannot be placed, and the room there is), where one decimal
    could print the same number twice, and for the log's line of what a parameter load moved.
    """
    if value is None:
        return "-"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{fixed(size, 0)} {unit}" if unit == "B" else f"{fixed(size, decimals)} {unit}"
        size /= 1024
    raise AssertionError("unreachable: TiB takes every size left")


# Times


def seconds(value: float | None) -> str:
    """A duration given in seconds, in the unit it reads best in: `350 µs`, `46.4 ms`, `1.25 s`; `0 s` for
    none (a phase that took no time, such as a compile the cache answered: a bare `0` names no unit)."""
    if value is None:
        return "-"
    if round(value * 1e6) == 0:
        return "0 s"
    if abs(value) < 1e-3:
        return f"{value * 1e6:.0f} µs"
    return f"{value * 1e3:.1f} ms" if abs(value) < 1 else f"{value:.2f} s"


def ms(value: float | None) -> str:
    """A call's time given in ms, to the microsecond below 10 ms and to 0.1 ms above: `9.301 ms`, `152.5 ms`."""
    if value is None:
        return "-"
    return f"{fixed(value, 3)} ms" if abs(value) < 10 else f"{fixed(value, 1)} ms"


def ms_fixed(value: float | None, decimals: int = 3) -> str:
    """Milliseconds with fixed places, for parts that add up (kernels + gap = the call): `48.022 ms`."""
    return "-" if value is None else f"{fixed(value, decimals)} ms"


# Rates, work and the device's limits


def si(value: float, unit: str = "") -> str:
    """1.87e12 with a unit: `1.87 TFLOP/s` (SI step, three digits); without one, an axis tick: `100G`."""
    for factor, prefix in reversed(RATE):
        if abs(value) >= factor or factor == 1.0:
            scaled = value / factor
            if not unit:
                return f"{scaled:g}{prefix}"
            size = abs(scaled)
            digits = fixed(scaled, 0 if size >= 99.95 else 1 if size >= 9.995 else 2)
            return f"{digits} {prefix}{unit}"
    raise AssertionError("unreachable: the first step takes every value left")


def gbps(value: float | None) -> str:
    """A transfer's rate in decimal GB/s, always in GB/s so a progress line never changes unit: `25.3 GB/s`."""
    return "-" if value is None else f"{fixed(value, 1)} GB/s"


def flop_per_byte(value: float | None) -> str:
    """Arithmetic intensity: `85.2 FLOP/B`."""
    return "-" if value is None else f"{value:.3g} FLOP/B"


def mhz(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f} MHz"


def watts(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f} W"


# Shares


def percent(value: float | None, decimals: int = 1) -> str:
    """A share given in percent: `4.9%` (`-` when unknown, `0.0%` for -0.0004)."""
    return "-" if value is None else f"{fixed(value, decimals)}%"


def estimate_ratio(measured: float | None, estimate: float | None) -> str:
    """A measurement over its estimate: `1.00x`, `0.02x` (`-` where either is unknown or the estimate is 0)."""
    if measured is None or not estimate:
        return "-"
    return f"{_three_digits(measured / estimate)}x"


ABOVE_ESTIMATE = ">100%*"  # a share above an estimated ceiling: the ceiling, not the kernel, is off
ESTIMATE_NOTE = "*estimates: a kernel may beat them"


def share_of_ceiling(pct: float | None, estimate: bool) -> str:
    """A kernel's share of its ceiling: `59.3%`; above 100% of an estimated ceiling, `>100%*`.

    A CPU's peaks are estimates (cores x lanes x FMA x a clock that may not be the turbo one; a copy's
    bandwidth, which cache-resident work beats). A kernel above one shows the ceiling is low, not that
    the kernel did the impossible: it is shown clamped, its `*` pointing at the note that the peaks
    are estimates, never as `103%`. The JSON keeps the computed share and `peaks.estimate`.
    """
    if pct is not None and estimate and pct > 100.0:
        return ABOVE_ESTIMATE
    return percent(pct)


def pct_of_bound(bound: str | None, pct_compute: float | None, pct_bandwidth: float | None) -> float | None:
    """A kernel's share of the ceiling that bounds it, in percent; when a peak is missing, the share of the other.

    The roof over a kernel is the lower of the compute peak and bandwidth times its intensity, so
    its share of that roof is the larger of its two shares (`pct_compute` of the compute peak,
    `pct_bandwidth` of the memory bandwidth); `bound` names it. When one peak is unknown (no
    datasheet bandwidth, or no compute peak for the kernel's element type) the bound is unknown
    too, and the share of the one peak known is shown: a missing roof can only lower the one over
    the kernel, so this share is a floor of the true one, never an overstatement. Showing nothing
    would hide a true figure, and taking only the compute side (as `gputop report` once did) hid
    the share of memory-bound kernels of types without a compute peak. Both shares unknown: None.
    """
    if bound == "memory" and pct_bandwidth is not None:
        return pct_bandwidth
    if bound == "compute" and pct_compute is not None:
        return pct_compute
    known = [value for value in (pct_compute, pct_bandwidth) if value is not None]
    return max(known) if known else None


# Table columns


def pick_unit(values: Sequence[float | None], steps: Sequence[tuple[float, str]]) -> tuple[float, str]:
    """The step (factor, name) in which the largest of `values` is below 1000 (the first if none is known)."""
    known = [abs(v) for v in values if v is not None]
    top = max(known, default=0.0)
    chosen = steps[0]
    for factor, name in steps:
        if top >= factor * 0.9995 or factor == steps[0][0]:
            chosen = (factor, name)
    return chosen


def in_unit(value: float | None, factor: float) -> str:
    """`value` in the column's unit, three significant digits (`-` when unknown)."""
    if value is None:
        return "-"
    return _three_digits(value / factor)


def column(
    name: str, values: Sequence[float | None], steps: Sequence[tuple[float, str]], suffix: str = ""
) -> tuple[str, list[str]]:
    """The header (`avg ms`, `FLOP/s G`) and the cells of one numeric column."""
    factor, unit = pick_unit(values, steps)
    label = f"{name} {unit}{suffix}".rstrip()
    return label, [in_unit(v, factor) for v in values]
