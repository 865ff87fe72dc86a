"""The TUI fits every terminal and never shows an old run's numbers.

At 80x24, 120x40 and 200x60 every pane's title and the footer's `?` are on
screen, the Kernels table keeps count, avg, min and max from 120 columns up,
and no table scrolls sideways (from a replay of a recorded real profile).
Every pane is declared once, in its own class, and the registry `PANES`
alone gives the layout, the keys 1-5, the tab row and the lookups by id.
With the real engine on local-task: a reload and a device switch leave no row
of the run before them, and a reload continues the same session folder as a
new segment.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.binding import Binding
from textual.pilot import Pilot
from textual.widgets import Footer
from tui_pilot import calls, choose_device, footer_keys, key_name, live_app, screen_lines, wait_for

import gputop.tui.app
import gputop.tui.panes.tabs
from gputop.tui.app import GputopApp
from gputop.tui.bridge import ReplaySource
from gputop.tui.panes import COLUMNS, PANES, BoxPane, LogPane, PaneTabs, by_key, in_column
from gputop.tui.panes.table import KeyedTable
from gputop.tui.screens import TimelineScreen

PROFILED = Path(__file__).parent / "data" / "mlp_profiled_local_task.jsonl"
SIZES = [(80, 24), (120, 40), (200, 60)]
SIZE_IDS = ["80x24", "120x40", "200x60"]
TITLES = ("Run", "Memory pools", "Kernels", "Exports", "Captures")


def on_screen(app: GputopApp, widget: object, x_offset: int = 0) -> bool:
    """The widget is what the screen shows at its own top-left corner (so its first row is visible)."""
    region = widget.region  # type: ignore[attr-defined]
    if not region.area or region.right > app.size.width or region.bottom > app.size.height:
        return False
    shown, _ = app.screen.get_widget_at(region.x + x_offset, region.y)
    return shown is widget or widget in shown.ancestors


def help_on_screen(app: GputopApp) -> bool:
    keys = app.query_one(Footer).query("FooterKey")
    return any(key_name(key) == "question_mark" and on_screen(app, key) for key in keys)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_every_title_and_help_are_visible(size: tuple[int, int]) -> None:
    app = GputopApp(ReplaySource.from_file(PROFILED))
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.5)
        compact = app.screen.has_class("compact")
        assert compact == (size == (80, 24))
        if compact:  # the panes take turns; the tab row names them all, on screen
            tabs = app.query_one(PaneTabs)
            assert on_screen(app, tabs) and all(title in str(tabs.render()) for title in TITLES)
            for number, title in enumerate(TITLES, 1):
                await pilot.press(str(number))
                await pilot.pause(0.1)
                front = [pane for pane in app.query(BoxPane) if pane.display]
                assert [pane.border_title for pane in front] == [title]
                assert on_screen(app, front[0], 2)
        else:
            for pane in app.query(BoxPane):
                assert pane.border_title in TITLES and on_screen(app, pane, 2), pane.border_title
        assert on_screen(app, app.query_one(LogPane), 2)
        # The replay's bindings change as it plays, and each change recomposes the footer: `?` must be on
        # screen once the footer settles (within a few frames), not in the frame the keys are remade.
        await footer_keys(app, pilot)
        await wait_for(pilot, lambda: help_on_screen(app), timeout=5.0)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_kernels_keep_count_avg_min_max_and_nothing_scrolls_sideways(size: tuple[int, int]) -> None:
    app = GputopApp(ReplaySource.from_file(PROFILED))
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.5)
        await pilot.press("3")  # Kernels forward where the panes take turns
        kernels = app.query_one("#kernels-table", KeyedTable)
        await wait_for(pilot, lambda: kernels.row_count == 3, timeout=5.0)
        assert {"kernel", "count", "avg", "min", "max"} <= set(kernels.shown)
        if size == (200, 60):
            assert set(kernels.shown) == {c.name for c in kernels.columns_all}
        # One unit per column, named in its header; the cells are bare numbers in it.
        avg = [str(kernels.row_cells(key)["avg"]) for key in kernels.row_keys]
        assert str(kernels.columns["avg"].label) == "avg ms" and all(float(v) > 0 for v in avg)
        for number in range(1, 6):
            await pilot.press(str(number))
            await pilot.pause(0.1)
            for table in app.query(KeyedTable):
                if table.display and table.size.width:
                    assert table.virtual_size.width <= table.size.width, (table.id, size)
                    assert not table.show_horizontal_scrollbar, table.id


async def test_l_grows_the_log_and_shrinks_it_back() -> None:
    app = GputopApp(ReplaySource.from_file(PROFILED))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.5)
        log = app.query_one(LogPane)
        small = log.size.height
        assert small <= 5  # a few lines: the panes keep the screen
        await pilot.press("l")
        await wait_for(pilot, lambda: log.size.height > small, timeout=5.0)
        await pilot.press("l")
        await wait_for(pilot, lambda: log.size.height == small, timeout=5.0)


async def test_a_recorded_run_offers_no_live_keys() -> None:
    app = GputopApp(ReplaySource.from_file(PROFILED))
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause(0.5)
        keys = {key_name(key) for key in await footer_keys(app, pilot)}
        assert {"question_mark", "q", "t"} <= keys
        assert not keys & {"space", "p", "c", "r", "d", "e"}
        assert "recorded, read-only" in str(app.query_one("#header").render())


# -- a pane is declared once: the registry gives the layout, the keys, the tab row and the lookups ----------
DECLARED = ("PANE_ID", "TITLE", "KEY", "COLUMN", "ROW")


def test_each_pane_declares_its_id_title_key_and_place_once() -> None:
    for pane in PANES:
        assert [name for name in DECLARED if name in vars(pane)] == list(DECLARED), pane.__name__
        assert pane.BORDER_TITLE == pane.TITLE, pane.__name__  # the frame's title is the declared one
    for name in ("PANE_ID", "TITLE", "KEY"):
        values = [getattr(pane, name) for pane in PANES]
        assert len(set(values)) == len(values), f"{name} repeated: {values}"
    assert [pane.KEY for pane in by_key()] == [str(n) for n in range(1, len(PANES) + 1)]
    places = [(pane.COLUMN, pane.ROW) for pane in PANES]
    assert len(set(places)) == len(places) and {column for column, _ in places} <= set(COLUMNS)
    placed = [pane for column in COLUMNS for pane in in_column(column)]
    assert len(placed) == len(PANES) and set(placed) == set(PANES)  # each pane in one column, once


def test_the_app_and_the_tab_row_write_no_pane_id_or_title() -> None:
    """They take every pane's id and title from the registry: none is spelt out there a second time."""
    names = {pane.PANE_ID for pane in PANES} | {pane.TITLE for pane in PANES}
    for module in (gputop.tui.app, gputop.tui.panes.tabs):
        tree = ast.parse(Path(str(module.__file__)).read_text())
        strings = {
            node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
        }
        assert not strings & names, (module.__name__, sorted(strings & names))


