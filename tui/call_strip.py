"""The median profiled call drawn as strips of cells, one row for the host and one per device.

Two faces draw it: the Timeline window (`t`), in full with its totals and
largest segments, and the Kernels pane, where its column has rows to spare,
as a glance at where a call's time goes. Both draw the same strips from the
same code, so a cell means the same thing in each. Each cell shows the kind
of work that dominated its stretch of the call, as a coloured glyph that
still reads without colour (NO_COLOR, a log file).
"""

from __future__ import annotations

from rich.text import Text

from gputop.tui.bridge import CallBreakdown, CallSegment, ms_fixed, percent

__all__ = ["HOST_ROW", "KINDS", "LABEL_WIDTH", "call_strip", "call_strip_rows", "strip_rows"]

# kind: (label, glyph, style).
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


def call_strip_rows(breakdown: CallBreakdown) -> int:
    """The rows `call_strip` takes: its heading, a strip for the host and each device, and its key."""
    devices = {s.device for s in breakdown.median_call if s.kind in ("device_busy", "device_idle") and s.device}
    return 2 + 1 + len(devices)


def call_strip(breakdown: CallBreakdown, width: int) -> Text:
    """The median call in `call_strip_rows` rows of `width` cells: a heading, the strips, and a key giving
    each kind's share of the mean call, largest first (the kinds with none left out). Show it without
    wrapping (`text-wrap: nowrap`): a line too long is cut, never pushed onto a row of its own."""
    median_ms = sum(segment.duration_ms for segment in breakdown.median_call)
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append("median call ", style="bold")
    text.append(f"{ms_fixed(median_ms)} of {breakdown.calls} profiled (t: the Timeline)\n", style="dim")
    for name, strip in strip_rows(breakdown.median_call, median_ms, max(10, width - LABEL_WIDTH)):
        text.append(f"{name[: LABEL_WIDTH - 1]:<{LABEL_WIDTH}}", style="bold")
        text.append_text(strip)
        text.append("\n")
    wall = breakdown.wall_ms
    shares = sorted(((getattr(breakdown.totals, f"{kind}_ms") / wall, kind) for kind in KINDS), reverse=True)
    for share, kind in shares if wall > 0 else ():
        if share >= 0.0005:  # largest first: where the line is cut, the smallest go
            label, glyph, style = KINDS[kind]
            text.append(f"{glyph} ", style=style)
            text.append(f"{label} {percent(100 * share)}  ", style="dim")
    text.rstrip()
    return text
