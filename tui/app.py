"""The gputop Textual app: holds the run's source, composes its screens, starts and ends.

It holds no engine logic and no list of panes: the run's screen
(`gputop.tui.screens.MainScreen`) composes the panes from the registry
`gputop.tui.panes.PANES`, lays them out and owns the keys that act on the run;
the windows over it are `gputop.tui.screens`. The app keeps the keys of the
whole app (quit, help, 1-5 to bring a pane forward), the source and the
snapshot it last sent. Snapshots arrive as coalescing `SnapshotArrived`
messages from the bridge and are drawn at most 12.5 times a second; blocking
actions (stopping the engine, restarting it) run in thread workers that
report back with messages, and every worker failure is shown in the Log pane
from one handler. The process around it (which source, the last line, the
exit code) is `gputop.tui.launch`; a signal's ending is `gputop.tui.ending`.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any, TypeVar

from textual import events, on, work
from textual.app import App
from textual.binding import Binding
from textual.driver import Driver
from textual.timer import Timer
from textual.worker import Worker, WorkerState

from gputop.tui.bridge import (
    BUSY_STATES,
    CallStats,
    LiveBaseline,
    Phases,
    RunSnapshot,
    SnapshotArrived,
    SnapshotSource,
    SourceNote,
)
from gputop.tui.ending import SignalEnding, end_screen_on_signals, parent_gone, parent_pid, restore_terminal
from gputop.tui.panes import BoxPane, by_key
from gputop.tui.screens import DRAWN_WINDOWS, HelpScreen, MainScreen

__all__ = ["GputopApp"]

# At most 12.5 frames a second, whatever the data rate: a little above the engine's 10 snapshots a second, so
# a snapshot is drawn as it arrives rather than waiting out a frame timer (at 0.1 s, one in twenty waited
# up to a whole frame: a drawn snapshot's age p95 was 98-101 ms on an H100).
MIN_FRAME_S = 0.08
VIEWER_STATS_ENV = "GPUTOP_VIEWER_STATS"  # a file the app writes its drawing figures to when it ends (benchmarks)
MAX_AGES = 100_000

PaneT = TypeVar("PaneT", bound=BoxPane)


# The blocking work a key starts, named as the key's answer names it (a failure reads `reload: ...`).
WORKER_WORDS = {"engine": "the engine", "devices": "devices", "capture": "capture", "export": "export"}


class GputopApp(App[int]):
    TITLE = "gputop"
    MODES = {"main": MainScreen}  # Textual loads a mode screen's CSS (the layout) as it does the app's
    DEFAULT_MODE = "main"
    # The keys of the whole app. `?` (help) and `q` (quit) are bound on MainScreen, ahead of the run's own keys:
    # the footer lists the screen's keys before the app's, and those two lead it.
    BINDINGS = [
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        *(Binding(pane.KEY, f"bring_forward('{pane.PANE_ID}')", show=False) for pane in by_key()),
    ]

    def __init__(
        self, source: SnapshotSource, *, handle_signals: bool = False, baseline: LiveBaseline | None = None
    ) -> None:
        super().__init__()
        self.source = source
        self.baseline = baseline  # a recorded run the Run pane, the Kernels table and the Timeline compare with
        self._handle_signals = handle_signals  # only the real command line: tests keep pytest's handlers
        self.snapshot: RunSnapshot | None = None
        self.frames = 0
        self.drawn_snapshot: RunSnapshot | None = None  # the snapshot the panes show: `snapshot` may wait a frame
        self._last_frame = 0.0
        self._frame_timer: Timer | None = None
        self.quitting = False  # q, a signal or a lost parent: the engine is stopping
        self.ended = False  # unmounted: nothing is drawn any more
        self._ending: SignalEnding | None = None
        self._parent_pid = parent_pid()
        self._draw_ages_ms: list[float] = []
        self._main: MainScreen | None = None
        self._generation = 0  # snapshots of older runs (before a reload) are not drawn

    def get_driver_class(self) -> type[Driver]:
        driver_class = super().get_driver_class()
        from textual.drivers.web_driver import WebDriver

        if driver_class is WebDriver:  # under a web server: leave when it does (see web_driver)
            from gputop.tui.web_driver import GputopWebDriver

            return GputopWebDriver
        return driver_class

    @property
    def main(self) -> MainScreen:
        """The run's screen, under every window (the same one while a window is open, and once the app has ended:
        a snapshot or a worker's line may still come while it ends)."""
        if self._main is None:
            main = self.screen_stack[0]
            assert isinstance(main, MainScreen)
            self._main = main
        return self._main

    def on_mount(self) -> None:
        """The run's screen is up (a mode's screen is mounted before the app): the source starts sending, and the
        app takes signals where it should."""
        assert self.main.ready, "the run's screen mounts first"
        self._generation = self.source.generation
        self.source.attach(self)
        self.source.start()
        self.set_interval(1.0, self._tick_busy_header)
        if self._parent_pid is not None:
            self.set_interval(1.0, self._check_parent)
        if self._handle_signals:
            self._ending = end_screen_on_signals(self.source, self._on_signal, lambda: restore_terminal(self._driver))

    def _on_signal(self, code: int) -> None:
        """The first signal, on the app's own thread: the engine is stopping; end the app with `code`."""
        self.quitting = True
        self.exit(code)

    def _check_parent(self) -> None:
        """A child of gputop web whose server is gone (killed, crashed) leaves as if the viewer quit."""
        if self._parent_pid is not None and parent_gone(self._parent_pid) and not self.quitting:
            self.log_line("warning", f"the process that started this one (pid {self._parent_pid}) is gone")
            self.call_later(self.action_quit)

    def on_unmount(self) -> None:
        # The signal ending stays in place until the process leaves: a signal during the engine's
        # teardown below must still end it with its record, not kill it without one.
        self.ended = True
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
        # The first Resize may come before the run's screen is up: it fits itself as it mounts.
        if (self._main is not None or self.screen_stack) and self.main.ready:
            self.main.fit(event.size.width, event.size.height)  # even while a window is over it

    # -- snapshots ------------------------------------------------------------
    def on_snapshot_arrived(self, message: SnapshotArrived) -> None:
        if message.generation < self._generation:
            return  # the run before a reload or a device switch: none of its numbers are drawn
        self.snapshot = message.snapshot
        self.main.take_waiting(message.snapshot.state)
        wait = MIN_FRAME_S - (time.monotonic() - self._last_frame)
        if wait <= 0:
            self.redraw()
        elif self._frame_timer is None:
            self._frame_timer = self.set_timer(wait, self.redraw)

    def redraw(self) -> None:
        """Draw the newest snapshot on the run's screen and on a window that draws it."""
        self._frame_timer = None
        snapshot = self.snapshot
        if snapshot is None or self.ended or not self.main.ready or not self.main.log_pane.is_attached:
            return
        self._last_frame = time.monotonic()
        self.frames += 1
        self.drawn_snapshot = snapshot
        self.main.show(snapshot)
        if isinstance(self.screen, DRAWN_WINDOWS):
            self.screen.show(snapshot)
        if len(self._draw_ages_ms) < MAX_AGES:
            # How old the snapshot was once drawn: the engine's publish to this screen, across the process boundary.
            self._draw_ages_ms.append((time.time() - snapshot.timestamp) * 1e3)

    def _tick_busy_header(self) -> None:
        """While importing, compiling or loading no snapshots come: keep the elapsed time moving."""
        snapshot = self.snapshot
        if snapshot is not None and snapshot.state in BUSY_STATES and not self.ended:
            self.main.show_header(snapshot)

    def log_line(self, level: str, message: str) -> None:
        self.main.log_pane.add(level, message)

    def answer(self, level: str, message: str) -> None:
        """A key's answer, in one line: in the Log, and as a toast too where the Log cannot be seen now (a window
        over the panes, or a screen too small for them)."""
        self.log_line(level, message)
        if self.screen is not self.main or self.main.has_class("too-small"):
            self.notify(message, severity="information" if level == "info" else level)  # type: ignore[arg-type]

    def on_source_note(self, message: SourceNote) -> None:
        self.log_line(message.level, message.text)

    def pane(self, kind: type[PaneT]) -> PaneT:
        """The app's pane of class `kind`, by its declared id (the same pane while a window is open)."""
        return self.main.pane(kind)

    # -- the run: a new one in place of this, and the end -----------------------
    def restart_run(self, **changes: object) -> None:
        """Restart the run with `changes` (a device): every pane empty now, and nothing of the old run from here on.

        The source numbers its runs; snapshots of this one or older, even those
        already queued, are dropped (`on_snapshot_arrived`) until the new run's come.
        """
        self._generation = self.source.generation + 1
        self.main.forget_run()
        old = self.snapshot
        if old is not None:
            self.snapshot = RunSnapshot(
                state="idle",
                target=old.target,
                function=old.function,
                device=None if "device" in changes else old.device,
                phases=Phases(),
                calls=CallStats(),
                memory=None,
                memory_history=(),
                diagnostics=(),
                events=(),
                session_dir=old.session_dir,
            )
            self.redraw()
        self._restart_engine(**changes)

    @work(thread=True, exclusive=True, group="engine", exit_on_error=False)
    def _restart_engine(self, **changes: object) -> None:
        self.source.restart(**changes)

    async def action_quit(self) -> None:
        if self.quitting:
            return
        self.quitting = True
        self.log_line("info", "leaving; the run goes on" if self.source.origin else "stopping the engine...")
        self._stop_engine_and_exit()

    @work(thread=True, exclusive=True, group="engine", exit_on_error=False)
    def _stop_engine_and_exit(self) -> None:
        self.source.stop(timeout=15)
        self.call_from_thread(self.exit, 0)

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.main.refused_actions()))

    def action_bring_forward(self, pane_id: str) -> None:
        self.main.bring_forward(pane_id)
        self.main.say_every_pane_shown(pane_id)  # the wide layout: the key has nothing to bring

    # -- failures of workers, in one place (the run's screen hands its own here) ----------------------
    @on(Worker.StateChanged)
    def worker_failed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            # What the user asked for, in their words: a worker's function name is the code's, not theirs.
            said = WORKER_WORDS.get(event.worker.group, event.worker.group)
            self.log_line("error", f"{said}: {event.worker.error}")
            if self.quitting:
                self.exit(1)