async def test_layout_keys_tab_row_and_lookups_come_from_the_registry() -> None:
    bindings = {b.key: b.action for b in GputopApp.BINDINGS if isinstance(b, Binding) and b.key.isdigit()}
    assert bindings == {pane.KEY: f"bring_forward('{pane.PANE_ID}')" for pane in PANES}
    app = GputopApp(ReplaySource.from_file(PROFILED))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.3)
        composed = list(app.query(BoxPane))
        assert len(composed) == len(PANES) and {type(pane) for pane in composed} == set(PANES)
        for column in COLUMNS:
            assert [type(child) for child in app.query_one(f"#{column}").children] == list(in_column(column))
        for pane in composed:
            assert pane.id == pane.PANE_ID and pane.border_title == pane.TITLE
            assert app.pane(type(pane)) is pane
        tabs = app.query_one(PaneTabs)
        assert tabs.panes == by_key()
        for kind in by_key():
            await pilot.press(kind.KEY)
            await pilot.pause(0.1)
            assert [pane for pane in app.query(BoxPane) if pane.display] == [app.pane(kind)]
            assert str(tabs.render()) == " ".join(f" {pane.KEY} {pane.TITLE} " for pane in by_key())


# -- the real engine: nothing of the run before a reload or a device switch stays --------------------
async def profiled(app: GputopApp, pilot: Pilot[int]) -> KeyedTable:
    await wait_for(pilot, lambda: calls(app) > 1)
    await pilot.press("p")
    kernels = app.query_one("#kernels-table", KeyedTable)
    await wait_for(pilot, lambda: kernels.row_count == 3, timeout=120)
    return kernels


