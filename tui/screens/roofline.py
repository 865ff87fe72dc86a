"""The roofline view (`f`): every kernel placed under the device's compute and memory ceilings.

On log-log axes of FLOP per byte against FLOP/s, a device's limits are two
lines: the memory roof (bandwidth times intensity) rising to the ridge, and
the flat compute roof beyond it. A kernel sits at its own intensity and
achieved rate; its distance below the roof is what a compiler could still
win. Drawn in a terminal with Unicode braille (2x4 dots a cell), the ceilings
at the pass's clock solid and the datasheet's dotted when the clock was lower,
each kernel as its number, with a legend that says the numbers (and the
model's layer each kernel came from, as the Kernels pane's `from`). A kernel
whose work a counters pass measured (`n`) is drawn twice: green where its
measured FLOPs and DRAM bytes put it, dim where the estimate (from the IR or
the dispatch name) put it, dots between, so the gap between them shows.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field

from rich.console import Console
from rich.text import Text
from textual.binding import Binding

from gputop.tui.bridge import (
    CountersPass,
    KernelTiming,
    ProfileSummary,
    RunSnapshot,
    estimate_ratio,
    flop_per_byte,
    mhz,
    pct_of_bound,
    ridge_intensity,
    share_of_ceiling,
    si,
)
from gputop.tui.panes.kernels import dispatch_number, without_function
from gputop.tui.screens.window import DrawnWindow
from gputop.tui.text.layers import FROM_WIDTH, from_cell, origin_of
from gputop.tui.text.program import no_profile_text

__all__ = ["BrailleCanvas", "LogAxis", "RooflineScreen", "render_roofline"]

BRAILLE_BASE = 0x2800
# Dot bit for (column 0..1, row 0..3) inside a braille cell (Unicode's 8-dot layout).
DOT_BITS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))
MARKERS = "abcdefghijklmnopqrstuvwxyz"  # for kernels without a dispatch number (the Kernels pane shows names)
AXIS_WIDTH = 7
LEGEND_ROWS = 9
MEASURED_STYLE = "bold green"
ESTIMATE_STYLE = "dim yellow"


@dataclass
class BrailleCanvas:
    """A grid of braille cells addressed in dots, with single characters laid over chosen cells."""

    columns: int
    rows: int
    bits: list[list[int]] = field(init=False)
    styles: list[list[str]] = field(init=False)
    labels: dict[tuple[int, int], tuple[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.bits = [[0] * self.columns for _ in range(self.rows)]
        self.styles = [[""] * self.columns for _ in range(self.rows)]

    @property
    def width(self) -> int:
        return self.columns * 2

    @property
    def height(self) -> int:
        return self.rows * 4

    def dot(self, x: int, y: int, style: str) -> None:
        """Set the dot at (x, y), y counted from the top."""
        if 0 <= x < self.width and 0 <= y < self.height:
            row, column = y // 4, x // 2
            self.bits[row][column] |= DOT_BITS[y % 4][x % 2]
            self.styles[row][column] = style

    def line(self, x0: float, y0: float, x1: float, y1: float, style: str, every: int = 1) -> None:
        steps = max(int(max(abs(x1 - x0), abs(y1 - y0))), 1)
        for step in range(0, steps + 1, every):
            t = step / steps
            self.dot(round(x0 + (x1 - x0) * t), round(y0 + (y1 - y0) * t), style)

    def label(self, x: int, y: int, text: str, style: str) -> None:
        """Put `text` over the cell holding dot (x, y) and the cells after it (moved left to fit)."""
        column = min(max(x // 2, 0), self.columns - len(text))
        row = min(max(y // 4, 0), self.rows - 1)
        for offset, char in enumerate(text):
            self.labels[(row, column + offset)] = (char, style)

    def text_row(self, row: int) -> Text:
        line = Text()
        for column in range(self.columns):
            if (row, column) in self.labels:
                char, style = self.labels[(row, column)]
                line.append(char, style)
            elif self.bits[row][column]:
                line.append(chr(BRAILLE_BASE + self.bits[row][column]), self.styles[row][column])
            else:
                line.append(" ")
        return line


@dataclass(frozen=True)
class LogAxis:
    """A log10 axis from `low` to `high` (decades) over `size` dots."""

    low: float
    high: float
    size: int

    def at(self, value: float) -> float:
        return (math.log10(value) - self.low) / (self.high - self.low) * (self.size - 1)


def estimate_point(kernel: KernelTiming) -> tuple[float, float] | None:
    """Where the estimate put a measured kernel: (FLOP per byte, FLOP/s at its time); None where it had none."""
    flops, size = kernel.estimate_flops, kernel.estimate_bytes
    if kernel.work_source != "counters" or not flops or not size or kernel.avg_us <= 0:
        return None
    return flops / size, flops / (kernel.avg_us * 1e-6)


def render_roofline(
    profile: ProfileSummary | None,
    width: int,
    height: int,
    function: str = "",
    counters: CountersPass | None = None,
    missing: str = "no profile yet: press p to profile the running module, then f",
) -> Text:
    """The roofline chart, its axes and its legend, `width` columns wide and about `height` rows high; without a
    profile, `missing` says why."""
    if profile is None:
        return Text(missing, style="dim")
    peaks = profile.peaks
    placed = [k for k in profile.kernels if k.intensity and k.achieved_tflops]
    if peaks is None or not peaks.bandwidth_gbps:
        why = profile.peaks_reason or "the device's peaks are unknown"
        return Text(f"no roofline: {why}", style="dim")
    bandwidth = peaks.bandwidth_gbps * peaks.bandwidth_scale * 1e9
    ceilings = sorted({round(k.peak_tflops, 6) for k in profile.kernels if k.peak_tflops} or _f32_ceiling(profile))
    if not ceilings:
        return Text("no roofline: the device's compute peak is unknown", style="dim")
    top = max(ceilings) * 1e12
    nominal_top = top / peaks.compute_scale if peaks.compute_scale < 0.99 else top
    ridge = ridge_intensity(max(ceilings), bandwidth / 1e9)
    estimates = {k.name: point for k in placed if (point := estimate_point(k)) is not None}
    intensities = [k.intensity for k in placed if k.intensity] + [x for x, _ in estimates.values()]
    rates = [k.achieved_tflops * 1e12 for k in placed if k.achieved_tflops] + [y for _, y in estimates.values()]
    # Two decades of memory roof below the ridge, and room for every kernel on either side.
    x_low = math.floor(math.log10(min([*intensities, ridge / 100]) / 2))
    x_axis = LogAxis(x_low, max(math.ceil(math.log10(max([*intensities, ridge]) * 4)), x_low + 2), 0)
    y_axis = LogAxis(math.floor(math.log10(min([*rates, top / 100]) / 2)), math.ceil(math.log10(nominal_top * 1.5)), 0)
    numbered = kernel_markers(profile, function)
    legend = _legend(profile, numbered, bandwidth, ceilings, function, counters if estimates else None)
    # The legend's rows as the screen wraps them (at 80 columns a kernel's line takes two): the chart gets
    # the rest, less its FLOP/s label, x axis and ticks, so the last kernel's line is never cut off.
    legend_rows = len(legend.wrap(Console(width=max(width, 1), file=io.StringIO()), max(width, 1)))
    rows = max(height - legend_rows - 3, 3)
    columns = max(width - AXIS_WIDTH - 1, 20)
    canvas = BrailleCanvas(columns, rows)
    x_axis = LogAxis(x_axis.low, x_axis.high, canvas.width)
    y_axis = LogAxis(y_axis.low, y_axis.high, canvas.height)

    def to_dots(intensity: float, flops: float) -> tuple[float, float]:
        return x_axis.at(intensity), canvas.height - 1 - y_axis.at(flops)

    def roof(compute: float, style: str, every: int) -> None:
        ridge = compute / bandwidth
        left = 10**x_axis.low
        start = max(left, 10**y_axis.low / bandwidth)
        canvas.line(*to_dots(start, start * bandwidth), *to_dots(ridge, compute), style, every)
        canvas.line(*to_dots(ridge, compute), *to_dots(10**x_axis.high, compute), style, every)

    if nominal_top > top:
        roof(nominal_top, "dim cyan", 3)  # the datasheet's roof, at the boost clock
    for ceiling in ceilings:
        roof(ceiling * 1e12, "cyan", 1)
    for kernel in placed:
        if kernel.name in numbered and kernel.intensity and kernel.achieved_tflops:
            x, y = to_dots(kernel.intensity, kernel.achieved_tflops * 1e12)
            estimate = estimates.get(kernel.name)
            if estimate is not None:  # the estimate's place, dots to the measured one: the gap between them
                ex, ey = to_dots(*estimate)
                canvas.line(ex, ey, x, y, ESTIMATE_STYLE, 2)
                canvas.label(round(ex), round(ey), numbered[kernel.name], ESTIMATE_STYLE)
            style = MEASURED_STYLE if kernel.work_source == "counters" else "bold yellow"
            canvas.label(round(x), round(y), numbered[kernel.name], style)
    chart = Text("FLOP/s\n", "dim")
    for row in range(canvas.rows):
        tick = _decade_label(row, canvas, y_axis)
        chart.append(f"{tick:>{AXIS_WIDTH - 1}} ", "dim")
        chart.append("│", "dim")
        chart.append_text(canvas.text_row(row))
        chart.append("\n")
    chart.append(" " * AXIS_WIDTH + "└" + "─" * canvas.columns + "\n", "dim")
    chart.append(_x_ticks(x_axis, canvas.columns) + "\n", "dim")
    chart.append_text(legend)
    return chart


def kernel_markers(profile: ProfileSummary, function: str) -> dict[str, str]:
    """Each kernel's mark on the chart: its dispatch number, the one the Kernels table shows before its
    name (`0 matmul_256x1024x1024`), else a letter in the table's order."""
    markers: dict[str, str] = {}
    letters = iter(MARKERS)
    for kernel in profile.kernels:
        number = dispatch_number(kernel.name, function)
        marker = number if number is not None else next(letters, None)
        if marker is not None:
            markers[kernel.name] = marker
    return markers


