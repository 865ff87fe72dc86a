"""The Timeline view (`t`): where the median profiled call's time went, drawn to scale.

A kernel table says what ran; it cannot say why a 2.3 ms call holds 0.09 ms
of kernels. This view draws the median call of the newest profile pass as a
strip of segments on one time axis, a row for the host and one per device,
each cell coloured and lettered by what dominated it (host work, a pending
queue operation or allocation, a dispatch running, the device idle inside a
submission, the wait for the host to return), with the totals beside it: the
parts add up to the call's synced wall time, and what the records cannot see
is shown as unaccounted rather than folded into a neighbour. With a baseline
(`b`, `--baseline`), the baseline's median call is drawn under the live one
on the same time axis. It redraws on every profile pass and fits 80 columns.
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gputop.tui.bridge import (
    CallBreakdown,
    CallSegment,
    LiveBaseline,
    RunSnapshot,
    ms_fixed,
    overhead_text,
    overhead_warning,
    percent,
    to_json,
)

__all__ = [
    "KINDS",
    "TimelineScreen",
    "TimelineView",
    "baseline_segments",
    "largest_segments",
    "largest_table",
    "render_timeline",
    "strip_rows",
    "totals_table",
]

# kind: (label, glyph, style). Glyphs keep the strip readable without colour (NO_COLOR, a log file).
KINDS = {
    "host": ("host", "H", "bold blue"),
    "queue": ("queue", "Q", "bold yellow"),
    "alloc": ("alloc", "A", "bold magenta"),
    "device_busy": ("device busy", "█", "green"),
    "device_idle": ("device idle", "·", "dark_green"),
    "return_wait": ("return wait", "R", "bold cyan"),
    "unaccounted": ("unaccounted", "?", "grey50"),
}
HOST_ROW = "host"
LABEL_WIDTH = 12


def strip_rows(segments: tuple[CallSegment, ...], wall_ms: float, width: int) -> list[tuple[str, Text]]:
    """One strip per row (host, then each device), `width` cells each cell showing its dominant kind."""
    rows: dict[str, list[CallSegment]] = {HOST_ROW: []}
    for segment in segments:
        row = segment.device if segment.kind in ("device_busy", "device_idle") and segment.device else HOST_ROW
        rows.setdefault(row, []).append(segment)
    scale = wall_ms / width if wall_ms > 0 and width > 0 else 1.0
    drawn = []
    for name, row_segments in rows.items():
        line = Text(no_wrap=True, overflow="crop")
        for cell in range(width):
            c0, c1 = cell * scale, (cell + 1) * scale
            best, best_overlap = None, 0.0
            for segment in row_segments:
                overlap = min(c1, segment.start_ms + segment.duration_ms) - max(c0, segment.start_ms)
                if overlap > best_overlap:
                    best, best_overlap = segment, overlap
            if best is None:
                line.append(" ")
            else:
                _, glyph, style = KINDS.get(best.kind, ("?", "?", ""))
                line.append(glyph, style=style)
        drawn.append((name, line))
    return drawn


def totals_table(breakdown: CallBreakdown) -> Text:
    """Each part's mean time per call and share of it, in fixed columns (they read the same at any width)."""
    wall = breakdown.wall_ms
    lines = Text(no_wrap=True)
    for kind, (label, glyph, style) in KINDS.items():
        value = getattr(breakdown.totals, f"{kind}_ms")
        share = percent(100 * value / wall).rjust(6) if wall else "    -"
        lines.append(f"{glyph} {label:<12}", style=style)
        lines.append(f" {ms_fixed(value):>13} {share}\n")
    lines.append(f"  {'kernels':<12} {ms_fixed(breakdown.kernel_ms):>13} (in busy)\n", style="dim")
    lines.append(f"  {'call':<12} {ms_fixed(wall):>13}  100%", style="bold")
    return lines


def largest_table(segments: tuple[CallSegment, ...], width: int) -> Text:
    """The median call's longest segments: what each was, when it began, how long it took."""
    lines = Text(no_wrap=True, overflow="ellipsis")
    for index, segment in enumerate(largest_segments(segments)):
        label, glyph, style = KINDS.get(segment.kind, (segment.kind, "?", ""))
        lines.append(f"{glyph} {label:<12}", style=style)
        detail = f" {ms_fixed(segment.duration_ms):>12} at {ms_fixed(segment.start_ms)}: {segment.name}"
        room = max(10, width - 14)
        lines.append(detail if len(detail) <= room else detail[: room - 1] + "…")
        if index < len(largest_segments(segments)) - 1:
            lines.append("\n")
    return lines


def largest_segments(segments: tuple[CallSegment, ...], count: int = 5) -> list[CallSegment]:
    return sorted(segments, key=lambda s: -s.duration_ms)[:count]


def baseline_segments(baseline: LiveBaseline | None) -> tuple[CallSegment, ...]:
    """The baseline's median call, segment by segment (none where its report has no call breakdown)."""
    if baseline is None:
        return ()
    segments = []
    for row in baseline.median_call:
        try:
            segments.append(
                CallSegment(
                    kind=str(row["kind"]),
                    name=str(row.get("name", "")),
                    device=row.get("device"),
                    start_ms=float(row["start_ms"]),
                    duration_ms=float(row["duration_ms"]),
                )
            )
        except (KeyError, TypeError, ValueError):
            continue
    return tuple(segments)