async def test_reload_shows_no_old_row_and_continues_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "session"
    app = live_app(session_dir=folder)
    async with app.run_test(size=(80, 24)) as pilot:
        kernels = await profiled(app, pilot)
        assert not app.query_one("#kernels-hint").display or "profiling" in str(app.query_one("#kernels-hint").render())
        first = app.source.session  # type: ignore[attr-defined]
        await pilot.press("r")
        await pilot.pause(0.05)
        assert kernels.row_keys == [] and not kernels.display  # at once, before the old run has even stopped
        await wait_for(pilot, lambda: app.source.session is not first and calls(app) > 2)  # type: ignore[attr-defined]
        assert kernels.row_keys == [] and app.snapshot is not None and app.snapshot.profile is None
        assert "no profile yet" in str(app.query_one("#kernels-hint").render())
        assert app.snapshot.segment == 1 and app.snapshot.session_dir == str(folder)
        assert app.source.session_dir == folder  # type: ignore[attr-defined]
        await pilot.press("q")
        await pilot.pause(0.5)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert [s["segment"] for s in manifest["segments"]] == [0, 1]
    segments = {json.loads(line).get("segment", 0) for line in (folder / "samples.jsonl").read_text().splitlines()}
    assert segments == {0, 1}
    assert list(tmp_path.iterdir()) == [folder]


async def test_device_switch_shows_no_row_of_the_old_device(tmp_path: Path) -> None:
    app = live_app(session_dir=tmp_path / "session")
    async with app.run_test(size=(120, 40)) as pilot:
        kernels = await profiled(app, pilot)
        memory = app.query_one("#memory-table", KeyedTable)
        assert any(key.startswith("local-task/") for key in memory.row_keys)
        await choose_device(app, pilot, "local-sync")
        await pilot.pause(0.05)
        assert kernels.row_keys == [] and not any(key.startswith("local-task/") for key in memory.row_keys)
        await wait_for(
            pilot,
            lambda: (
                app.snapshot is not None
                and app.snapshot.device is not None
                and app.snapshot.device.id == "local-sync"
                and calls(app) > 2
            ),
        )
        await pilot.pause(0.3)
        assert kernels.row_keys == []
        assert memory.row_keys and not any(key.startswith("local-task/") for key in memory.row_keys)
        exports = app.query_one("#exports-table", KeyedTable)
        cells = [str(cell) for key in exports.row_keys for cell in exports.row_cells(key).values()]
        assert cells and "local-task" not in cells and "local-sync" in cells


async def test_at_120_columns_every_key_of_a_live_run_fits_the_footer() -> None:
    """At 120x40 the footer was cut at `s Scree▏` and `f Roofline` never showed."""
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 0)
        await pilot.pause(0.3)
        keys = [key for key in await footer_keys(app, pilot) if key.display]
        assert {key_name(key) for key in keys} >= {"question_mark", "l", "s", "f", "r", "d", "e"}
        assert all(key.region.right <= app.size.width and on_screen(app, key) for key in keys), [
            (key_name(key), key.region) for key in keys
        ]


