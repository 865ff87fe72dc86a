"""The TUI at 80x24, the smallest common terminal: what is there to read fits, whole or cut at a word.

Issue 49: the header's host note became `…`, a Log path wrapped in the middle of a name, and the collapsed
Log showed the first rows of a long message, cut mid-sentence.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from tui_pilot import calls, live_app, screen_lines, until_drawn, wait_for

from gputop.core.records.neighbours import HostLoad, Neighbours
from gputop.core.records.progress import Event
from gputop.core.store.replay import read_snapshots
from gputop.tui.app import GputopApp
from gputop.tui.bridge import ReplaySource
from gputop.tui.panes.log import LogPane

DATA = Path(__file__).parent / "data"
SIZE = (80, 24)
# A real message of a profile pass on local-task (2 cores): five rows at 80 columns.
LONG = (
    "profile: profiled calls 0.99x the unprofiled ones (21.343 vs 21.626 ms, 20 unprofiled calls); unprofiled: "
    "separate unprofiled runs of the same tool: 20 calls of iree-benchmark-module without profiling, half just "
    "before the pass and half just after (the tool profiles every call it makes once profiling is on)"
)


def recorded_running() -> object:
    """The last snapshot of a recorded local-task run of demo:mlp."""
    return read_snapshots(DATA / "mlp_local_task.jsonl")[-1]


def visible_log_rows(pane: LogPane) -> list[str]:
    top = round(pane.scroll_y)
    return [strip.text.rstrip() for strip in pane.lines[top : top + pane.scrollable_content_region.height]]


async def test_the_header_host_note_fits_at_80_columns() -> None:
    """Others busy on the host: the note takes its short form and fields that matter less give way."""
    snapshot = recorded_running()
    host = HostLoad(other_cores=0.91, own_cores=1.02, cores=2, seconds=1.0)
    neighbours = Neighbours("local-task", None, (), 0, None, host, None, seconds=1.0)
    app = GputopApp(ReplaySource([replace(snapshot, neighbours=neighbours)]))  # type: ignore[type-var]
    async with app.run_test(size=SIZE) as pilot:
        await until_drawn(pilot, app)
        await pilot.pause(0.2)
        second = screen_lines(app)[1].rstrip()
        assert second.endswith("host: others 0.91/2 cores"), second
        assert "memory [" in second and "…" not in second, second
        await pilot.resize_terminal(160, 40)  # room again: the whole sentence, and every field
        await wait_for(pilot, lambda: "others used 0.91 of 2 cores (this run 1.02)" in screen_lines(app)[1], 5)
        assert "local-task  │  cpu" in screen_lines(app)[1]


async def test_a_log_path_breaks_between_its_components() -> None:
    """`report written to PATH` with a path longer than the Log's rows: each row ends after a `/` or at the
    path's end, so no name is cut in two."""
    app = live_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: calls(app) > 0)
        await pilot.press("e")
        pane = app.query_one(LogPane)
        await wait_for(pilot, lambda: any("report written to" in m for m in pane.messages), timeout=30)
        await pilot.pause(0.3)
        path = next(m for m in pane.messages if "report written to" in m).split("report written to ")[1]
        assert len(path) > pane.scrollable_content_region.width, path  # the case in point: it cannot fit one row
        rows = visible_log_rows(pane)
        start = next(i for i, row in enumerate(rows) if "report written to" in row)
        pieces = [rows[start].split("report written to", 1)[1], *rows[start + 1 :]]
        joined = ""
        for piece in pieces:
            joined += piece.strip()
            if joined == path:
                break
            assert joined == "" or (joined.endswith("/") and path.startswith(joined)), (pieces, path)
        assert joined == path, (rows, path)


async def test_the_collapsed_log_cuts_a_long_message_at_a_word() -> None:
    """The newest message is taller than the collapsed Log: its first rows, the last ending at a word with `…`
    (the whole message is one `l` away), never a row that stops mid-sentence without a mark."""
    snapshot = recorded_running()
    last = max(event.seq for event in snapshot.events)  # type: ignore[attr-defined]
    events = (*snapshot.events, Event(last + 1, "info", LONG, None, snapshot.timestamp))  # type: ignore[attr-defined]
    app = GputopApp(ReplaySource([replace(snapshot, events=events)]))  # type: ignore[type-var]
    async with app.run_test(size=SIZE) as pilot:
        await until_drawn(pilot, app)
        await pilot.pause(0.3)
        pane = app.query_one(LogPane)
        rows = visible_log_rows(pane)
        assert len(rows) == 3 and rows[-1].endswith("…"), rows
        assert re.match(r"\d\d:\d\d:\d\d profile: profiled calls", rows[0]), rows
        shown = " ".join(rows)[9:-1]  # less the time and the mark
        assert LONG.startswith(shown) and LONG[len(shown)] == " ", (shown, LONG)
        await pilot.press("l")  # grown: the whole message
        await pilot.pause(0.3)
        assert " ".join(row for row in visible_log_rows(pane) if row).endswith("once profiling is on)")
