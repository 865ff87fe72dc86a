"""The parameters' load as it runs: bytes in place so far, and its totals once the last byte landed.

A state part (see `gputop.core.run.state`): its events take the run's lock and
publish (progress within the publishing interval, the start and the end at
once); `fields()` is its piece of every snapshot. While the load
runs, each snapshot's `ParameterLoad` has its seconds counted up to the moment
the snapshot is built, so the rate and the time left move between progress
reports. What the load leaves for the report is part of the outcome: `end`
hands it to `outcome.OutcomeState.parameters_loaded`.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TypedDict

from gputop.core.records.parameters import ParameterLoad, ParameterStages
from gputop.core.run.state.link import RunLink
from gputop.core.run.state.outcome import OutcomeState

__all__ = ["ParametersFields", "ParametersState"]


class ParametersFields(TypedDict):
    """The snapshot's fields this part fills."""

    parameters: ParameterLoad | None


class ParametersState:
    """The newest load (None before any) and when it began (monotonic)."""

    def __init__(self, link: RunLink | None = None, outcome: OutcomeState | None = None) -> None:
        self.link = link or RunLink.alone()
        self.outcome = outcome or OutcomeState(self.link)
        self.load: ParameterLoad | None = None
        self.started = 0.0  # monotonic

    def begin(self, mode: str, total_bytes: int, files: int, *, observed: bool, started: float | None = None) -> None:
        """The load began at `started` (monotonic; now by default); `observed`: chunks are counted."""
        with self.link.lock:
            self.started = time.monotonic() if started is None else started
            self.load = ParameterLoad(mode, total_bytes, 0, 0.0, observed=observed, files=files)
        self.link.publish(True)

    def progress(self, loaded_bytes: int) -> None:
        """Bytes in place so far, from the loader's threads; nothing is kept (or published) when no load runs."""
        with self.link.lock:
            if self.load is None or self.load.done:
                return
            self.load = replace(self.load, loaded_bytes=loaded_bytes)
        self.link.publish(False)

    def end(
        self,
        loaded_bytes: int,
        seconds: float,
        *,
        mode: str | None = None,
        zero_copy: bool = False,
        stages: ParameterStages | None = None,
    ) -> None:
        """The last byte is in place: the load's totals (and its mode, if a fallback changed it, and the streamed
        loader's stage times) go out, and to the outcome; nothing is kept when no load began."""
        with self.link.lock:
            if self.load is None:
                return
            self.load = replace(
                self.load,
                loaded_bytes=loaded_bytes,
                seconds=seconds,
                done=True,
                mode=mode or self.load.mode,
                timestamp=time.time(),
                zero_copy=zero_copy,
                stages=stages,
            )
            self.outcome.parameters_loaded(loaded_bytes, seconds, mode=mode, zero_copy=zero_copy, stages=stages)
        self.link.publish(True)

    def fields(self) -> ParametersFields:
        load = self.load
        if load is not None and not load.done:
            load = replace(load, seconds=time.monotonic() - self.started, timestamp=time.time())
        return ParametersFields(parameters=load)
