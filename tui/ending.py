"""How any gputop process ends on a signal, whatever its face is doing at that moment.

The first SIGINT, SIGTERM or SIGHUP asks the run to end after the call in
flight and lets the face (the TUI, a headless loop, the web server) finish
its own way; the process leaves within `GRACE_S` even if the run or the face
is stuck, with the record written. A second signal writes the record at once
(`interrupted`, the report from the newest snapshot) and leaves.

The handler is a plain Python signal handler, not an event-loop callback:
Python runs it on the main thread even while that thread is blocked in a
system call. That is the root of a bug seen under `gputop web`: a TUI whose
output pipe was full (its browser stalled) sat in `write()` inside the event
loop, so the loop-based SIGTERM handler never ran while the engine thread
went on calling the GPU flat out. Nothing here depends on the loop turning.

The TUI's side of it lives here too: `end_screen_on_signals` puts the plain
handlers in place of the event loop's, `restore_terminal` gives the terminal
back when the process leaves without the app's own ending, and `parent_gone`
tells a child of gputop web that its server is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gputop.tui.bridge import EXIT_SIGHUP, EXIT_SIGINT, EXIT_SIGTERM

if TYPE_CHECKING:  # the headless faces end here too: they need not load the TUI's sources
    from gputop.tui.bridge import SnapshotSource

__all__ = [
    "GRACE_S",
    "PARENT_ENV",
    "SignalEnding",
    "end_screen_on_signals",
    "exit_code_for",
    "parent_gone",
    "parent_pid",
    "restore_terminal",
]

GRACE_S = 10.0  # the run's own ending (teardown, report) gets this long after the first signal
FACE_GRACE_S = 5.0  # then the face (terminal restored, web children reaped) gets this long
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
PARENT_ENV = "GPUTOP_PARENT_PID"  # set by gputop web for its children: live only as long as that process
TERMINAL_RESET = "\x1b[?1000l\x1b[?1003l\x1b[?1015l\x1b[?1006l\x1b[?2004l\x1b[<u\x1b[?1049l\x1b[?25h\x1b[?1004l"


def parent_pid() -> int | None:
    """The process this one must not outlive (a child of gputop web), from PARENT_ENV; None when not a child."""
    parent = os.environ.get(PARENT_ENV, "")
    return int(parent) if parent.isdigit() else None


def parent_gone(pid: int) -> bool:
    """The process `parent_pid` named is no longer this one's parent (killed, crashed)."""
    return os.getppid() != pid


def exit_code_for(signum: int) -> int:
    return {signal.SIGINT: EXIT_SIGINT, signal.SIGHUP: EXIT_SIGHUP}.get(signal.Signals(signum), EXIT_SIGTERM)


def _say(line: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"gputop: {line}\n")
        sys.stderr.flush()


