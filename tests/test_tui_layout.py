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
from pathlib import Path

import pytest
from textual.binding import Binding
from textual.pilot import Pilot
from textual.widgets import Footer
from tui_pilot import calls, choose_device, live_app, wait_for

import gputop.tui.app
import gputop.tui.panes.tabs
from gputop.tui.app import GputopApp
from gputop.tui.bridge import ReplaySource
from gputop.tui.panes import COLUMNS, PANES, BoxPane, LogPane, PaneTabs, by_key, in_column
from gputop.tui.panes.table import KeyedTable

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
        footer = app.query_one(Footer)
        help_key = [key for key in footer.query("FooterKey") if getattr(key, "key", "") == "question_mark"]
        assert help_key and on_screen(app, help_key[0])


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_kernels_keep_count_avg_min_max_and_nothing_scrolls_sideways(size: tuple[int, int]) -> None:
    app = GputopApp(ReplaySource.from_file(PROFILED))
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.5)
        await pilot.press("3")  # Kernels forward where the panes take turns
        await pilot.pause(0.3)
        kernels = app.query_one("#kernels-table", KeyedTable)
        assert kernels.row_count == 3
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
        await pilot.pause(0.2)
        assert log.size.height > small
        await pilot.press("l")
        await pilot.pause(0.2)
        assert log.size.height == small


async def test_a_recorded_run_offers_no_live_keys() -> None:
    app = GputopApp(ReplaySource.from_file(PROFILED))
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause(0.5)
        keys = {getattr(key, "key", "") for key in app.query_one(Footer).query("FooterKey")}
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
