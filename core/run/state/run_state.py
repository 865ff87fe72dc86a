"""RunState: the one object a run's producers report to, its parts behind one lock, and the snapshots it publishes.

A run's thread, its memory sampler, its neighbour and clock watches, its PM
watch and its flows report to the part a fact belongs to (`state.calls.add`,
`state.parameters.begin`, `state.lifecycle.enter`); readers on other threads
(the TUI, `gputop run`, metrics scrapes) see only the frozen `RunSnapshot`s
RunState publishes. Each part (this package's other modules) holds one
concern's data, takes the run's one lock to change it, and builds its own
piece of a snapshot; RunState is the composition: the lock, the session
writer, the parts, and publishing (`publish`, `snapshot`, `summary`).

Snapshots go out at most every `PUBLISH_INTERVAL_S` unless something
important changed (`publish(force=True)`). A snapshot is built under the run's
lock and handed to the session writer and the subscribers after it is
released, so a producer never waits on them; see `publish` for how
`samples.jsonl` still gets the snapshots in publishing order.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from gputop.core.run.state.calls import CallsState
from gputop.core.run.state.captures import CapturesState
from gputop.core.run.state.clocks import ClocksState
from gputop.core.run.state.devices import DevicesState
from gputop.core.run.state.lifecycle import LifecycleState
from gputop.core.run.state.link import RunLink
from gputop.core.run.state.log import LogState
from gputop.core.run.state.memory import MemoryState
from gputop.core.run.state.module import ModuleState
from gputop.core.run.state.neighbours import NeighboursState
from gputop.core.run.state.outcome import OutcomeState
from gputop.core.run.state.parameters import ParametersState
from gputop.core.run.state.pm import PmState
from gputop.core.run.state.profile import ProfileState
from gputop.core.run.state.program import ProgramState
from gputop.core.snapshot import RunSnapshot, RunSummary
from gputop.core.store.writer import SessionWriter

__all__ = ["PUBLISH_INTERVAL_S", "RunState", "Subscriber"]

Subscriber = Callable[[RunSnapshot], None]
PUBLISH_INTERVAL_S = 0.1  # at most 10 snapshots a second from calls and samples


class RunState:
    """Everything a run knows about itself, in its parts behind one lock, published as snapshots.

    A producer on any of the run's threads tells the part its fact belongs to;
    the part takes the lock, changes its data and, where a viewer must see the
    change at once, publishes (`force`). Readers get frozen values only.
    """

    def __init__(
        self, target: str, session_dir: Path, writer: SessionWriter, function: str | None = None, *, segment: int = 0
    ) -> None:
        self._target = target
        self._segment = segment
        self._session_dir = session_dir
        self._writer = writer
        self._lock = threading.RLock()
        # Orders the hand-outs to the writer (see `publish`); taken before self._lock, never under it.
        self._handing = threading.Lock()
        self._subscribers: list[Subscriber] = []
        self._published = 0
        self._last_publish = 0.0
        link = RunLink(self._lock, writer, self.publish)
        # The parts, each changed only under self._lock; a part that needs a sibling's facts is given it.
        self.log = LogState(link)
        self.program = ProgramState(link)
        self.module = ModuleState(link, self.program, named=function)
        self.devices = DevicesState(link)
        self.calls = CallsState(link, self.program)
        self.memory = MemoryState(link)
        self.profile = ProfileState(link)
        self.captures = CapturesState(link)
        self.outcome = OutcomeState(link, self.log)
        self.parameters = ParametersState(link, self.outcome)
        self.neighbours = NeighboursState(link)
        self.clocks = ClocksState(link, self.log, self.calls)
        self.calls.clock_readings = self.clocks.readings  # each group of calls gets the clock it ran at
        self.calls.neighbour_readings = self.neighbours.readings  # ... and what ran beside it
        self.pm = PmState(link, self.log, self.calls, self.devices)
        self.lifecycle = LifecycleState(link, self.log)
        self._snapshot = self._build_snapshot()
        writer.keep_samples_from(self.calls.samples)
        # A record that stops (a full disk) is an error in the Log too: a TUI's engine has no terminal to say it
        # on, and its stderr (engine.log) is on the same full disk. Error-level: the headless echo skips it,
        # since the writer has said it on stderr already.
        writer.tell_record_stopped(lambda text: self.log.add("error", text))

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call `callback` with every new snapshot; returns an unsubscribe function."""
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    @property
    def snapshot(self) -> RunSnapshot:
        """The newest published snapshot."""
        with self._lock:
            return self._snapshot

    @property
    def published(self) -> int:
        """How many snapshots have been published (the newest's `seq`)."""
        with self._lock:
            return self._published

    def summary(self, *, state: str, exit_code: int) -> RunSummary:
        """The run's closing facts for its report (`state` may be `interrupted`, which no snapshot says)."""
        with self._lock:
            return RunSummary(
                state=state,
                exit_code=exit_code,
                session_dir=str(self._session_dir),
                **self.memory.summary_fields(),
                **self.outcome.summary_fields(),
                **self.neighbours.summary_fields(),
            )

    def publish(self, force: bool = False) -> None:
        """Build and hand out a snapshot, at most every PUBLISH_INTERVAL_S unless `force`.

        The snapshot is built under the run's lock and handed to the writer after it is released, so a
        producer (a call, a sample) never waits on the writer's queue. `samples.jsonl` must still hold the
        snapshots in `seq` order, and two threads publishing at once could hand theirs out in the other
        order; so numbering and handing out happen under `_handing`, a second lock that only publishing
        takes, always before the run's lock. The parts publish after releasing the run's lock (never under
        it), so no thread waits for `_handing` while holding the run's lock. The subscribers are called
        outside both, as before: each sees every snapshot, but no order is promised across threads.
        """
        now = time.monotonic()
        with self._handing:
            with self._lock:
                if not force and now - self._last_publish < PUBLISH_INTERVAL_S:
                    return
                self._last_publish = now
                self._published += 1
                self._snapshot = snapshot = self._build_snapshot(exact=force)
                subscribers = list(self._subscribers)
            self._writer.on_snapshot(snapshot)
        for callback in subscribers:
            try:
                callback(snapshot)
            except Exception:  # a broken subscriber must not stop the run
                continue

    def _build_snapshot(self, exact: bool = False) -> RunSnapshot:
        """The parts' pieces, each built by its part, with what only RunState knows: the run and the count.
        `exact` (a forced snapshot: a state change, the calls' end) looks for the calls' groups again now."""
        return RunSnapshot(
            target=self._target,
            session_dir=str(self._session_dir),
            segment=self._segment,
            seq=self._published,
            **self.lifecycle.fields(),
            **self.log.fields(),
            **self.module.fields(),
            **self.devices.fields(),
            **self.calls.fields(exact=exact),
            **self.memory.fields(),
            **self.profile.fields(),
            **self.captures.fields(),
            **self.parameters.fields(),
            **self.neighbours.fields(),
            **self.clocks.fields(),
            **self.pm.fields(time.perf_counter()),
            **self.program.fields(),
            **self.outcome.fields(),
        )
