"""The one shape of every machine watcher: a look every period, on a daemon thread, until stopped.

Each watcher (the memory sampler, the neighbour watch, the clock watch) reads
the machine from beside the run at a fixed period and hands what it saw to a
callback. They all want the same thread around that read: started once,
stopped by a `threading.Event` (so a stop wakes it at once rather than after
a sleep), re-armed only after a look ends (a slow read never piles up looks),
a failed look skipped rather than fatal, and a daemon that `stop` joins, so it
never outlives the run that owns it nor holds the process open. A subclass
says only what one look is; one whose looks need more than a period (the PM
sampler's watch, which a pause wakes at once) gives its thread's `run` too,
and keeps the start, the stop and the join.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["JOIN_S", "Watcher"]

JOIN_S = 5.0  # how long `stop` waits for a look under way: NVML and psutil reads take milliseconds
T = TypeVar("T")


class Watcher(ABC, Generic[T]):
    """Calls `look()` every `every_s` seconds on a daemon thread named `name`, from `start()` to `stop()`.

    Each result that is not None goes to `on_update` (when set), on the watcher's thread. An exception
    from `look` or from `on_update` skips that one look; the next comes a period later.
    """

    def __init__(self, name: str, every_s: float, on_update: Callable[[T], None] | None = None) -> None:
        self.name = name
        self.every_s = every_s
        self.on_update = on_update  # may be set after construction, before `start`
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @abstractmethod
    def look(self) -> T | None:
        """One look at the machine: the result for `on_update`, or None for nothing to tell."""

    @property
    def running(self) -> bool:
        """Whether the thread is started and not yet stopped."""
        return self._thread is not None and self._thread.is_alive() and not self._stopping.is_set()

    def start(self) -> None:
        """Start the thread; the first look comes one period from now. A watcher runs once: after `stop`, make
        a new one."""
        self._thread = threading.Thread(target=self.run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the looks and wait (up to `JOIN_S`) for one under way. Safe to call twice, before `start`, or
        from `on_update` itself (it then returns without waiting for its own thread)."""
        self._stopping.set()
        thread = self._thread
        if thread is not None and thread.is_alive() and threading.current_thread() is not thread:
            thread.join(timeout=JOIN_S)

    def run(self) -> None:
        """The thread's body: a look every period until `stop`."""
        while not self._stopping.wait(self.every_s):
            try:
                result = self.look()
                if result is not None and self.on_update is not None:
                    self.on_update(result)
            except Exception:  # a failed look skips one period, never ends the run
                continue