class SignalEnding:
    """Signal handlers for one process: a polite first signal, a final second one, a deadline either way.

    SIGHUP (the terminal went away) counts as a signal from the user: 129.

    Args:
        interrupt: asks the run to end, recorded as interrupted with the code (must not block).
        wait: blocks until the run has ended and its record is written, or the timeout; True when it has.
        abandon: writes the interrupted record now, without waiting for the run (the second signal).
        on_first: tells the face to end (called from the ending's own thread; must be thread-safe).
        on_leave: last words of the face before the process leaves without it (restore the terminal).
        face: what the face is called in the line said when it does not end in time.
        say: prints one line for the user (stderr by default).
    """

    def __init__(
        self,
        *,
        interrupt: Callable[[int], None],
        wait: Callable[[float], bool],
        abandon: Callable[[int], None],
        on_first: Callable[[int], None] | None = None,
        on_leave: Callable[[], None] | None = None,
        face: str = "the screen",
        say: Callable[[str], None] = _say,
        grace_s: float = GRACE_S,
    ) -> None:
        self._interrupt = interrupt
        self._wait = wait
        self._abandon = abandon
        self._on_first = on_first
        self._on_leave = on_leave
        self._face = face
        self._say = say
        self._grace_s = grace_s
        self.code: int | None = None  # the first signal's exit code, once one came
        self._again = threading.Event()
        self._previous: dict[int, Any] = {}
        self._pipe: tuple[int, int] | None = None

    SIGNALS = SIGNALS

    def install(self) -> None:
        """Take SIGINT, SIGTERM and SIGHUP (not SIGHUP when it is ignored, as under nohup); main thread only."""
        self._pipe = os.pipe()
        threading.Thread(target=self._listen, args=(self._pipe[0],), name="gputop-signals", daemon=True).start()
        for signum in SIGNALS:
            current = signal.getsignal(signum)
            if signum == signal.SIGHUP and current == signal.SIG_IGN:
                continue
            self._previous[signum] = signal.signal(signum, self._handle)

    def uninstall(self) -> None:
        for signum, handler in self._previous.items():
            with contextlib.suppress(TypeError, ValueError):
                signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        self._previous.clear()
        if self._pipe is not None and self.code is None:
            os.close(self._pipe[1])  # the listener reads the end of the pipe and goes
            self._pipe = None

    def _handle(self, signum: int, _frame: Any) -> None:
        # Runs on the main thread between two bytecodes, or inside a blocked system call: it takes no
        # lock (the main thread may hold any) and starts no thread; a byte in a pipe wakes the listener.
        if self.code is None:
            self.code = exit_code_for(signum)
        if self._pipe is not None:
            with contextlib.suppress(OSError):
                os.write(self._pipe[1], bytes([signum]))

    def _listen(self, read_end: int) -> None:
        """The first byte starts the ending; the second tells it the user means it."""
        with contextlib.suppress(OSError):
            if not os.read(read_end, 1):
                os.close(read_end)
                return
            code = self.code if self.code is not None else EXIT_SIGTERM
            threading.Thread(target=self._end, args=(code,), name="gputop-ending", daemon=True).start()
            if os.read(read_end, 1):
                self._again.set()

    def _end(self, code: int) -> None:
        self._interrupt(code)
        if self._on_first is not None:
            with contextlib.suppress(Exception):  # a face already gone cannot be told
                self._on_first(code)
        deadline = time.monotonic() + self._grace_s
        ended = False
        while not ended and not self._again.is_set() and time.monotonic() < deadline:
            ended = self._wait(0.2)
        if self._again.is_set():
            self._leave(code, "interrupted again, leaving now")
        if not ended:
            self._leave(code, f"the run did not end within {self._grace_s:.0f} s of the signal; leaving now")
        # The run has ended and its record is written: the face now restores the terminal or reaps its
        # children. If it is stuck (an output nobody reads), leave without it.
        if self._again.wait(FACE_GRACE_S):
            self._leave(code, "interrupted again, leaving now")
        self._leave(code, f"{self._face} did not end within {FACE_GRACE_S:.0f} s of the run; leaving")

    def _leave(self, code: int, line: str) -> None:
        with contextlib.suppress(Exception):
            self._abandon(code)  # a no-op when the run already wrote its ending
        if self._on_leave is not None:  # on a thread of its own: a terminal that blocks writes must not hold us
            last_words = threading.Thread(target=self._on_leave, name="gputop-last-words", daemon=True)
            last_words.start()
            last_words.join(1.0)
        self._say(line)
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        os._exit(code)


def end_screen_on_signals(
    source: SnapshotSource, end_screen: Callable[[int], None], restore: Callable[[], None]
) -> SignalEnding:
    """SIGINT/SIGTERM/SIGHUP from outside the TUI: stop the engine, `end_screen` with 130/143/129 on the app's
    own thread, and `restore` the terminal if the process must leave without the app's ending.

    The drivers install event-loop handlers; they are replaced by plain ones
    (`SignalEnding`), which run even while the loop is blocked writing a frame.
    Call on the app's event loop, once it runs.
    """
    loop = asyncio.get_running_loop()
    for signum in SIGNALS:
        loop.remove_signal_handler(signum)

    def on_first(code: int) -> None:
        loop.call_soon_threadsafe(end_screen, code)

    ending = SignalEnding(
        interrupt=source.interrupt,
        wait=source.stop,
        abandon=source.abandon,
        on_first=on_first,
        on_leave=restore,
    )
    ending.install()
    return ending


def restore_terminal(driver: Any) -> None:
    """The process leaves without the app's own ending (a second signal): give the terminal back.

    `driver` is the app's Textual driver (None before it has one); a web driver has no terminal to give back.
    """
    stdin, stdout = sys.__stdin__, sys.__stdout__
    if driver is None or driver.is_web or stdin is None or stdout is None:
        return
    attrs = getattr(driver, "attrs_before", None)
    if attrs is not None:
        import termios

        termios.tcsetattr(stdin.fileno(), termios.TCSANOW, attrs)
    os.write(stdout.fileno(), TERMINAL_RESET.encode())
