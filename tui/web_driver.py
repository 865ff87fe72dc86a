"""Textual's web driver, made to notice that the server it talks to has gone.

Under `gputop web` (textual-serve) a TUI reads its keys from a pipe on stdin
and writes its screen to a pipe on stdout. Textual's own `WebDriver` ends its
input thread quietly when stdin closes and raises on every write once
stdout's reader is gone, so a TUI whose server died (killed, crashed) would
go on forever, its engine with it, until something killed it; and a write
error in the middle of a frame escapes as an internal error before the run
could write its record. This driver turns either into an orderly exit, the
same as the server's own "quit".
"""

from __future__ import annotations

import asyncio
import signal
import threading
from functools import partial

from textual import messages
from textual.drivers.web_driver import WebDriver

from gputop.tui.ending import exit_code_for

__all__ = ["GputopWebDriver"]


class GputopWebDriver(WebDriver):
    """A `WebDriver` that leaves when its server does: stdin at its end, or stdout with no reader."""

    _gone = False
    _gone_lock = threading.Lock()

    def _server_gone(self) -> None:
        with self._gone_lock:
            if self._gone:
                return
            self._gone = True
        self._app.post_message(messages.ExitApp())  # thread-safe: the app ends as on the server's "quit"

    def start_application_mode(self) -> None:
        super().start_application_mode()
        # Textual's WebDriver ends the app with exit code 0 on SIGINT or SIGTERM. Until the app
        # takes the signals itself (on mount, `ending.SignalEnding`), a signal still ends it with
        # the signal's code (143 for SIGTERM: the app's result is gputop's exit code), as every
        # gputop face does. Seen under load: a viewer signalled before its first screen exited 0.
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, partial(self._app.exit, exit_code_for(signum)))

    def run_input_thread(self) -> None:
        super().run_input_thread()
        if not self.exit_event.is_set():  # the input ended without the app asking: stdin closed
            self._server_gone()

    def write(self, data: str) -> None:
        if self._gone:
            return
        try:
            super().write(data)
        except OSError:  # BrokenPipeError, mostly: nobody reads the screen any more
            self._server_gone()

    def write_meta(self, data: dict[str, object]) -> None:
        if self._gone:
            return
        try:
            super().write_meta(data)
        except OSError:
            self._server_gone()

    def write_binary_encoded(self, data: tuple[str | bytes, ...]) -> None:
        if self._gone:
            return
        try:
            super().write_binary_encoded(data)
        except OSError:
            self._server_gone()
