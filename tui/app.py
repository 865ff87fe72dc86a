"""The gputop Textual app: composes the panes and routes keys and snapshots.

It holds no engine logic and no list of panes: the layout, the keys 1-5,
the tab row and every pane lookup come from the registry
`gputop.tui.panes.PANES`, and its windows from `gputop.tui.screens`. Snapshots arrive as coalescing
`SnapshotArrived` messages from the bridge and are drawn at most ten times a
second; blocking actions (stopping the engine, restarting it, listing devices)
run in thread workers that report back with messages, and every worker failure
is shown in the Log pane from one handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical
from textual.driver import Driver
from textual.timer import Timer
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from gputop.tui.bridge import (
    BUSY_STATES,
    AttachSource,
    CallStats,
    CaptureInfo,
    EngineProcess,
    LiveBaseline,
    Phases,
    ReplaySource,
    RunSnapshot,
    SnapshotArrived,
    SnapshotSource,
    SourceNote,
    baseline_choices,
    load_baseline,
)
from gputop.tui.ending import SignalEnding, parent_pid
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
from gputop.tui.screens import (
    CaptureScreen,
    DeviceScreen,
    HelpScreen,
    LayersScreen,
    RooflineScreen,
    TimelineScreen,
)
from gputop.tui.text import farewell
from gputop.tui.text.program import ended_text

__all__ = ["GputopApp", "run_attached", "run_engine_app", "run_replay"]

# At most 12.5 frames a second, whatever the data rate: a little above the engine's 10 snapshots a second, so
# a snapshot is drawn as it arrives rather than waiting out a frame timer (at 0.1 s, one in twenty waited
# up to a whole frame: a drawn snapshot's age p95 was 98-101 ms on an H100).
MIN_FRAME_S = 0.08
# Below either, the panes take turns (a tab row names them all; 1-5, p and c bring one forward):
# two columns need 110 cells across, and their left column (Run over Memory pools) about 30 rows.
COMPACT_BELOW = (110, 32)
TALL_FROM = 50  # rows from which the Log pane may hold ten lines rather than three
VIEWER_STATS_ENV = "GPUTOP_VIEWER_STATS"  # a file the app writes its drawing figures to when it ends (benchmarks)
MAX_AGES = 100_000
SHARE_ROUNDS = 4  # layout rounds that sharing the panes' spare rows may take in a row before a frame
MIN_SIZE = (60, 15)  # below this the panes cannot show a row of numbers: say so instead
TERMINAL_RESET = "\x1b[?1000l\x1b[?1003l\x1b[?1015l\x1b[?1006l\x1b[?2004l\x1b[<u\x1b[?1049l\x1b[?25h\x1b[?1004l"

# The footer's keys, most needed first: where they do not all fit (80 columns), the last go first. `?` lists all.
FOOTER_KEEP = ("question_mark", "q", "p", "t", "f", "L", "space", "l", "c", "n", "d", "r", "e", "s")
# Not on a recorded run:
LIVE_ACTIONS = ("toggle_pause", "profile", "counters", "capture", "reload", "choose_device", "export")
# The run is getting ready (no snapshot yet, or importing, compiling, loading): a profile, counters pass or
# capture asked for now waits for the calls and is taken once they start, rather than refused.
PRE_RUN_STATES = ("idle", *BUSY_STATES)
LIVE_STATES = ("running", "paused")

PaneT = TypeVar("PaneT", bound=BoxPane)


class GputopApp(App[int]):
    TITLE = "gputop"
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
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
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
        *(Binding(pane.KEY, f"bring_forward('{pane.PANE_ID}')", show=False) for pane in by_key()),
    ]

    def __init__(
        self, source: SnapshotSource, *, handle_signals: bool = False, baseline: LiveBaseline | None = None
    ) -> None:
        super().__init__()
        self.source = source
        self.baseline = baseline  # a recorded run the Run pane, the Kernels table and the Timeline compare with
        self._baseline_pick = -1  # which of the past sessions `b` shows now (-1: the one given, or none)
        self._waiting: dict[str, str] = {}  # requests made before the calls started, taken once they do (kind: level)
        self._capture_refusal: str | None = None  # why `c` was refused on this run: `o` and `enter` say the same
        self._handle_signals = handle_signals  # only the real command line: tests keep pytest's handlers
        self.snapshot: RunSnapshot | None = None
        self.frames = 0
        self.drawn_snapshot: RunSnapshot | None = None  # the snapshot the panes show: `snapshot` may wait a frame
        self._last_frame = 0.0
        self._frame_timer: Timer | None = None
        self._quitting = False
        self._quitting_done = False
        self._ending: SignalEnding | None = None
        self._parent_pid = parent_pid()
        self._draw_ages_ms: list[float] = []
        self._share_rounds = 0

    def get_driver_class(self) -> type[Driver]:
        driver_class = super().get_driver_class()
        from textual.drivers.web_driver import WebDriver

        if driver_class is WebDriver:  # under a web server: leave when it does (see web_driver)
            from gputop.tui.web_driver import GputopWebDriver

            return GputopWebDriver
        return driver_class

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
        yield KeysFooter(FOOTER_KEEP, show_command_palette=False)  # ctrl+p still opens it; the keys need the room

    def on_mount(self) -> None:
        # Keep the panes themselves: while a modal screen is up, queries would
        # search that screen, and snapshots keep arriving.
        self._home = self.screen  # the panes' screen (a resize may come while a window is over it)
        self._grid = self.query_one("#panes", Grid)
        self._columns = {column: self.query_one(f"#{column}", Vertical) for column in COLUMNS}
        self._header = self.query_one(HeaderBar)
        self._tabs = self.query_one(PaneTabs)
        self._panes: dict[str, BoxPane] = {pane.PANE_ID: pane for pane in self.query(BoxPane)}  # layout order
        self._log_pane = self.query_one(LogPane)
        self._generation = self.source.generation  # snapshots of older runs (before a reload) are not drawn
        self._home.set_class(self.no_color, "no-color")  # Textual takes NO_COLOR out of the environment
        self.bring_forward(by_key()[0].PANE_ID)  # the first tab (Run)
        self._fit(self.size.width, self.size.height)
        if self.source.origin:
            self._header.set_origin(self.source.origin)
        if not self.source.live:
            self._header.recorded = True
        self.source.attach(self)
        self.source.start()
        self.set_interval(1.0, self._tick_busy_header)
        if self._parent_pid is not None:
            self.set_interval(1.0, self._check_parent)
        if self._handle_signals:
            self._take_signals()

    def _take_signals(self) -> None:
        """SIGINT/SIGTERM/SIGHUP from outside: stop the engine, restore the terminal, exit 130/143/129.

        The drivers install event-loop handlers; they are replaced by plain ones
        (see `ending`), which run even while the loop is blocked writing a frame.
        """
        loop = asyncio.get_running_loop()
        for signum in SignalEnding.SIGNALS:
            loop.remove_signal_handler(signum)
        source = self.source
        self._ending = SignalEnding(
            interrupt=source.interrupt,
            wait=source.stop,
            abandon=source.abandon,
            on_first=lambda code: loop.call_soon_threadsafe(self._on_signal, code),
            on_leave=self._restore_terminal_now,
        )
        self._ending.install()

    def _on_signal(self, code: int) -> None:
        """The first signal, on the app's own thread: the engine is stopping; end the app with `code`."""
        self._quitting = True
        self.exit(code)

    def _restore_terminal_now(self) -> None:
        """The process leaves without the app's own ending (a second signal): give the terminal back."""
        driver, stdin, stdout = self._driver, sys.__stdin__, sys.__stdout__
        if driver is None or driver.is_web or stdin is None or stdout is None:
            return
        attrs = getattr(driver, "attrs_before", None)
        if attrs is not None:
            import termios

            termios.tcsetattr(stdin.fileno(), termios.TCSANOW, attrs)
        os.write(stdout.fileno(), TERMINAL_RESET.encode())

    def _check_parent(self) -> None:
        """A child of gputop web whose server is gone (killed, crashed) leaves as if the viewer quit."""
        if os.getppid() != self._parent_pid and not self._quitting:
            self.log_line("warning", f"the process that started this one (pid {self._parent_pid}) is gone")
            self.call_later(self.action_quit)

    def on_unmount(self) -> None:
        # The signal ending stays in place until the process leaves: a signal during the engine's
        # teardown below must still end it with its record, not kill it without one.
        self._quitting_done = True
        if self._frame_timer is not None:
            self._frame_timer.stop()
        self._write_viewer_stats()
        # However the app ends (q, an error, the test harness), the engine stops
        # before the interpreter does: IREE aborts if it is torn down mid-call.
        self.source.stop(timeout=15)

    def _write_viewer_stats(self) -> None:
        """For bench/perturbation.py: frames drawn and each drawn snapshot's age, where VIEWER_STATS_ENV asks."""
        path = os.environ.get(VIEWER_STATS_ENV)
        if not path:
            return
        ages = sorted(self._draw_ages_ms)
        stats: dict[str, Any] = {"frames": self.frames, "drawn": len(ages)}
        if ages:
            stats.update(
                p50_ms=round(ages[(len(ages) - 1) // 2], 3),
                p95_ms=round(ages[min(len(ages) - 1, round(0.95 * (len(ages) - 1)))], 3),
                max_ms=round(ages[-1], 3),
            )
        with contextlib.suppress(OSError):
            Path(path).write_text(json.dumps(stats) + "\n", encoding="utf-8")

    def on_resize(self, event: events.Resize) -> None:
        if hasattr(self, "_home"):  # the first Resize comes before on_mount, which fits the screen itself
            self._fit(event.size.width, event.size.height)

    def _fit(self, width: int, height: int) -> None:
        home = self._home
        home.set_class(width < COMPACT_BELOW[0] or height < COMPACT_BELOW[1], "compact")
        tall = height >= TALL_FROM
        if tall != home.has_class("tall"):
            home.set_class(tall, "tall")
            self._log_pane.redraw()  # collapsed, it holds 3 or 10 rows of the newest messages
        small = width < MIN_SIZE[0] or height < MIN_SIZE[1]
        home.set_class(small, "too-small")
        if small:
            home.query_one("#too-small", Static).update(
                f"terminal {width}x{height} is too small: gputop needs at least {MIN_SIZE[0]}x{MIN_SIZE[1]}\n"
                "make it larger, or press q to quit"
            )
        self.call_after_refresh(self._share_spare_rows)

    def _share_spare_rows(self) -> None:
        """Rows the panes leave empty go to them: taller tables where rows are hidden, taller sparklines.

        At 120x40 a dozen rows stood empty above the Log, 25 at 200x60. Each column's free rows are its
        height less what its panes need (what they take less the rows they were given); in the compact
        layout the pane in front has the whole height. Run after each frame and layout change: a table
        that gains rows takes them from the sparklines, and nothing moves while nothing changes.
        """
        if not self._grid.is_attached or self._quitting_done:
            return
        available = self._grid.scrollable_content_region.height
        changed = False
        if self._home.has_class("compact"):
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
            self.call_after_refresh(self._share_spare_rows)

    # -- snapshots ------------------------------------------------------------
    def on_snapshot_arrived(self, message: SnapshotArrived) -> None:
        if message.generation < self._generation:
            return  # the run before a reload or a device switch: none of its numbers are drawn
        self.snapshot = message.snapshot
        if self._waiting and message.snapshot.state not in PRE_RUN_STATES:
            self._take_waiting(message.snapshot.state)
        wait = MIN_FRAME_S - (time.monotonic() - self._last_frame)
        if wait <= 0:
            self._draw()
        elif self._frame_timer is None:
            self._frame_timer = self.set_timer(wait, self._draw)

    def _draw(self) -> None:
        self._frame_timer = None
        snapshot = self.snapshot
        if snapshot is None or self._quitting_done or not self._log_pane.is_attached:
            return
        self._last_frame = time.monotonic()
        self.frames += 1
        self.drawn_snapshot = snapshot
        self._header.show(snapshot)
        for pane in self._panes.values():
            pane.show(snapshot)
        self._log_pane.show(snapshot)
        if isinstance(self.screen, (TimelineScreen, RooflineScreen, LayersScreen)):
            self.screen.show(snapshot)
        self.call_after_refresh(self._share_spare_rows)  # a table that gained rows, a line that came or went
        if len(self._draw_ages_ms) < MAX_AGES:
            # How old the snapshot was once drawn: the engine's publish to this screen, across the process boundary.
            self._draw_ages_ms.append((time.time() - snapshot.timestamp) * 1e3)

    def _tick_busy_header(self) -> None:
        """While importing, compiling or loading no snapshots come: keep the elapsed time moving."""
        snapshot = self.snapshot
        if snapshot is not None and snapshot.state in BUSY_STATES and not self._quitting_done:
            self._header.show(snapshot)

    def log_line(self, level: str, message: str) -> None:
        self._log_pane.add(level, message)

    def answer(self, level: str, message: str) -> None:
        """A key's answer, in one line: in the Log, and as a toast too where the Log cannot be seen now (a window
        over the panes, or a screen too small for them)."""
        self.log_line(level, message)
        if self.screen is not self._home or self._home.has_class("too-small"):
            self.notify(message, severity="information" if level == "info" else level)  # type: ignore[arg-type]

    def on_source_note(self, message: SourceNote) -> None:
        self.log_line(message.level, message.text)

    # -- keys -----------------------------------------------------------------
    async def action_quit(self) -> None:
        if self._quitting:
            return
        self._quitting = True
        self.log_line("info", "leaving; the run goes on" if self.source.origin else "stopping the engine...")
        self._stop_engine_and_exit()

    @work(thread=True, exclusive=True, group="engine", exit_on_error=False)
    def _stop_engine_and_exit(self) -> None:
        self.source.stop(timeout=15)
        self.call_from_thread(self.exit, 0)

    def action_toggle_pause(self) -> None:
        if self._refused("pause"):
            return
        state = self.source.toggle_pause()
        if state is None:
            current = self.snapshot.state if self.snapshot else "idle"
            reason = getattr(self.source, "pause_refused", None)  # a viewer's: the run's own words
            self.answer("warning", f"pause: {reason or f'nothing to pause while {current}'}")
        else:
            self.answer("info", "paused" if state == "paused" else "resumed")

    def action_profile(self, level: str = "default") -> None:
        self.bring_forward(KernelsPane.PANE_ID)
        if self._wait_for_calls("profile", level):
            return
        reason = self.source.request_profile(level)
        if reason:
            self.answer("warning", f"profile: {reason}")
        elif level == "full":  # said, as the pass it is: it may cost the calls more than 5%
            self.answer("info", "profile: a full pass, every record in the explained calls")

    def action_counters(self) -> None:
        self.bring_forward(KernelsPane.PANE_ID)
        if self._wait_for_calls("counters"):
            return
        reason = self.source.request_counters()
        if reason:
            self.answer("warning", f"counters: {reason}")

    def action_pm_sampling(self) -> None:
        """`g`: the Run pane's strip of the GPU's own counters (CUPTI PM sampling) off while it samples or starts,
        else on; the engine says why not (a CPU device, a counters pass holding the counters, a recorded run)."""
        pm = self.snapshot.pm_sampling if self.snapshot is not None else None
        on = pm is None or pm.state not in ("sampling", "starting")
        reason = self.source.request_pm_sampling(on)
        if reason:
            self.answer("warning", f"pm: {reason}")
        else:
            self.answer("info", f"PM sampling {'on' if on else 'off'}")

    def action_capture(self) -> None:
        self.bring_forward(CapturesPane.PANE_ID)
        if self._wait_for_calls("capture"):
            return
        reason = self.source.request_capture()
        if reason and self.snapshot is not None and self.snapshot.state in LIVE_STATES:
            self._capture_refusal = reason  # the run's own reason, not a passing state's
        self.answer(*(("warning", f"capture: {reason}") if reason else ("info", "capturing the next call...")))

    def _wait_for_calls(self, kind: str, level: str = "") -> bool:
        """While the run gets ready (compiling, loading), keep `kind` (profile, counters, capture) to take once
        its calls start, and say so; False when the run is past that (the request is made now)."""
        state = self.snapshot.state if self.snapshot else "idle"
        if state not in PRE_RUN_STATES or self._quitting:
            return False
        if self._waiting.get(kind) != "full":  # a full pass asked for stays full
            self._waiting[kind] = level
        self.answer(
            "info", f"{kind}: queued while {state}: the {queued_noun(kind, level)} starts once the module is loaded"
        )
        return True

    def _take_waiting(self, state: str) -> None:
        """The run has left its getting-ready states: take what was asked meanwhile, or say why it cannot be."""
        waiting, self._waiting = self._waiting, {}
        for kind, level in waiting.items():
            if state not in LIVE_STATES:
                self.answer("warning", f"{kind}: not taken: the run is {state} before any call")
                continue
            self.answer("info", f"{kind}: the module is loaded; starting the queued {queued_noun(kind, level)}")
            if kind == "profile":
                self.action_profile(level or "default")
            elif kind == "counters":
                self.action_counters()
            else:
                self.action_capture()

    def action_open_capture(self) -> None:
        pane = self.pane(CapturesPane)
        if pane.selected_path() is None:
            self.answer("info", f"open: {self._no_capture()}")
            return
        pane.open_selected(self.answer)

    def action_list_dispatches(self) -> None:
        """`enter`: the selected capture's dispatch list (the Captures table does the same where it has focus)."""
        path = self.pane(CapturesPane).selected_path()
        if path is None:
            self.answer("info", f"enter: {self._no_capture()}")
            return
        self.pane(CapturesPane).post_message(CapturesPane.Chosen(path))

    def _no_capture(self) -> str:
        """What `o` and `enter` say where there is no capture: why there can be none here, as `c` said it."""
        snapshot = self.snapshot
        if not self.source.live:
            return "no captures in this recorded run"
        if snapshot is not None and snapshot.program is not None:
            return "no captures of a watched program: run it under renderdoccmd capture"
        status = snapshot.renderdoc if snapshot is not None else None
        why = self._capture_refusal or (status if status and not status.startswith("RenderDoc 1.") else None)
        if why:
            return f"no captures in this run: {why}"
        return "no capture yet: press c to capture the next call"

    def on_captures_pane_chosen(self, message: CapturesPane.Chosen) -> None:
        self.log_line("info", f"reading {Path(message.path).name}: its dispatches, and a replay where it can...")
        self._read_capture(message.path)

    @work(thread=True, exclusive=True, group="capture", exit_on_error=False)
    def _read_capture(self, path: str) -> None:
        info = self.source.read_capture(path)  # seconds: a replay; failures reach _worker_failed
        self.call_from_thread(self._show_capture, info)

    def _show_capture(self, info: CaptureInfo) -> None:
        if info.replay is not None and not info.replay.ok:  # the list says it all; the log keeps the gist
            self.log_line("info", f"{Path(info.path).name}: not replayed: {info.replay.reason.split('; ')[0]}")
        self.push_screen(CaptureScreen(info))

    def _refused(self, action: str) -> bool:
        """Say in the log why `action` cannot happen here (a recorded run, another process's), if it cannot."""
        reason = self.source.refusal(action)
        if reason:
            self.answer("warning", f"{action}: {reason}")
        return reason is not None

    def action_reload(self) -> None:
        if self._refused("reload"):
            return
        self.log_line("info", "reloading: recompiling if the source changed")
        self._clear_run_views()
        self._restart_engine()

    def action_choose_device(self) -> None:
        if self._refused("device"):
            return
        self._list_devices()

    @work(thread=True, exclusive=True, group="devices", exit_on_error=False)
    def _list_devices(self) -> None:
        devices = self.source.runnable_devices()
        current = self.snapshot.device.id if self.snapshot and self.snapshot.device else None
        self.call_from_thread(self.push_screen, DeviceScreen(devices, current), self._device_chosen)

    def _device_chosen(self, device_id: str | None) -> None:
        if device_id is None:
            return
        self.log_line("info", f"moving the run to {device_id}")
        self._clear_run_views(device_changed=True)
        self._restart_engine(device=device_id)

    def _clear_run_views(self, *, device_changed: bool = False) -> None:
        """A new run is coming: draw every pane empty now, and nothing of the old run from here on.

        The source numbers its runs; snapshots of this one or older, even those
        already queued, are dropped (`on_snapshot_arrived`) until the new run's come.
        """
        self._generation = self.source.generation + 1
        self._log_pane.reset()  # the new run numbers its events from 1
        self._capture_refusal = None  # the new run (another device, perhaps) gives its own
        old = self.snapshot
        if old is None:
            return
        blank = RunSnapshot(
            state="idle",
            target=old.target,
            function=old.function,
            device=None if device_changed else old.device,
            phases=Phases(),
            calls=CallStats(),
            memory=None,
            memory_history=(),
            diagnostics=(),
            events=(),
            session_dir=old.session_dir,
        )
        self.snapshot = blank
        self._draw()

    @work(thread=True, exclusive=True, group="engine", exit_on_error=False)
    def _restart_engine(self, **changes: object) -> None:
        self.source.restart(**changes)

    def action_export(self) -> None:
        if self._refused("export"):
            return
        if self.snapshot is None:
            self.answer("info", "export: nothing to report until the run has started")
            return
        self._export()

    @work(thread=True, exclusive=True, group="export", exit_on_error=False)
    def _export(self) -> None:
        if self.is_web:  # the visitor's browser downloads it: a file on the server is out of its reach
            report = self.source.current_report()
            self.call_from_thread(self._offer_report, report)
            return
        path = self.source.export_report()
        self.call_from_thread(self.log_line, "info", f"report written to {path}")

    def _offer_report(self, report: dict[str, Any]) -> None:
        name = f"gputop-report-{time.strftime('%Y%m%d-%H%M%S')}.json"
        text = io.StringIO(json.dumps(report, indent=2) + "\n")
        self.deliver_text(text, save_filename=name, mime_type="application/json", name="report")
        self.log_line("info", f"report offered to the browser as {name}")

    def action_save_svg(self) -> None:
        if self.is_web:
            self.deliver_screenshot()
            self.log_line("info", "screenshot offered to the browser")
            return
        folder = self.source.session_dir or Path.cwd()
        # Named as Textual's save_screenshot names it; written here so a failed write can be taken back.
        path = folder / f"{self.title}_{datetime.now().strftime('%Y-%m-%dT%H_%M_%S_%f')}.svg"
        try:
            path.write_text(self.export_screenshot(), encoding="utf-8")
        except OSError as exc:  # a full or read-only disk: said in one line, never a traceback over the screen
            with contextlib.suppress(OSError):
                path.unlink()  # what was written of it: no half picture, and its room back
            why = exc.strerror or str(exc)
            self.notify(f"screenshot not saved: {why}", severity="error")  # the path is in the Log
            self.log_line("error", f"screenshot not saved: {path}: {why}")
            return
        self.log_line("info", f"screenshot saved to {path}")

    def pane(self, kind: type[PaneT]) -> PaneT:
        """The app's pane of class `kind`, by its declared id (the same pane while a window is open)."""
        pane = self._panes[kind.PANE_ID]
        assert isinstance(pane, kind)
        return pane

    def bring_forward(self, pane_id: str) -> None:
        """In the compact layout, show `pane_id` in place of the others (the wide one shows them all)."""
        for pane in self._panes.values():
            pane.set_class(pane_id == pane.PANE_ID, "front")
        self._tabs.show_front(pane_id)
        self.call_after_refresh(self._share_spare_rows)

    def action_bring_forward(self, pane_id: str) -> None:
        self.bring_forward(pane_id)
        if not self._home.has_class("compact"):  # every pane is on screen: the key has nothing to bring
            pane = self._panes[pane_id]
            pane.scroll_visible(animate=False)
            keys = f"{by_key()[0].KEY}-{by_key()[-1].KEY}"
            below = "x".join(map(str, COMPACT_BELOW))
            self.answer(
                "info", f"{pane.KEY}: every pane is on screen at this size ({keys} bring one forward under {below})"
            )

    def action_grow_log(self) -> None:
        """The Log pane holds a few lines; `l` gives it half the screen, and back."""
        self._log_pane.toggle_class("grown")
        self._log_pane.redraw()  # collapsed: the newest whole messages, not what the grown pane scrolled to
        self.call_after_refresh(self._share_spare_rows)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A recorded run (gputop open) offers no key that would act on a live run: shown nowhere, inert."""
        return self.source.live or action not in LIVE_ACTIONS

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_timeline(self) -> None:
        if not isinstance(self.screen, TimelineScreen):
            self.push_screen(TimelineScreen(self.snapshot))

    def action_baseline(self) -> None:
        """`b`: the next earlier session of this target as the baseline, those on this run's device first (newest
        first), then those on other devices, each named as such; past the oldest, none."""
        snapshot = self.snapshot
        if snapshot is None:
            self.answer("info", "baseline: nothing to compare until the run has started")
            return
        own = Path(snapshot.session_dir) if snapshot.session_dir else self.source.session_dir
        device = snapshot.device.id if snapshot.device else None
        try:
            choices = baseline_choices(snapshot.target, own, device)
        except Exception as exc:  # an unreadable store must not end the screen
            self.answer("warning", f"baseline: {exc}")
            return
        if not choices:
            self.answer("info", f"baseline: no earlier session of {snapshot.target} with kept call samples")
            return
        self._baseline_pick += 1
        if self._baseline_pick >= len(choices):
            self._baseline_pick = -1
            self.baseline = None
            self.answer("info", "baseline: none (b picks one again)")
        else:
            try:
                self.baseline = load_baseline(choices[self._baseline_pick])
            except Exception as exc:
                self.answer("warning", f"baseline: {exc}")
                return
            other = self.baseline.other_device(device)
            where = f", on {other}, not {device}: a comparison across devices" if other else ""
            self.answer(
                "warning" if other else "info",
                f"baseline: {self.baseline.label}{where} ({self._baseline_pick + 1} of {len(choices)}; b for the next)",
            )
        self._draw()

    def action_roofline(self) -> None:
        if not isinstance(self.screen, RooflineScreen):
            self.push_screen(RooflineScreen(self.snapshot))

    def action_layers(self) -> None:
        if not isinstance(self.screen, LayersScreen):
            self.push_screen(LayersScreen(self.snapshot))

    # -- failures of workers, in one place ---------------------------------------
    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            self.log_line("error", f"{event.worker.name}: {event.worker.error}")
            if self._quitting:
                self.exit(1)


def queued_noun(kind: str, level: str = "") -> str:
    """What a request made before the calls started is called while it waits: `full profile pass`, `capture`."""
    noun = {"profile": "profile pass", "counters": "counters pass"}.get(kind, kind)
    return f"full {noun}" if level == "full" else noun


def run_engine_app(
    engine_args: list[str], folder: Path, *, announce: bool = False, baseline: LiveBaseline | None = None
) -> int:
    """Start the engine as its own process (`gputop serve`) and the TUI as its owning viewer; returns the exit code.

    The engine's first words (a port in use, a bad option it alone sees) are
    one line here, before the screen is taken; with `announce`, so are its
    metrics URL and any exposure warning.
    """
    source = EngineProcess(engine_args, folder)
    if announce:
        for line in source.startup_lines():
            print(line, file=sys.stderr, flush=True)
    app = GputopApp(source, handle_signals=True, baseline=baseline)
    try:
        code = app.run()
    finally:
        source.stop(timeout=15)
    # The screen is gone: say where the run went (gputop report/open take this folder), or what of it was lost.
    last = farewell(source.record_check())
    print(last.line, file=sys.stderr, flush=True)
    program = watched_program_ending(folder)
    if program is not None and not code and not last.exit_code:
        # gputop -- CMD: the program's exit code is gputop's, and the last line says how it ended
        print(f"gputop: program ended: {program[1]}", file=sys.stderr, flush=True)
        return program[0]
    return code or last.exit_code or 0


def watched_program_ending(folder: Path) -> tuple[int, str] | None:
    """A watched program's exit code and how it ended, from its session's report; None for a run gputop made."""
    try:
        program = json.loads((folder / "report.json").read_text()).get("program")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(program, dict) or not isinstance(program.get("exit_code"), int):
        return None
    return int(program["exit_code"]), ended_text(program)


def run_replay(snapshots: list[RunSnapshot]) -> int:
    """Show recorded snapshots read-only (gputop open); returns the exit code."""
    app = GputopApp(ReplaySource(snapshots), handle_signals=True)
    code = app.run()
    return code or 0


def run_attached(folder: Path) -> int:
    """Follow the run another process drives in `folder` (gputop attach); returns the exit code."""
    app = GputopApp(AttachSource(folder), handle_signals=True)
    code = app.run()
    return code or 0
