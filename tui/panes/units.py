"""One unit per table column, chosen from the column's range.

A column that reads `19.57 ms` above `4691.2 µs` makes the eye compare
digits that do not compare. Each numeric column here picks the one unit its
largest value reads best in (three significant digits, under 1000), names it
in the header (`avg ms`), and writes every cell as a bare number in it, so
the column lines up and is narrower than cells that each carry a unit.
"""

from __future__ import annotations

from collections.abc import Sequence

TIME_US = ((1.0, "µs"), (1e3, "ms"), (1e6, "s"))  # value given in µs
RATE = ((1.0, ""), (1e3, "k"), (1e6, "M"), (1e9, "G"), (1e12, "T"), (1e15, "P"))
BYTES = ((1, "B"), (1024, "KiB"), (1024**2, "MiB"), (1024**3, "GiB"), (1024**4, "TiB"))


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
    scaled = value / factor
    if scaled == 0:
        return "0"
    if abs(scaled) >= 99.95:
        return f"{scaled:.0f}"
    if abs(scaled) >= 9.995:
        return f"{scaled:.1f}"
    if abs(scaled) >= 0.9995:
        return f"{scaled:.2f}"
    return f"{scaled:.3g}"


def column(
    name: str, values: Sequence[float | None], steps: Sequence[tuple[float, str]], suffix: str = ""
) -> tuple[str, list[str]]:
    """The header (`avg ms`, `FLOP/s G`) and the cells of one numeric column."""
    factor, unit = pick_unit(values, steps)
    label = f"{name} {unit}{suffix}".rstrip()
    return label, [in_unit(v, factor) for v in values]


def si(value: float, unit: str = "") -> str:
    """1.87e12 with a unit: `1.87 TFLOP/s` (SI step, three digits); without one, an axis tick: `100G`."""
    for factor, prefix in reversed(RATE):
        if value >= factor or factor == 1.0:
            scaled = value / factor
            if not unit:
                return f"{scaled:g}{prefix}"
            digits = f"{scaled:.0f}" if scaled >= 99.95 else f"{scaled:.1f}" if scaled >= 9.995 else f"{scaled:.2f}"
            return f"{digits} {prefix}{unit}"
    return ""