def _f32_ceiling(profile: ProfileSummary) -> set[float]:
    peaks = profile.peaks
    if peaks is None or not peaks.f32_tflops:
        return set()
    return {round(peaks.f32_tflops * peaks.compute_scale, 6)}


def _decade_label(row: int, canvas: BrailleCanvas, axis: LogAxis) -> str:
    """A y tick on the row where a power of ten falls, else nothing."""
    for exponent in range(int(axis.low), int(axis.high) + 1):
        if int((canvas.height - 1 - axis.at(10**exponent)) // 4) == row:
            return si(10**exponent)
    return ""


def _x_ticks(axis: LogAxis, columns: int) -> str:
    line = [" "] * (AXIS_WIDTH + 1 + columns)
    for exponent in range(int(axis.low), int(axis.high) + 1):
        column = AXIS_WIDTH + 1 + int(axis.at(10**exponent) // 2)
        label = f"{10**exponent:g}"
        if column + len(label) <= len(line):
            line[column : column + len(label)] = list(label)
    text = "".join(line).rstrip()
    return text + "  FLOP/byte" if len(text) + 11 <= len(line) else text


def _legend(
    profile: ProfileSummary,
    numbered: dict[str, str],
    bandwidth: float,
    ceilings: list[float],
    function: str,
    counters: CountersPass | None = None,
) -> Text:
    peaks = profile.peaks
    assert peaks is not None
    legend = Text()
    clock = ""
    if profile.clocks is not None:
        clock = f" at {mhz(profile.clocks.mean_sm_mhz)}"
        if peaks.boost_mhz and peaks.compute_scale < 0.99:
            clock += f" (dotted: {mhz(peaks.boost_mhz)}, the datasheet's)"
    roofs = ", ".join(si(c * 1e12, "FLOP/s") for c in ceilings)
    ridge = ridge_intensity(max(ceilings), bandwidth / 1e9)
    estimated = " (estimates: a kernel may beat them)" if peaks.estimate else ""
    legend.append(
        f"roofs{clock}: compute {roofs}, memory {si(bandwidth, 'B/s')} (ridge {flop_per_byte(ridge)}); "
        f"{peaks.part}{estimated}\n",
        "cyan",
    )
    if counters is not None:
        legend.append("measured", MEASURED_STYLE)
        legend.append(f" ({counters.source}: FLOPs, DRAM bytes), ")
        legend.append("estimated", ESTIMATE_STYLE)
        legend.append(" (IR or dispatch name), dots between\n")
    shown = profile.kernels[:LEGEND_ROWS]
    width = max((len(without_function(k.name, function)) for k in shown), default=10)
    marks = max((len(numbered.get(k.name, "")) for k in shown), default=1)
    origins = {k.name: _came_from(k) for k in shown}
    origin_width = max((len(text) for text in origins.values()), default=0)
    for kernel in shown:
        marker = numbered.get(kernel.name, "")
        legend.append(f" {marker:>{marks}} ", "bold yellow")
        legend.append(f"{without_function(kernel.name, function):<{width}}  ")
        if origin_width:  # a column only where some kernel's source ops are known
            legend.append(f"{origins[kernel.name]:<{origin_width}}  ", "bold")
        legend.append(f"{_describe(kernel, peaks.estimate)}\n")
    if len(profile.kernels) > LEGEND_ROWS:
        legend.append(
            f"   ... {len(profile.kernels) - LEGEND_ROWS} more kernels (the Kernels pane lists them)\n", "dim"
        )
    return legend


def _came_from(kernel: KernelTiming) -> str:
    """`from layers: conv1 + relu1`: the model's layers a kernel was formed from, as the Kernels pane's `from`
    says it (their common scope first, within its width); empty where its source ops are not known."""
    cell = from_cell(origin_of(kernel), FROM_WIDTH)
    return "" if cell == "-" else f"from {cell}"


def _describe(kernel: KernelTiming, estimate: bool = False) -> str:
    measured = kernel.work_source == "counters"
    if measured and kernel.bytes == 0 and kernel.achieved_tflops is not None:
        rate = si(kernel.achieved_tflops * 1e12, "FLOP/s")
        return f"not placed: no DRAM bytes measured (its data stayed in the caches), {rate}"
    if kernel.intensity is None or kernel.achieved_tflops is None:
        return f"not placed: {kernel.work or 'FLOPs unknown'}"
    pct = pct_of_bound(kernel.bound, kernel.pct_peak_compute, kernel.pct_peak_bandwidth)
    share = (
        f", {share_of_ceiling(pct, estimate)} of its {kernel.bound} roof" if pct is not None and kernel.bound else ""
    )
    named = " (work from its name)" if kernel.work_source == "name" else ""
    point = estimate_point(kernel)
    if measured and point is not None:
        ratio = estimate_ratio(kernel.flops, kernel.estimate_flops)
        named = f"; est. {flop_per_byte(point[0])} ({kernel.estimate_source}), FLOPs {ratio} of it"
    return f"{flop_per_byte(kernel.intensity)}, {si(kernel.achieved_tflops * 1e12, 'FLOP/s')}{share}{named}"


class RooflineScreen(DrawnWindow):
    """The roofline of the newest profile, redrawn as profiles arrive."""

    DEFAULT_CSS = """
    RooflineScreen > Vertical { width: 96%; height: 92%; border: round $accent; background: $surface; padding: 0 1; }
    RooflineScreen #roofline-chart { height: 1fr; }
    """
    BINDINGS = [Binding("escape,f", "dismiss", "Close")]
    TITLE = "[b]Roofline[/b]  each kernel under the device's compute and memory ceilings (escape closes)"
    BODY_ID = "roofline-chart"

    def draw(self, snapshot: RunSnapshot | None, width: int, height: int) -> Text:
        profile = snapshot.profile if snapshot is not None else None
        function = snapshot.function or "" if snapshot else ""
        counters = snapshot.counters_pass if snapshot is not None else None
        missing = no_profile_text(snapshot, ", then f")
        return render_roofline(profile, width, height, function, counters, missing)
