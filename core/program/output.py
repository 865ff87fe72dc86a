"""A watched program's own output under the TUI: to the Log and a bounded `program.log`, never slowing it.

The TUI owns the terminal, so the program's stdout and stderr come through pipes
that gputop must drain as fast as the program writes: a pipe left full makes the
program's `print` wait. The readers' threads (`launch.py`) hand each line here,
which costs a deque append and a buffered write; a thread of its own moves the
newest lines into the Log every `FLUSH_S` with one snapshot for the lot (one
snapshot per line made a program printing a line per call nine times slower).

The record stays bounded whatever the program prints: `program.log` keeps the
newest `LOG_HALF` to `2 x LOG_HALF` bytes (when it fills, it becomes
`program.log.1` and a new one starts), and the Log the newest lines. What was
left out is counted (`lines`, `bytes`) and said at the end.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

__all__ = ["FLUSH_S", "LINE_CHARS", "LOG_HALF", "LOG_LINES", "ProgramOutput"]

FLUSH_S = 0.1  # the Log's lines follow the program this closely
LOG_LINES = 200  # lines waiting for the Log at most (it keeps its newest 200 anyway)
LINE_CHARS = 300  # of one line, in the Log (program.log keeps it whole)
LOG_HALF = 512 * 1024  # program.log and program.log.1: the record keeps the newest 0.5-1 MiB of output

LogLines = Callable[[list[tuple[str, str]]], None]


class ProgramOutput:
    """Takes the program's lines from its pipes' readers; the Log gets the newest, program.log a bounded tail."""

    def __init__(self, log_path: Path | None, to_log: LogLines) -> None:
        self._log_path = log_path
        self._to_log = to_log
        self._lock = threading.Lock()
        self._waiting: deque[tuple[str, str]] = deque(maxlen=LOG_LINES)
        self._file: BinaryIO | None = None
        self._file_bytes = 0
        self.lines = 0
        self.bytes = 0
        self.rotated = 0  # times program.log filled and became program.log.1
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if log_path is not None:
            with contextlib.suppress(OSError):
                self._file = open(log_path, "ab")  # noqa: SIM115 - closed by close()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._flush_every, name="gputop-program-output", daemon=True)
        self._thread.start()

    def line(self, stream: str, raw: bytes) -> None:
        """One line as the pipe gave it (with its newline): the readers' threads call this."""
        text = raw.decode("utf-8", "replace").rstrip("\r\n")
        level = "warning" if stream == "stderr" else "info"
        with self._lock:
            self.lines += 1
            self.bytes += len(raw)
            self._waiting.append((level, f"{stream}: {text[:LINE_CHARS]}"))
            self._write(raw)

    def _write(self, raw: bytes) -> None:
        """Into program.log, turned over into program.log.1 when it holds LOG_HALF (under the lock)."""
        if self._file is None or self._log_path is None:
            return
        try:
            if self._file_bytes + len(raw) > LOG_HALF and self._file_bytes > 0:
                self._file.close()
                os.replace(self._log_path, self._log_path.with_name(self._log_path.name + ".1"))
                self._file = open(self._log_path, "ab")  # noqa: SIM115 - closed by close()
                self._file_bytes = 0
                self.rotated += 1
            self._file.write(raw)
            self._file_bytes += len(raw)
        except OSError:  # a full disk loses the log, never the program's pipe
            self._file = None

    def _flush_every(self) -> None:
        while not self._stop.wait(FLUSH_S):
            self.flush()

    def flush(self) -> None:
        """The waiting lines to the Log in one go, and program.log's buffer to the disk."""
        with self._lock:
            lines = list(self._waiting)
            self._waiting.clear()
            if self._file is not None:
                try:
                    self._file.flush()
                except OSError:
                    self._file = None
        if lines:
            with contextlib.suppress(Exception):  # a viewer's trouble must not stop the pipes' drain
                self._to_log(lines)

    def close(self) -> None:
        """The program ended and its pipes are drained: the last lines out, program.log closed."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        self.flush()
        with self._lock:
            if self._file is not None:
                with contextlib.suppress(OSError):
                    self._file.close()
                self._file = None

    def summary(self) -> str | None:
        """One line for the Log when the record kept less than the program printed; None when it kept all."""
        if not self.rotated:
            return None
        kept = "program.log.1 and program.log"
        return f"program output: {self.lines:,} lines ({self.bytes:,} bytes); the record keeps the newest in {kept}"
