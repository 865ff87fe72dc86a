"""RunState is the composition of its parts: few names of its own, publishing outside its lock in order, and a
watched program's calls kept in the program part (issue 54 item 1)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from gputop.core.run.state import RunState
from gputop.core.store.writer import SessionWriter


def _state(tmp_path: Path) -> tuple[RunState, SessionWriter]:
    writer = SessionWriter(tmp_path, {"target": "matmul"})
    return RunState("matmul", tmp_path, writer), writer


def test_run_state_has_at_most_twenty_public_names_of_its_own() -> None:
    """The parts take their events; RunState keeps the lock, the writer, publishing, snapshot and summary."""
    public = [name for name, value in vars(RunState).items() if not name.startswith("_") and callable(value)]
    public += [name for name, value in vars(RunState).items() if isinstance(value, property)]
    assert len(public) <= 20, public


def test_snapshots_reach_the_record_in_publishing_order_from_many_threads(tmp_path: Path) -> None:
    """Built under the lock, handed to the writer after it: samples.jsonl still has every seq once, in order."""
    state, writer = _state(tmp_path)

    def produce(index: int) -> None:
        for call in range(100):
            state.calls.add(0.001)
            state.log.add("info", f"producer {index} call {call}")

    threads = [threading.Thread(target=produce, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    state.lifecycle.enter("finished")
    writer.close(None, state="finished", exit_code=0, published=state.published)
    seqs = [json.loads(line)["seq"] for line in (tmp_path / "samples.jsonl").read_text().splitlines()]
    assert seqs == list(range(1, state.published + 1))
    assert state.snapshot.calls.count == 400


def test_a_watched_programs_busiest_function_is_the_runs_calls_without_a_swap(tmp_path: Path) -> None:
    """The calls and module parts ask the program part: the run's own timer is untouched."""
    state, writer = _state(tmp_path)
    ns = 1_000_000
    rows: list[object] = [["app.step", 1, i * ns, i * ns + 2 * ns] for i in range(5)]
    rows += [["app.init", 1, 0, 7 * ns]]
    assert state.program.add_calls(rows) == 6
    state.publish(force=True)
    snapshot = state.snapshot
    assert snapshot.function == "app.step" and snapshot.calls.count == 5
    assert state.calls.own_timer.count == 0 and state.module.named is None
    writer.close(None, state="finished", exit_code=0, published=state.published)
