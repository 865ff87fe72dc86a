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

import io

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from gputop.tui.bridge import (
    CallBreakdown,
    CallSegment,
    LiveBaseline,
    ProfileSummary,
    RunSnapshot,
    kernels_cost_text,
    ms_fixed,
    overhead_text,
    overhead_warning,
    percent,
    to_json,
)
from gputop.tui.call_strip import KINDS, LABEL_WIDTH, strip_rows
from gputop.tui.screens.window import Window
from gputop.tui.text.program import no_profile_text, watched_refusal

__all__ = [
    "KINDS",
    "TimelineScreen",
    "TimelineView",
    "baseline_segments",
    "largest_segments",
    "largest_table",
    "records_lines",
    "render_timeline",
    "strip_rows",
    "totals_table",
]

WINDOW_ROWS = 3  # the Timeline window's border (2) and title (1): the rest of the screen is the view's


def totals_table(breakdown: CallBreakdown) -> Text:
    """Each part's mean time per call and share of it, in fixed columns (they read the same at any width)."""
    wall = breakdown.wall_ms
    lines = Text(no_wrap=True)
    for kind, (label, glyph, style) in KINDS.items():
        value = getattr(breakdown.totals, f"{kind}_ms")
        share = percent(100 * value / wall).rjust(6) if wall else "    -"
        lines.append(f"{glyph} {label:<12}", style=style)
        lines.append(f" {ms_fixed(value):>13} {share}\n")
    where = "(timed in another run)" if breakdown.kernels_apart else "(in busy)"
    lines.append(f"  {'kernels':<12} {ms_fixed(breakdown.kernel_ms):>13} {where}\n", style="dim")
    lines.append(f"  {'call':<12} {ms_fixed(wall):>13}  100%", style="bold")
    return lines


def largest_table(segments: tuple[CallSegment, ...], width: int, count: int = 5) -> Text:
    """The median call's `count` longest segments: what each was, when it began, how long it took."""
    lines = Text(no_wrap=True, overflow="ellipsis")
    shown = largest_segments(segments, count)
    for index, segment in enumerate(shown):
        label, glyph, style = KINDS.get(segment.kind, (segment.kind, "?", ""))
        lines.append(f"{glyph} {label:<12}", style=style)
        detail = f" {ms_fixed(segment.duration_ms):>12} at {ms_fixed(segment.start_ms)}: {segment.name}"
        room = max(10, width - 14)
        lines.append(detail if len(detail) <= room else detail[: room - 1] + "…")
        if index < len(shown) - 1:
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


