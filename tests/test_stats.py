"""CallTimer: calls/s follows the last few seconds of calls, not the whole run's average."""

from __future__ import annotations

import pytest

from gputop.core.call_times import RATE_WINDOW_S, CallTimer


def test_rate_is_the_last_seconds_not_the_whole_run() -> None:
    timer = CallTimer()
    stamp = 1000.0
    for _ in range(100):  # 10 calls/s for 10 s
        stamp += 0.1
        timer.add(0.05, ended_at=stamp)
    assert timer.recent_rate(now=stamp) == pytest.approx(10.0)
    stamp += 30.0  # a pause of 30 s, then 50 calls/s
    for _ in range(300):
        stamp += 0.02
        timer.add(0.01, ended_at=stamp)
    snapshot = timer.snapshot(now=stamp)
    assert snapshot.recent_calls_per_s == pytest.approx(50.0)
    # The whole run's average is dragged down by the pause; it is what a finished run's report says.
    assert snapshot.calls_per_s is not None and snapshot.calls_per_s < 15


def test_no_rate_once_the_calls_have_stopped() -> None:
    timer = CallTimer()
    for index in range(20):
        timer.add(0.01, ended_at=10.0 + index * 0.1)
    assert timer.recent_rate(now=12.0) == pytest.approx(10.0)
    assert timer.recent_rate(now=12.0 + RATE_WINDOW_S) is None  # paused or stuck: nothing ended lately
    assert timer.snapshot(now=30.0).recent_calls_per_s is None


def test_a_just_resumed_run_shows_its_rate_at_once() -> None:
    timer = CallTimer()
    timer.add(0.01, ended_at=0.0)
    timer.add(0.01, ended_at=100.0)  # the first call after a long pause: one call is no rate yet
    assert timer.recent_rate(now=100.0) is None
    timer.add(0.01, ended_at=100.25)
    assert timer.recent_rate(now=100.25) == pytest.approx(4.0)


def test_slow_calls_still_have_a_rate() -> None:
    """A model whose calls take 4.7 s (ResNet-50 on two CPU cores) ends fewer than two calls in 5 s."""
    timer = CallTimer()
    for index in range(4):
        timer.add(4.7, ended_at=100.0 + index * 4.7)
    now = 100.0 + 3 * 4.7 + 1.0
    assert timer.recent_rate(now=now) == pytest.approx(1 / 4.7)
    assert timer.recent_rate(now=now + 20.0) is None  # and none once they stop


def test_recent_calls_are_the_newest_in_order_across_the_ring() -> None:
    """What an in-process profile pass is set against: the run's newest max(calls, 20) calls, oldest first."""
    from gputop.core.call_times import WINDOW
    from gputop.core.profiling.overhead import run_window

    timer = CallTimer()
    for i in range(5):
        timer.add(i / 1e3)
    assert timer.recent(run_window(3)) == [0.0, 1.0, 2.0, 3.0, 4.0]  # fewer calls than asked: all of them
    for i in range(5, WINDOW + 30):
        timer.add(i / 1e3)
    newest = timer.recent(run_window(300))
    assert len(newest) == 300
    assert newest == pytest.approx([i for i in range(WINDOW + 30 - 300, WINDOW + 30)])
    assert run_window(3) == 20 and run_window(300) == 300
