"""The run's own screen: the panes, their layout at every terminal size, and the keys that act on the run.

Textual resolves a key along the focus chain, then the screen, then the app;
a pane's own bindings fire only while it or a child has focus, and gputop's
keys work whichever pane has it. So the keys that act on the run (pause,
profile, counters, the GPU counters strip, capture, reload, device, export,
screenshot, baseline, and the windows over the panes) live here, on the screen
that shows what they do, with the action that answers each; the app keeps the
keys of the whole app (quit, help, bringing a pane forward) and the run's
source. `?` and `q` are bound here too, first, so the footer lists the keys in
the order it always has (the screen's bindings before the app's).

The layout comes from the registry `gputop.tui.panes.PANES` alone: two
columns from `COMPACT_BELOW` up, the panes in turns (a tab row names them all)
below, a line instead of the panes below `MIN_SIZE`, and rows the panes leave
empty shared out among them after every frame.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import Worker

from gputop.tui.bridge import BUSY_STATES, CaptureInfo, RunSnapshot, baseline_choices, load_baseline
from gputop.tui.panes import (
    COLUMNS,
    BoxPane,
    CapturesPane,
    HeaderBar,
    KernelsPane,
    KeysFooter,
    LogPane,
    PaneTabs,
    by_key,
    in_column,
    share_rows,
)
from gputop.tui.screens.capture import CaptureScreen
from gputop.tui.screens.device import DeviceScreen
from gputop.tui.screens.layers import LayersScreen
from gputop.tui.screens.roofline import RooflineScreen
from gputop.tui.screens.stacks import StacksScreen
from gputop.tui.screens.timeline import TimelineScreen
from gputop.tui.text.program import watched_refusal

if TYPE_CHECKING:  # the app composes this screen: the screen only names its type
    from gputop.tui.app import GputopApp

__all__ = ["COMPACT_BELOW", "DRAWN_WINDOWS", "MIN_SIZE", "MainScreen", "queued_noun"]

# Below either, the panes take turns (a tab row names them all; 1-5, p and c bring one forward):
# two columns need 110 cells across, and their left column (Run over Memory pools) about 30 rows.
COMPACT_BELOW = (110, 32)
TALL_FROM = 50  # rows from which the Log pane may hold ten lines rather than three
SHARE_ROUNDS = 4  # layout rounds that sharing the panes' spare rows may take in a row before a frame
MIN_SIZE = (60, 15)  # below this the panes cannot show a row of numbers: say so instead
# The footer's keys, most needed first: where they do not all fit (80 columns), the last go first. `?` lists all.
FOOTER_KEEP = ("question_mark", "q", "p", "t", "f", "L", "space", "l", "c", "n", "d", "r", "e", "s")
# The actions a run may refuse before they are pressed (MainScreen.refusal): the footer offers them where they act.
OFFERED = (
    *("toggle_pause", "profile", "counters", "pm_sampling", "capture", "reload", "choose_device"),
    *("timeline", "roofline", "layers"),
)
# Not on a recorded run:
LIVE_ACTIONS = ("toggle_pause", "profile", "counters", "capture", "reload", "choose_device", "export")
# The run is getting ready (no snapshot yet, or importing, compiling, loading): a profile, counters pass or
# capture asked for now waits for the calls and is taken once they start, rather than refused.
PRE_RUN_STATES = ("idle", *BUSY_STATES)
LIVE_STATES = ("running", "paused")
DRAWN_WINDOWS = (TimelineScreen, RooflineScreen, LayersScreen, StacksScreen)  # windows redrawn as snapshots arrive

PaneT = TypeVar("PaneT", bound=BoxPane)


class MainScreen(Screen[None]):
    """The panes of one run and the keys that act on it; the app's first screen, under every window."""

    SCOPED_CSS = False  # the layout's rules name the screen itself (`Screen.compact`), as the app's CSS did
    CSS = """
    Screen { layout: vertical; }
    #tabs { display: none; }
    #panes { grid-size: 2; grid-columns: 2fr 3fr; grid-rows: auto; height: 1fr; overflow-y: auto; overflow-x: hidden; }
    #left, #right { height: auto; }
    Screen.compact #tabs { display: block; }
    Screen.compact #panes { grid-size: 1; grid-columns: 1fr; }
    Screen.compact BoxPane { display: none; }
    Screen.compact BoxPane.front { display: block; }
    #too-small { display: none; height: 1fr; content-align: center middle; text-align: center; }
    Screen.too-small #panes, Screen.too-small #log, Screen.too-small #tabs { display: none; }
    Screen.too-small #too-small { display: block; }
    Screen.tall #log { max-height: 12; }
    Screen.tall #log.grown { max-height: 60%; }
    Screen.no-color Sparkline > .sparkline--max-color { color: $foreground; }
    Screen.no-color Sparkline > .sparkline--min-color { color: $foreground; }
    """
    # `?` first: however narrow the footer, it shows Help.
    BINDINGS = [
        Binding("question_mark", "app.help", "Help"),
        Binding("q", "app.quit", "Quit"),
        Binding("space", "toggle_pause", "Pause"),
        Binding("p", "profile", "Profile"),
        Binding("P", "profile('full')", "Full profile", show=False),
        Binding("n", "counters", "Count"),
        Binding("t", "timeline", "Timeline"),
        Binding("c", "capture", "Capture"),
        Binding("o", "open_capture", "Open", show=False),
        Binding("enter", "list_dispatches", "Dispatches", show=False),  # a table that has no use for it passes it on
        Binding("r", "reload", "Reload"),
        Binding("d", "choose_device", "Device"),
        Binding("e", "export", "Export"),
        Binding("l", "grow_log", "Log"),
        Binding("s", "save_svg", "SVG"),  # short: at 120 columns every key fits the footer
        Binding("f", "roofline", "Roof"),  # short: with L every key still fits 120 columns
        Binding("L", "layers", "Layers"),
        Binding("b", "baseline", "Baseline", show=False),  # docs/comparing.md; the footer keeps its width
        Binding("g", "pm_sampling", "GPU counters", show=False),  # at 120 columns the footer is full: `?` lists it
        Binding("w", "stacks", "Where", show=False),  # a watched program's parts and Python: `?` lists it
    ]

    def __init__(self) -> None:
        super().__init__()
        self.ready = False  # composed and mounted: the app draws nothing here before
        self._waiting: dict[str, str] = {}  # requests made before the calls started, taken once they do (kind: level)
        self._capture_refusal: str | None = None  # why `c` was refused on this run: `o` and `enter` say the same
        self._baseline_pick = -1  # which of the past sessions `b` shows now (-1: the one given, or none)
        self._not_offered: tuple[str, ...] = ()  # the actions not offered as the footer was fitted last
        self._share_rounds = 0

    @property
    def run_app(self) -> GputopApp:
        return cast("GputopApp", self.app)

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="header")
        yield PaneTabs(by_key(), id="tabs")
        with Grid(id="panes"):
            for column in COLUMNS:
                with Vertical(id=column):
                    for pane in in_column(column):
                        yield pane(id=pane.PANE_ID)
        yield LogPane(id="log")
        yield Static(id="too-small")
        # ctrl+p still opens the palette; the keys need the room. Keys that cannot act on this run are not offered.
        yield KeysFooter(FOOTER_KEEP, show_command_palette=False, refused=lambda action: bool(self.refusal(action)))

    def on_mount(self) -> None:
        # Keep the panes themselves: while a window is up, queries would search that window.
        self._grid = self.query_one("#panes", Grid)
        self._columns = {column: self.query_one(f"#{column}", Vertical) for column in COLUMNS}
        self._header = self.query_one(HeaderBar)
        self._tabs = self.query_one(PaneTabs)
        self._panes: dict[str, BoxPane] = {pane.PANE_ID: pane for pane in self.query(BoxPane)}  # layout order
        self.log_pane = self.query_one(LogPane)
        app = self.run_app
        self.set_class(app.no_color, "no-color")  # Textual takes NO_COLOR out of the environment
        self.bring_forward(by_key()[0].PANE_ID)  # the first tab (Run)
        self.fit(app.size.width, app.size.height)
        if app.source.origin:
            self._header.set_origin(app.source.origin)
        if not app.source.live:
            self._header.recorded = True
        self.ready = True

    # -- layout ---------------------------------------------------------------
    def _share_after_refresh(self) -> None:
        # On the app's queue, not the screen's: the share then runs after the frame is laid out and before the
        # next is drawn, as it did when the app held the layout (from the screen's queue a table drew a frame at
        # the width a scrollbar left it, and kept that header row).
        self.app.call_after_refresh(self._share_spare_rows)

    def fit(self, width: int, height: int) -> None:
        """Lay the panes out for a terminal of `width` x `height`: two columns, in turns, or a line saying why not."""
        self.set_class(width < COMPACT_BELOW[0] or height < COMPACT_BELOW[1], "compact")
        tall = height >= TALL_FROM
        if tall != self.has_class("tall"):
            self.set_class(tall, "tall")
            self.log_pane.redraw()  # collapsed, it holds 3 or 10 rows of the newest messages
        small = width < MIN_SIZE[0] or height < MIN_SIZE[1]
        self.set_class(small, "too-small")
        if small:
            self.query_one("#too-small", Static).update(
                f"terminal {width}x{height} is too small: gputop needs at least {MIN_SIZE[0]}x{MIN_SIZE[1]}\n"
                "make it larger, or press q to quit"
            )
        self._share_after_refresh()

    def _share_spare_rows(self) -> None:
        """Rows the panes leave empty go to them: taller tables where rows are hidden, taller sparklines.

        At 120x40 a dozen rows stood empty above the Log, 25 at 200x60. Each column's free rows are its
        height less what its panes need (what they take less the rows they were given); in the compact
        layout the pane in front has the whole height. Run after each frame and layout change: a table
        that gains rows takes them from the sparklines, and nothing moves while nothing changes.
        """
        if not self._grid.is_attached or self.run_app.ended:
            return
        available = self._grid.scrollable_content_region.height
        changed = False
        if self.has_class("compact"):
            shown = [pane for pane in self._panes.values() if pane.display]
            used = sum(column.outer_size.height for column in self._columns.values())
            changed = share_rows(shown, available, used)
        else:
            for name, column in self._columns.items():
                panes = [self._panes[pane.PANE_ID] for pane in in_column(name)]
                changed = share_rows(panes, available, column.outer_size.height) or changed
        # A change is measured again once laid out (a pane whose text grew meanwhile); a few rounds at most.
        self._share_rounds = self._share_rounds + 1 if changed else 0
        if changed and self._share_rounds < SHARE_ROUNDS:
            self._share_after_refresh()

    def pane(self, kind: type[PaneT]) -> PaneT:
        """The pane of class `kind`, by its declared id (the same pane while a window is open)."""
        pane = self._panes[kind.PANE_ID]
        assert isinstance(pane, kind)
        return pane

    def bring_forward(self, pane_id: str) -> None:
        """In the compact layout, show `pane_id` in place of the others (the wide one shows them all)."""
        for pane in self._panes.values():
            pane.set_class(pane_id == pane.PANE_ID, "front")
        self._tabs.show_front(pane_id)
        self._share_after_refresh()

    def say_every_pane_shown(self, pane_id: str) -> bool:
        """Where every pane is on screen (the wide layout), scroll to `pane_id` and say the key has nothing to
        bring forward; False in the compact layout."""
        if self.has_class("compact"):
            return False
        pane = self._panes[pane_id]
        pane.scroll_visible(animate=False)
        keys = f"{by_key()[0].KEY}-{by_key()[-1].KEY}"
        below = "x".join(map(str, COMPACT_BELOW))
        self.run_app.answer(
            "info", f"{pane.KEY}: every pane is on screen at this size ({keys} bring one forward under {below})"
        )
        return True

    def action_grow_log(self) -> None:
        """The Log pane holds a few lines; `l` gives it half the screen, and back."""
        self.log_pane.toggle_class("grown")
        self.log_pane.redraw()  # collapsed: the newest whole messages, not what the grown pane scrolled to
        self._share_after_refresh()

    # -- drawing ----------------------------------------------------------------
    def show(self, snapshot: RunSnapshot) -> None:
        """Draw `snapshot` in the header, every pane and the Log."""
        self._header.show(snapshot)
        for pane in self._panes.values():
            pane.show(snapshot)
        self.log_pane.show(snapshot)
        refused = tuple(action for action in OFFERED if self.refusal(action))
        if refused != self._not_offered:  # the program made its device, ended, or a profile came: offer what acts
            self._not_offered = refused
            self.query_one(KeysFooter).fit()
        self._share_after_refresh()  # a table that gained rows, a line that came or went

    def show_header(self, snapshot: RunSnapshot) -> None:
        self._header.show(snapshot)

    def forget_run(self) -> None:
        """A new run is coming (a reload, another device): its events number from 1 and it gives its own refusals."""
        self.log_pane.reset()
        self._capture_refusal = None

    # -- the run's keys ----------------------------------------------------------
    def refusal(self, action: str) -> str | None:
        """Why `action` cannot act on this run, known before it is pressed (a watched program's snapshot: its
        devices, its ending, its profile), or None. The footer leaves such a key out and `?` says why; the key
        still answers, in the engine's words or its window's."""
        app = self.run_app
        snapshot = app.snapshot
        if snapshot is not None and snapshot.program is not None and action in ("reload", "choose_device"):
            return app.source.refusal("reload" if action == "reload" else "device")
        return watched_refusal(snapshot, action)

    def refused_actions(self) -> dict[str, str]:
        """Why each key the footer would offer cannot act on this run, by action (`?` lists them)."""
        return {action: why for action in OFFERED if (why := self.refusal(action))}

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A recorded run (gputop open) offers no key that would act on a live run: shown nowhere, inert."""
        return self.run_app.source.live or action not in LIVE_ACTIONS

    def _refused(self, action: str) -> bool:
        """Say in the log why `action` cannot happen here (a recorded run, another process's), if it cannot."""
        reason = self.run_app.source.refusal(action)
        if reason:
            self.run_app.answer("warning", f"{action}: {reason}")
        return reason is not None

    def action_toggle_pause(self) -> None:
        app = self.run_app
        if self._refused("pause"):
            return
        state = app.source.toggle_pause()
        if state is None:
            current = app.snapshot.state if app.snapshot else "idle"
            reason = getattr(app.source, "pause_refused", None)  # a viewer's: the run's own words
            app.answer("warning", f"pause: {reason or f'nothing to pause while {current}'}")
        else:
            app.answer("info", "paused" if state == "paused" else "resumed")

    def action_profile(self, level: str = "default") -> None:
        self.bring_forward(KernelsPane.PANE_ID)
        if self._wait_for_calls("profile", level):
            return
        reason = self.run_app.source.request_profile(level)
        if reason:
            self.run_app.answer("warning", f"profile: {reason}")
        elif level == "full":  # said, as the pass it is: it may cost the calls more than 5%
            self.run_app.answer("info", "profile: a full pass, every record in the explained calls")

    def action_counters(self) -> None:
        self.bring_forward(KernelsPane.PANE_ID)
        if self._wait_for_calls("counters"):
            return
        reason = self.run_app.source.request_counters()
        if reason:
            self.run_app.answer("warning", f"counters: {reason}")

    def action_pm_sampling(self) -> None:
        """`g`: the Run pane's strip of the GPU's own counters (CUPTI PM sampling) off while it samples or starts,
        else on; the engine says why not (a CPU device, a counters pass holding the counters, a recorded run)."""
        app = self.run_app
        pm = app.snapshot.pm_sampling if app.snapshot is not None else None
        on = pm is None or pm.state not in ("sampling", "starting")
        reason = app.source.request_pm_sampling(on)
        if reason:
            app.answer("warning", f"pm: {reason}")
        else:
            app.answer("info", f"PM sampling {'on' if on else 'off'}")

    def action_capture(self) -> None:
        app = self.run_app
        self.bring_forward(CapturesPane.PANE_ID)
        if self._wait_for_calls("capture"):
            return
        reason = app.source.request_capture()
        if reason and app.snapshot is not None and app.snapshot.state in LIVE_STATES:
            self._capture_refusal = reason  # the run's own reason, not a passing state's
        app.answer(*(("warning", f"capture: {reason}") if reason else ("info", "capturing the next call...")))

    def _wait_for_calls(self, kind: str, level: str = "") -> bool:
        """While the run gets ready (compiling, loading), keep `kind` (profile, counters, capture) to take once
        its calls start, and say so; False when the run is past that (the request is made now)."""
        app = self.run_app
        state = app.snapshot.state if app.snapshot else "idle"
        if state not in PRE_RUN_STATES or app.quitting:
            return False
        if self._waiting.get(kind) != "full":  # a full pass asked for stays full
            self._waiting[kind] = level
        app.answer(
            "info", f"{kind}: queued while {state}: the {queued_noun(kind, level)} starts once the module is loaded"
        )
        return True

    def take_waiting(self, state: str) -> None:
        """A snapshot in `state` came: once the run has left its getting-ready states, take what was asked
        meanwhile, or say why it cannot be."""
        if not self._waiting or state in PRE_RUN_STATES:
            return
        waiting, self._waiting = self._waiting, {}
        for kind, level in waiting.items():
            if state not in LIVE_STATES:
                self.run_app.answer("warning", f"{kind}: not taken: the run is {state} before any call")
                continue
            self.run_app.answer("info", f"{kind}: the module is loaded; starting the queued {queued_noun(kind, level)}")
            if kind == "profile":
                self.action_profile(level or "default")
            elif kind == "counters":
                self.action_counters()
            else:
                self.action_capture()

    # -- captures: `o` and `enter` from any pane, the dispatch list read in a worker ---------------------
    def action_open_capture(self) -> None:
        pane = self.pane(CapturesPane)
        if pane.selected_path() is None:
            self.run_app.answer("info", f"open: {self._no_capture()}")
            return
        pane.open_selected(self.run_app.answer)

    def action_list_dispatches(self) -> None:
        """`enter`: the selected capture's dispatch list (the Captures table does the same where it has focus)."""
        path = self.pane(CapturesPane).selected_path()
        if path is None:
            self.run_app.answer("info", f"enter: {self._no_capture()}")
            return
        self.pane(CapturesPane).post_message(CapturesPane.Chosen(path))

    def _no_capture(self) -> str:
        """What `o` and `enter` say where there is no capture: why there can be none here, as `c` said it."""
        app = self.run_app
        snapshot = app.snapshot
        if not app.source.live:
            return "no captures in this recorded run"
        if snapshot is not None and snapshot.program is not None:
            return "no captures of a watched program: run it under renderdoccmd capture"
        status = snapshot.renderdoc if snapshot is not None else None
        why = self._capture_refusal or (status if status and not status.startswith("RenderDoc 1.") else None)
        if why:
            return f"no captures in this run: {why}"
        return "no capture yet: press c to capture the next call"

    @on(CapturesPane.Chosen)
    def _capture_chosen(self, message: CapturesPane.Chosen) -> None:
        message.stop()
        name = Path(message.path).name
        self.run_app.log_line("info", f"reading {name}: its dispatches, and a replay where it can...")
        self._read_capture(message.path)

    @work(thread=True, exclusive=True, group="capture", exit_on_error=False)
    def _read_capture(self, path: str) -> None:
        info = self.run_app.source.read_capture(path)  # seconds: a replay; failures reach the app's log
        self.app.call_from_thread(self._show_capture, info)

    def _show_capture(self, info: CaptureInfo) -> None:
        if info.replay is not None and not info.replay.ok:  # the list says it all; the log keeps the gist
            self.run_app.log_line("info", f"{Path(info.path).name}: not replayed: {info.replay.reason.split('; ')[0]}")
        self.app.push_screen(CaptureScreen(info))

    @on(Worker.StateChanged)
    def _worker_state(self, event: Worker.StateChanged) -> None:
        self.run_app.worker_failed(event)  # the screen's workers fail where the app's do: in the Log

    # -- the run itself: reload, device, export, screenshot ------------------------------------------
    def action_reload(self) -> None:
        if self._refused("reload"):
            return
        self.run_app.log_line("info", "reloading: recompiling if the source changed")
        self.run_app.restart_run()

    def action_choose_device(self) -> None:
        if self._refused("device"):
            return
        self._list_devices()

    @work(thread=True, exclusive=True, group="devices", exit_on_error=False)
    def _list_devices(self) -> None:
        app = self.run_app
        devices = app.source.runnable_devices()
        current = app.snapshot.device.id if app.snapshot and app.snapshot.device else None
        app.call_from_thread(app.push_screen, DeviceScreen(devices, current), self._device_chosen)

    def _device_chosen(self, device_id: str | None) -> None:
        if device_id is None:
            return
        self.run_app.log_line("info", f"moving the run to {device_id}")
        self.run_app.restart_run(device=device_id)

    def action_export(self) -> None:
        if self._refused("export"):
            return
        if self.run_app.snapshot is None:
            self.run_app.answer("info", "export: nothing to report until the run has started")
            return
        self._export()

    @work(thread=True, exclusive=True, group="export", exit_on_error=False)
    def _export(self) -> None:
        app = self.run_app
        if app.is_web:  # the visitor's browser downloads it: a file on the server is out of its reach
            report = app.source.current_report()
            app.call_from_thread(self._offer_report, report)
            return
        path = app.source.export_report()
        app.call_from_thread(app.log_line, "info", f"report written to {path}")

    def _offer_report(self, report: dict[str, Any]) -> None:
        name = f"gputop-report-{time.strftime('%Y%m%d-%H%M%S')}.json"
        text = io.StringIO(json.dumps(report, indent=2) + "\n")
        self.app.deliver_text(text, save_filename=name, mime_type="application/json", name="report")
        self.run_app.log_line("info", f"report offered to the browser as {name}")

    def action_save_svg(self) -> None:
        app = self.run_app
        if app.is_web:
            app.deliver_screenshot()
            app.log_line("info", "screenshot offered to the browser")
            return
        folder = app.source.session_dir or Path.cwd()
        # Named as Textual's save_screenshot names it; written here so a failed write can be taken back.
        path = folder / f"{app.title}_{datetime.now().strftime('%Y-%m-%dT%H_%M_%S_%f')}.svg"
        try:
            path.write_text(app.export_screenshot(), encoding="utf-8")
        except OSError as exc:  # a full or read-only disk: said in one line, never a traceback over the screen
            with contextlib.suppress(OSError):
                path.unlink()  # what was written of it: no half picture, and its room back
            why = exc.strerror or str(exc)
            app.notify(f"screenshot not saved: {why}", severity="error")  # the path is in the Log
            app.log_line("error", f"screenshot not saved: {path}: {why}")
            return
        app.log_line("info", f"screenshot saved to {path}")

    # -- the windows over the panes, and the baseline they compare with -----------------------------
    def action_timeline(self) -> None:
        if not isinstance(self.app.screen, TimelineScreen):
            self.app.push_screen(TimelineScreen(self.run_app.snapshot))

    def action_roofline(self) -> None:
        if not isinstance(self.app.screen, RooflineScreen):
            self.app.push_screen(RooflineScreen(self.run_app.snapshot))

    def action_stacks(self) -> None:
        if not isinstance(self.app.screen, StacksScreen):
            self.app.push_screen(StacksScreen(self.run_app.snapshot))

    def action_layers(self) -> None:
        if not isinstance(self.app.screen, LayersScreen):
            self.app.push_screen(LayersScreen(self.run_app.snapshot))

    def action_baseline(self) -> None:
        """`b`: the next earlier session of this target as the baseline, those on this run's device first (newest
        first), then those on other devices, each named as such; past the oldest, none."""
        app = self.run_app
        snapshot = app.snapshot
        if snapshot is None:
            app.answer("info", "baseline: nothing to compare until the run has started")
            return
        own = Path(snapshot.session_dir) if snapshot.session_dir else app.source.session_dir
        device = snapshot.device.id if snapshot.device else None
        try:
            choices = baseline_choices(snapshot.target, own, device)
        except Exception as exc:  # an unreadable store must not end the screen
            app.answer("warning", f"baseline: {exc}")
            return
        if not choices:
            app.answer("info", f"baseline: no earlier session of {snapshot.target} with kept call samples")
            return
        self._baseline_pick += 1
        if self._baseline_pick >= len(choices):
            self._baseline_pick = -1
            app.baseline = None
            app.answer("info", "baseline: none (b picks one again)")
        else:
            try:
                app.baseline = load_baseline(choices[self._baseline_pick])
            except Exception as exc:
                app.answer("warning", f"baseline: {exc}")
                return
            other = app.baseline.other_device(device)
            where = f", on {other}, not {device}: a comparison across devices" if other else ""
            app.answer(
                "warning" if other else "info",
                f"baseline: {app.baseline.label}{where} ({self._baseline_pick + 1} of {len(choices)}; b for the next)",
            )
        app.redraw()


def queued_noun(kind: str, level: str = "") -> str:
    """What a request made before the calls started is called while it waits: `full profile pass`, `capture`."""
    noun = {"profile": "profile pass", "counters": "counters pass"}.get(kind, kind)
    return f"full {noun}" if level == "full" else noun