def render_timeline(
    snapshot: RunSnapshot, width: int, baseline: LiveBaseline | None = None, height: int | None = None
) -> Group | Text:
    """The whole view for one snapshot, `width` columns wide (with the baseline's median call under it).

    With a `height`, the view fits it where it can: the strips, the totals and the lines saying which
    records it comes from always show; the median call's largest segments (the strip draws them too)
    and the blank lines between parts take what rows are left, largest segments first. At 80x24 the
    `records:` lines fell off the bottom of the window.
    """
    profile = snapshot.profile
    if snapshot.profiling and (profile is None or profile.call_breakdown is None):
        return Text("profiling... the timeline appears when the pass ends")
    if profile is None:
        return Text(no_profile_text(snapshot, " (the Timeline shows the median call)"))
    breakdown = profile.call_breakdown
    if breakdown is None:
        return Text(f"this profile ({profile.source}) has no call breakdown: its records do not show the call")
    strip_width = max(10, width - LABEL_WIDTH - 1)
    # The strip is the median call's own length; the totals are the mean over the pass's calls.
    median_ms = sum(segment.duration_ms for segment in breakdown.median_call)
    base = baseline_segments(baseline)
    base_ms = sum(segment.duration_ms for segment in base)
    axis_ms = max(median_ms, base_ms)  # one time axis for both calls
    strips: list[Text] = [
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
        strips.append(Text.assemble(label, strip))
    if baseline is not None and base:
        change = f" ({(median_ms / base_ms - 1) * 100:+.1f}% live)" if base_ms > 0 else ""
        other = baseline.other_device(snapshot.device.id if snapshot.device else None)
        where = f" on {other}" if other else ""  # another device's call: said before any figure is read
        strips.append(
            Text(f"baseline median call {ms_fixed(base_ms)}{where}{change}: {baseline.label}", style="dim",
                 no_wrap=True, overflow="ellipsis")
        )  # fmt: skip
        for name, strip in strip_rows(base, axis_ms, strip_width):
            label = Text(f"{('base ' + name)[: LABEL_WIDTH - 1]:<{LABEL_WIDTH}}", style="dim", no_wrap=True)
            strips.append(Text.assemble(label, strip))
    elif baseline is not None:
        strips.append(Text(f"baseline {baseline.label}: no call breakdown recorded", style="dim"))
    records = records_lines(profile, breakdown)
    side_by_side = width >= 100  # then the largest segments sit beside the totals, in their rows
    wanted = len(largest_segments(breakdown.median_call))
    required = sum(_rows(line, width) for line in [*strips, *records]) + 1 + len(KINDS) + 2  # and the totals
    room = 10**6 if height is None else height - required
    largest = wanted if side_by_side else max(0, min(wanted, room))
    blanks = max(0, min(3, room - (0 if side_by_side else largest)))  # after the strips, before records, ...
    lines: list[Text | Table] = [*strips]
    lines += [Text("")] if blanks >= 1 else []
    lines.append(Text("mean per call over the pass:", style="dim"))
    if side_by_side:
        side = Table.grid(padding=(0, 4))
        side.add_row(totals_table(breakdown), largest_table(breakdown.median_call, width - 40))
        lines.append(side)
    else:
        lines.append(totals_table(breakdown))
        if largest:
            lines += [Text("")] if blanks >= 3 else []  # ... and, last, before the largest segments
            lines.append(largest_table(breakdown.median_call, width, largest))
    lines += [Text("")] if blanks >= 2 else []
    lines += records
    return Group(*lines)


def records_lines(profile: ProfileSummary, breakdown: CallBreakdown) -> list[Text]:
    """The lines under the view saying which records it comes from, and what the pass cost (always shown)."""
    records = [
        Text(f"records: {breakdown.source}", style="dim"),
        Text(f"device time on the host clock: {breakdown.fit}", style="dim"),
    ]
    if profile.overhead is not None:  # what the pass cost, as the records it took
        cost = to_json(profile.overhead)
        records.append(Text(f"pass cost: {overhead_text(cost)}", style="dim"))
        warning = overhead_warning(cost, profile.profiling_on)
        if warning:
            records.append(Text(f"⚠ {warning}", style="bold yellow"))
        separate = kernels_cost_text(to_json(profile.kernels_overhead) if profile.kernels_overhead else None)
        if separate:
            records.append(Text(separate, style="dim"))
    return records


def _rows(line: Text, width: int) -> int:
    """The rows a line of the view takes at `width`, wrapped as the screen wraps it."""
    if line.no_wrap:
        return 1
    return len(line.wrap(Console(width=max(width, 1), file=io.StringIO()), max(width, 1)))


class TimelineView(Static):
    """The timeline of the newest profile pass; `show` redraws it from a snapshot."""

    DEFAULT_CSS = """
    TimelineView { height: auto; }
    """

    def show(self, snapshot: RunSnapshot) -> None:
        self._snapshot = snapshot
        self._redraw(max(40, self.size.width or 78))

    def on_resize(self) -> None:
        if getattr(self, "_snapshot", None) is not None:
            self._redraw(max(40, self.size.width))

    def _redraw(self, width: int) -> None:
        # The rows the window can give the view: the screen less the window's border and its title line.
        height = max(8, self.screen.size.height - WINDOW_ROWS) if self.is_attached else None
        self.update(render_timeline(self._snapshot, width, getattr(self.app, "baseline", None), height))


class TimelineScreen(Window[None]):
    """The Timeline view over the app; it keeps updating while open (every pass redraws it)."""

    DEFAULT_CSS = """
    TimelineScreen > VerticalScroll { width: 100%; max-width: 140; height: auto; max-height: 100%;
                                      border: round $accent; background: $surface; padding: 0 1; }
    """
    BINDINGS = [
        Binding("escape,t", "dismiss", "Close"),
        Binding("p", "profile", "Profile"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, snapshot: RunSnapshot | None) -> None:
        super().__init__()
        self._newest = snapshot

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            again = "" if watched_refusal(self._newest, "profile") else ", p profiles again"  # a watched program's
            yield Static(f"[b]Timeline[/b]: where the call time goes  (t or escape closes{again})")
            yield TimelineView(id="timeline-view")

    def on_mount(self) -> None:
        if self._newest is not None:
            self.show(self._newest)

    def show(self, snapshot: RunSnapshot) -> None:
        self._newest = snapshot
        view = next(iter(self.query(TimelineView)), None)
        if view is not None:  # else pushed but not composed yet (a snapshot came in between): on_mount draws it
            view.show(snapshot)

    def action_dismiss(self) -> None:
        self.dismiss(None)

    async def action_profile(self) -> None:
        """`p` profiles again from here as over the panes: the run's screen, first on the stack, takes it."""
        await self.app.run_action("profile", self.app.screen_stack[0])
