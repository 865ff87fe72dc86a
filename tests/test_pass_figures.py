"""One profile pass, one set of figures: the Kernels header, the Timeline and the Log quote the same pass.

A new user pressed `p`, then `P`, and read `kernels 25.155 ms per call of 21.595 ms synced (dispatches
overlap)` in the Kernels header for a dependent chain of matmuls, while the Timeline said 19.726 ms;
another time the header said gap 3.504 ms and the Log 3.225 ms for the same 22.550 ms call. The header
took the kernel time of the table merged over both passes and set it against the newest pass's wall.
These tests take two real passes in the real app (demo:mlp on local-task) and read each face as drawn.
"""

from __future__ import annotations

import re

from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets import Static
from tui_pilot import calls, live_app, until_drawn, wait_for

from gputop.tui.app import GputopApp
from gputop.tui.panes.log import LogPane
from gputop.tui.screens import TimelineScreen
from gputop.tui.screens.timeline import TimelineView

NUMBER = r"(-?\d+\.\d{3}) ms"
HEADER = re.compile(rf"kernels {NUMBER} per call of {NUMBER} synced(?:, gap {NUMBER}| \(dispatches overlap\))")
LOG_PASS = re.compile(rf"profile: \d+ kernels, {NUMBER} kernel time per call of {NUMBER} synced(?:, gap {NUMBER})?")
LOG_CALL = re.compile(rf"profile: call {NUMBER} = ")
TIMELINE = re.compile(rf"of \d+ profiled \(mean {NUMBER}, kernels {NUMBER}\)")
TIMELINE_CALL = re.compile(rf"^\s*call\s+{NUMBER}\s+100%", re.MULTILINE)


def pass_lines(app: GputopApp, since: int) -> list[str]:
    return app.query_one(LogPane).messages[since:]


def figures(pattern: re.Pattern[str], text: str) -> tuple[str | None, ...]:
    found = pattern.search(text)
    assert found is not None, f"{pattern.pattern!r} not in:\n{text}"
    return found.groups()


async def read_timeline(app: GputopApp, pilot: Pilot[int]) -> str:
    """`t`, the Timeline's text as drawn, and escape."""
    await pilot.press("t")
    await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen) and "profiled" in timeline_text(app))
    text = timeline_text(app)
    await pilot.press("escape")
    await wait_for(pilot, lambda: not isinstance(app.screen, TimelineScreen))
    return text


def timeline_text(app: GputopApp) -> str:
    """The Timeline view's lines as drawn in its window."""
    view = app.screen.query_one(TimelineView)
    lines = view.render_lines(Region(0, 0, view.size.width, view.size.height))
    return "\n".join("".join(segment.text for segment in line) for line in lines)


async def test_p_then_shift_p_the_header_the_timeline_and_the_log_quote_the_newest_pass() -> None:
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 0)
        for key, passes in (("p", 1), ("P", 2)):
            since = len(app.query_one(LogPane).messages)
            await pilot.press(key)

            def pass_logged(since: int = since) -> bool:
                lines = pass_lines(app, since)
                return any(LOG_PASS.search(line) for line in lines) and any(LOG_CALL.search(line) for line in lines)

            await wait_for(pilot, pass_logged, timeout=180)
            await wait_for(pilot, lambda: app.snapshot is not None and not app.snapshot.profiling, timeout=30)
            await until_drawn(pilot, app)
            assert app.snapshot is not None and app.snapshot.profile is not None
            lines = "\n".join(pass_lines(app, since))
            kernel_ms, wall_ms, gap_ms = figures(LOG_PASS, lines)
            (call_ms,) = figures(LOG_CALL, lines)

            header = str(app.query_one("#kernels-summary", Static).render())
            head_kernel, head_wall, head_gap = figures(HEADER, header)
            assert (head_kernel, head_wall) == (kernel_ms, wall_ms), f"{key}: header\n{header}\nlog\n{lines}"
            if head_gap is not None:  # else "(dispatches overlap)", where the Log's gap is negative
                assert head_gap == gap_ms, f"{key}: header\n{header}\nlog\n{lines}"
            else:
                assert gap_ms is not None and float(gap_ms) < 0

            timeline = await read_timeline(app, pilot)
            mean_ms, line_kernel = figures(TIMELINE, timeline)
            (total_ms,) = figures(TIMELINE_CALL, timeline)
            # The breakdown's call is the pass's synced call, and its kernels the header's.
            assert mean_ms == total_ms == call_ms == wall_ms, f"{key}: timeline\n{timeline}\nlog\n{lines}"
            assert line_kernel == kernel_ms, f"{key}: timeline\n{timeline}\nlog\n{lines}"
            # The kernel table merges the passes, and the header says so; the figures above are the newest's.
            assert app.snapshot.profile.passes == passes
            assert ("newest pass" in header and f"over {passes} passes" in header) == (passes > 1), header
        await pilot.press("q")