def render_timeline(snapshot: RunSnapshot, width: int, baseline: LiveBaseline | None = None) -> Group | Text:
    """The whole view for one snapshot, `width` columns wide (with the baseline's median call under it)."""
    profile = snapshot.profile
    if snapshot.profiling and (profile is None or profile.call_breakdown is None):
        return Text("profiling... the timeline appears when the pass ends")
    if profile is None:
        return Text("no profile yet: press p to profile the running module (the Timeline shows the median call)")
    breakdown = profile.call_breakdown
    if breakdown is None:
        return Text(f"this profile ({profile.source}) has no call breakdown: its records do not show the call")
    strip_width = max(10, width - LABEL_WIDTH - 1)
    # The strip is the median call's own length; the totals are the mean over the pass's calls.
    median_ms = sum(segment.duration_ms for segment in breakdown.median_call)
    base = baseline_segments(baseline)
    base_ms = sum(segment.duration_ms for segment in base)
    axis_ms = max(median_ms, base_ms)  # one time axis for both calls
    lines: list[Text | Table] = [
        Text.assemble(
            ("median call ", "bold"),
            f"{ms_fixed(median_ms)} of {breakdown.calls} profiled (mean {ms_fixed(breakdown.wall_ms)}, "
            f"kernels {ms_fixed(breakdown.kernel_ms)})",
        ),
        Text(
            f"{'':{LABEL_WIDTH}}0 ms{'':{max(0, strip_width - 15)}}{ms_fixed(axis_ms):>11}",
            style="dim",
            no_wrap=True,
            overflow="crop",
        ),
    ]
    for name, strip in strip_rows(breakdown.median_call, axis_ms, strip_width):
        label = Text(f"{name[: LABEL_WIDTH - 1]:<{LABEL_WIDTH}}", style="bold", no_wrap=True)
        lines.append(Text.assemble(label, strip))
    if baseline is not None and base:
        change = f" ({(median_ms / base_ms - 1) * 100:+.1f}% live)" if base_ms > 0 else ""
        lines.append(
            Text(f"baseline median call {ms_fixed(base_ms)}{change}: {baseline.label}", style="dim", no_wrap=True,
                 overflow="ellipsis")
        )  # fmt: skip
        for name, strip in strip_rows(base, axis_ms, strip_width):
            label = Text(f"{('base ' + name)[: LABEL_WIDTH - 1]:<{LABEL_WIDTH}}", style="dim", no_wrap=True)
            lines.append(Text.assemble(label, strip))
    elif baseline is not None:
        lines.append(Text(f"baseline {baseline.label}: no call breakdown recorded", style="dim"))
    lines.append(Text(""))
    lines.append(Text("mean per call over the pass:", style="dim"))
    if width >= 100:
        side = Table.grid(padding=(0, 4))
        side.add_row(totals_table(breakdown), largest_table(breakdown.median_call, width - 40))
        lines.append(side)
    else:
        lines.append(totals_table(breakdown))
        lines.append(Text(""))
        lines.append(largest_table(breakdown.median_call, width))
    lines.append(Text(""))
    lines.append(Text(f"records: {breakdown.source}", style="dim"))
    lines.append(Text(f"device time on the host clock: {breakdown.fit}", style="dim"))
    if profile.overhead is not None:
        cost = to_json(profile.overhead)
        lines.append(Text(f"pass cost: {overhead_text(cost)}", style="dim"))
        warning = overhead_warning(cost, profile.profiling_on)
        if warning:
            lines.append(Text(f"⚠ {warning}", style="bold yellow"))
    return Group(*lines)


class TimelineView(Static):
    """The timeline of the newest profile pass; `show` redraws it from a snapshot."""

    DEFAULT_CSS = """
    TimelineView { height: auto; }
    """

    def show(self, snapshot: RunSnapshot) -> None:
        self._snapshot = snapshot
        self.update(render_timeline(snapshot, max(40, self.size.width or 78), getattr(self.app, "baseline", None)))

    def on_resize(self) -> None:
        snapshot = getattr(self, "_snapshot", None)
        if snapshot is not None:
            self.update(render_timeline(snapshot, max(40, self.size.width), getattr(self.app, "baseline", None)))


class TimelineScreen(ModalScreen[None]):
    """The Timeline view over the app; it keeps updating while open (every pass redraws it)."""

    DEFAULT_CSS = """
    TimelineScreen { align: center middle; }
    TimelineScreen > VerticalScroll { width: 100%; max-width: 140; height: auto; max-height: 100%;
                                      border: round $accent; background: $surface; padding: 0 1; }
    """
    BINDINGS = [
        Binding("escape,t", "dismiss", "Close"),
        Binding("p", "app.profile", "Profile"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, snapshot: RunSnapshot | None) -> None:
        super().__init__()
        self._first = snapshot

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static("[b]Timeline[/b]: where the call time goes  (t or escape closes, p profiles again)")
            yield TimelineView(id="timeline-view")

    def on_mount(self) -> None:
        if self._first is not None:
            self.show(self._first)

    def show(self, snapshot: RunSnapshot) -> None:
        self.query_one(TimelineView).show(snapshot)

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
