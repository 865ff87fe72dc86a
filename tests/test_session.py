"""The engine API: a Session on its thread, snapshots, pause, resume and stop."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest

from gputop.core.session import RunConfig, Session
from gputop.core.snapshot import RunSnapshot


def test_snapshots_follow_the_phases_in_order() -> None:
    seen: list[RunSnapshot] = []
    session = Session(RunConfig(target="demo:mlp", device="cpu", iterations=3))
    session.subscribe(seen.append)
    session.start()
    assert session.wait(300)
    states = [s.state for s in seen]
    order = ["compiling", "loading", "running", "finished"]
    positions = [states.index(s) for s in order]
    assert positions == sorted(positions), states
    final = seen[-1]
    assert final.calls.count == 3 and final.phases.teardown_s is not None
    assert final.memory is not None and final.memory.host_rss_bytes > 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        final.state = "changed"  # type: ignore[misc]
    assert all(isinstance(s.timestamp, float) for s in seen)


def test_continuous_run_pauses_resumes_and_stops() -> None:
    session = Session(RunConfig(target="demo:mlp", device="cpu", iterations=None, sample_interval_s=0.05))
    running = threading.Event()
    session.subscribe(lambda s: running.set() if s.state == "running" and s.calls.count > 2 else None)
    session.start()
    assert running.wait(120)
    session.pause()
    time.sleep(0.3)  # a call in flight may still land
    paused_count = session.snapshot.calls.count
    time.sleep(0.5)
    assert session.snapshot.state == "paused"
    assert session.snapshot.calls.count == paused_count
    session.resume()
    deadline = time.monotonic() + 30
    while session.snapshot.calls.count <= paused_count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session.snapshot.calls.count > paused_count
    session.stop()
    assert session.wait(30)
    snap = session.snapshot
    assert snap.state == "stopped" and snap.phases.teardown_s is not None
    # Memory history feeds the sparkline: samples of live device bytes.
    assert snap.memory_history and max(snap.memory_history) > 0


def test_errors_end_in_an_error_snapshot() -> None:
    session = Session(RunConfig(target="demo:mlp", device="vulkan:99", iterations=1))
    session.start()
    assert session.wait(60)
    snap = session.snapshot
    assert snap.state == "error" and snap.error_exit_code == 4
    assert snap.events[-1].level == "error"


def test_a_broken_subscriber_does_not_stop_the_run() -> None:
    def broken(_: RunSnapshot) -> None:
        raise ValueError("subscriber bug")

    session = Session(RunConfig(target="demo:mlp", device="cpu", iterations=2))
    session.subscribe(broken)
    session.start()
    assert session.wait(300)
    assert session.snapshot.state == "finished"