def test_help_lists_every_key_the_app_answers_to() -> None:
    """`?` is where a key is learnt when the footer has no room: every binding is in it, `l` and `1`-`5` too."""
    from gputop.tui.screens.help import KEYS

    names = {"question_mark": "?", "space": "space"}
    listed: set[str] = set()
    for keys, _ in KEYS:
        for key in keys.split(", "):  # "p, P": one line for a key and its shifted form
            first, dash, last = key.partition("-")
            listed |= {str(n) for n in range(int(first), int(last) + 1)} if dash and first.isdigit() else {key}
    from gputop.tui.screens.main import MainScreen

    # The app's own keys and the run's keys, which live on the screen that owns them (tui/screens/main.py).
    for binding in [*GputopApp.BINDINGS, *MainScreen.BINDINGS]:
        assert isinstance(binding, Binding)
        for key in binding.key.split(","):
            if key != "ctrl+c":  # quit, as q
                assert names.get(key, key) in listed, key


async def test_the_help_fits_80x24() -> None:
    app = GputopApp(ReplaySource.from_file(PROFILED))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.3)
        await pilot.press("question_mark")
        await pilot.pause(0.3)
        box = app.screen.query_one("Vertical")
        assert box.region.bottom <= 24 and box.region.right <= 80, box.region
        assert all(s.region.bottom <= box.region.bottom for s in app.screen.query("Static"))


async def test_the_roofline_legend_keeps_every_kernel_at_80x24() -> None:
    """At 80x24 the legend's lines wrap and its third kernel fell off the bottom of the window."""
    app = GputopApp(ReplaySource.from_file(Path(__file__).parent / "data" / "mlp_local_task_roofline.jsonl"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.5)
        await pilot.press("f")
        await wait_for(pilot, lambda: bool(app.screen.query("#roofline-chart")), timeout=5.0)
        await pilot.pause(0.3)  # laid out at the window's size
        from gputop.tui.screens.roofline import render_roofline

        chart = app.screen.query_one("#roofline-chart")
        width, height = chart.size.width, chart.size.height
        assert app.snapshot is not None and app.snapshot.profile is not None
        rendered = render_roofline(app.snapshot.profile, width, height, app.snapshot.function or "")
        rows = len(rendered.wrap(app.console, width))  # what the window shows, wrapped at its width
        assert rows <= height, (rows, width, height)
        text = rendered.plain
        assert all(f"dispatch_{n}_" in text for n in range(3)), text


async def test_every_window_hides_the_panes_beneath() -> None:
    """Help, Timeline, roofline, device chooser and a capture's dispatch list: around each window's border
    nothing of the panes beneath shows (the modal screens let them through, dimmed, and at 80x24 the panes'
    borders and numbers read as part of the window)."""
    from gputop.core.module.device_discovery import iree_devices
    from gputop.tui.bridge import CaptureInfo
    from gputop.tui.screens import CaptureScreen, DeviceScreen, Window

    capture = Path(__file__).parent / "data" / "scale_vulkan_h200.rdc"
    info = CaptureInfo(str(capture), capture.stat().st_size, 1, ("recorded",), "Vulkan")
    windows: list[tuple[str, Callable[[], Window[Any]] | None]] = [
        ("question_mark", None),  # opened by their keys, as a user opens them
        ("t", None),
        ("f", None),
        ("device chooser", lambda: DeviceScreen(iree_devices("local-task"), "local-task")),  # d on a live run
        ("dispatch list", lambda: CaptureScreen(info)),  # enter on a capture
    ]
    for size in ((80, 24), (120, 40)):
        app = GputopApp(ReplaySource.from_file(PROFILED))
        async with app.run_test(size=size) as pilot:
            await pilot.pause(0.5)
            under = screen_lines(app)
            assert any("Run" in line for line in under)
            for key, window in windows:
                if window is None:
                    await pilot.press(key)
                else:
                    app.push_screen(window())
                await pilot.pause(0.3)
                assert isinstance(app.screen, Window), key
                box = app.screen.children[0].region  # the window's frame
                for y, line in enumerate(screen_lines(app)):
                    outside = "".join(c for x, c in enumerate(line.ljust(size[0])) if not box.contains(x, y))
                    assert not outside.strip(), (key, size, y, line)
                await pilot.press("escape")
                await pilot.pause(0.2)
                assert not isinstance(app.screen, Window), key


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_the_timeline_keeps_its_records_lines_on_screen(size: tuple[int, int]) -> None:
    """At 80x24 the Timeline's `records:` and `device time on the host clock:` lines fell below the window:
    at every size they show whole, and so do the strips and the totals (the largest segments give way)."""
    app = GputopApp(ReplaySource.from_file(PROFILED))
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.5)
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen), timeout=5.0)
        await pilot.pause(0.3)  # and drawn
        assert app.snapshot is not None and app.snapshot.profile is not None
        breakdown = app.snapshot.profile.call_breakdown
        assert breakdown is not None
        shown = " ".join(" ".join(line.strip(" │╭╮╰╯─").split()) for line in screen_lines(app))
        for text in (f"records: {breakdown.source}", f"device time on the host clock: {breakdown.fit}"):
            assert " ".join(text.split()) in shown, (text, shown)
        for text in ("median call", "local-task", "unaccounted", "call "):
            assert text in shown, text


