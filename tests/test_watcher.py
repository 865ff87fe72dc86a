"""The watchers' one base: looks every period on a daemon thread, results to a callback, a stop that holds."""

from __future__ import annotations

import threading
import time

from gputop.core.watch import Watcher


class Counting(Watcher[int]):
    """Counts its looks; fails on the second and tells nothing on the third."""

    def __init__(self) -> None:
        super().__init__("gputop-test-watch", 0.01)
        self.looks = 0

    def look(self) -> int | None:
        self.looks += 1
        if self.looks == 2:
            raise RuntimeError("a failed look")
        return None if self.looks == 3 else self.looks


def test_looks_go_to_the_callback_and_a_failed_look_is_skipped() -> None:
    seen: list[int] = []
    fifth = threading.Event()
    watcher = Counting()
    watcher.on_update = lambda n: (seen.append(n), n >= 5 and fifth.set())
    watcher.start()
    assert watcher.running
    thread = next(t for t in threading.enumerate() if t.name == "gputop-test-watch")
    assert thread.daemon
    assert fifth.wait(5)
    watcher.stop()
    assert not watcher.running and not thread.is_alive()
    assert seen[:3] == [1, 4, 5]  # the second look raised, the third told nothing: neither ended the thread


def test_stop_before_start_twice_and_from_the_callback() -> None:
    Counting().stop()  # never started: nothing to wait for
    watcher = Counting()
    stopped = threading.Event()

    def stop_from_inside(_: int) -> None:
        watcher.stop()  # on the watcher's own thread: returns at once instead of waiting for itself
        stopped.set()

    watcher.on_update = stop_from_inside
    watcher.start()
    assert stopped.wait(5)
    watcher.stop()
    time.sleep(0.05)  # five periods: a watcher that went on would have looked again
    assert not watcher.running and watcher.looks == 1
