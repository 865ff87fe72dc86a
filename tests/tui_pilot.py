"""What the TUI tests share: the real app on a live engine, and waiting on it through the Pilot.

The tests drive the real app (`run_test`) over the real engine; these are the
steps several of them take the same way, kept in one place so a change to how
the app is built or polled is made once.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.css.query import NoMatches
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Footer

from gputop.tui.app import GputopApp
from gputop.tui.bridge import EngineBridge, RunConfig
from gputop.tui.panes.log import LogPane
from gputop.tui.screens import DeviceScreen


def live_app(**config: object) -> GputopApp:
    """The app on a live engine calling demo:mlp on local-task until stopped; `config` overrides RunConfig."""
    base: dict[str, object] = {"target": "demo:mlp", "device": "local-task", "iterations": None}
    base.update(config)
    return GputopApp(EngineBridge(RunConfig(**base)))  # type: ignore[arg-type]


async def wait_for(
    pilot: Pilot[int], condition: object, timeout: float = 60.0, describe: Callable[[], str] | None = None
) -> None:
    """Until `condition()` holds; a widget it asks for that is not composed yet (NoMatches) is "not yet".
    `describe()` says, on a timeout, what the app showed instead."""
    waited = 0.0
    while not _holds(condition):
        await pilot.pause(0.1)
        waited += 0.1
        assert waited < timeout, "timed out waiting for the app" + (f": {describe()}" if describe else "")


async def until_drawn(pilot: Pilot[int], app: GputopApp, timeout: float = 30.0) -> None:
    """Until the panes show the snapshot the app holds: one arrives at once, its frame may wait (MIN_FRAME_S),
    and longer on a loaded machine (a CI run found the Log without the error a state it had already seen)."""

    def what_was_drawn() -> str:
        held, drawn = app.snapshot, app.drawn_snapshot
        return (
            f"{app.frames} frames; holds {held and held.state} of {held and held.timestamp}, "
            f"drew {drawn and drawn.state} of {drawn and drawn.timestamp}; log: {app.query_one(LogPane).messages}"
        )

    def drawn() -> bool:
        return app.snapshot is not None and app.drawn_snapshot is app.snapshot

    await wait_for(pilot, drawn, timeout, what_was_drawn)


def _holds(condition: object) -> bool:
    try:
        return bool(condition())  # type: ignore[operator]
    except NoMatches:  # a window pushed a moment ago has not composed its children yet
        return False


def calls(app: GputopApp) -> int:
    return app.snapshot.calls.count if app.snapshot else 0


async def profile_now(app: GputopApp, pilot: Pilot[int], timeout: float = 120.0) -> None:
    """`p`, and wait until the pass's profile is in the snapshot."""
    await pilot.press("p")
    await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.profile is not None, timeout=timeout)


async def footer_keys(app: GputopApp, pilot: Pilot[int]) -> list[Widget]:
    """The footer's keys (shown or given way), once Textual has composed and laid them out: it recomposes them
    whenever the bindings change, and a test that looks too early finds none, or keys not placed yet."""
    footer = app.query_one(Footer)

    def laid_out() -> bool:
        keys = list(footer.query("FooterKey"))
        return bool(keys) and all(key.region.area for key in keys if key.display)

    await wait_for(pilot, laid_out, timeout=5.0)
    return list(footer.query("FooterKey"))


def key_name(key: Widget) -> str:
    return str(getattr(key, "key", ""))


async def choose_device(app: GputopApp, pilot: Pilot[int], device_id: str) -> None:
    """`d`, then `device_id` picked in the chooser and Enter, as a user would."""
    await pilot.press("d")
    # The window is on the stack a moment before its list is composed into it: wait for the list too.
    await wait_for(pilot, lambda: isinstance(app.screen, DeviceScreen) and app.screen.query_one("OptionList"))
    option_list = app.screen.query_one("OptionList")
    ids = [option_list.get_option_at_index(i).id for i in range(option_list.option_count)]  # type: ignore[attr-defined]
    assert device_id in ids
    option_list.highlighted = ids.index(device_id)  # type: ignore[attr-defined]
    await pilot.press("enter")


def screen_lines(app: GputopApp) -> list[str]:
    """What the terminal shows now, one string a row: the screen on top composited over those beneath it,
    as `App.export_screenshot` composites them (a window lets what is under it show where it is not opaque)."""
    import io

    from rich.console import Console

    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True, legacy_windows=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text().splitlines()[:height]