async def test_at_80_columns_the_footer_is_whole_and_keeps_help() -> None:
    """At 80x24 the footer was cut at `r Re▏`: the keys it shows now fit whole, `?` first among them, and
    the keys left out are the ones `?` lists (every key is reachable)."""
    app = live_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 0)
        await pilot.pause(0.3)
        every_key = await footer_keys(app, pilot)
        shown = [key for key in every_key if key.display]
        names = [key_name(key) for key in shown]
        assert names[0] == "question_mark" and {"q", "p", "t", "f", "l"} <= set(names), names
        assert all(key.region.right <= app.size.width and on_screen(app, key) for key in shown)
        row = screen_lines(app)[-1]
        for key in shown:  # each key and its label whole on the footer's row
            assert f"{key.key_display} {key.description}" in row, (row, key.description)  # type: ignore[attr-defined]
        assert len(shown) < len(every_key)  # some give way at 80 columns


@pytest.mark.parametrize("size", [(120, 40), (200, 60)], ids=["120x40", "200x60"])
async def test_rows_the_panes_leave_go_to_the_calls_and_the_median_call(size: tuple[int, int]) -> None:
    """At 120x40 a dozen rows stood empty above the Log (25 at 200x60): the left column now reaches the
    Log (the calls' sparkline takes the rows), and the Kernels pane shows the median call's strips."""
    app = GputopApp(ReplaySource.from_file(PROFILED))
    async with app.run_test(size=size) as pilot:
        await pilot.pause(1.0)
        grid = app.query_one("#panes")
        left = app.query_one("#left")
        assert left.outer_size.height == grid.size.height, (left.outer_size, grid.size)
        assert app.query_one("#run-sparkline").size.height > 2
        call = app.query_one("#kernels-call")
        assert call.display and "median call" in str(call.render())
        assert app.query_one("#right").outer_size.height <= grid.size.height  # nothing pushed off the screen
        await pilot.press("l")  # the Log takes half the screen: the sparkline gives its rows back
        await pilot.pause(0.5)
        assert left.outer_size.height <= grid.size.height and not grid.max_scroll_y


async def test_the_pane_in_front_takes_the_rows_at_80x24() -> None:
    app = GputopApp(ReplaySource.from_file(PROFILED))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(1.0)
        grid = app.query_one("#panes")
        assert app.query_one("#run").outer_size.height == grid.size.height
        await pilot.press("3")
        await pilot.pause(0.5)
        assert app.query_one("#kernels-call").display  # the median call's strips under the kernels
        assert not grid.max_scroll_y
