"""The parameters' load as it runs: bytes in place so far, and its totals once the last byte landed.

A state part (see `gputop.core.run.state`): RunState holds it and changes it
under its lock only; `fields()` is its piece of every snapshot. While the load
runs, each snapshot's `ParameterLoad` has its seconds counted up to the moment
the snapshot is built, so the rate and the time left move between progress
reports. What the load leaves for the report is part of the outcome
(`outcome.OutcomeState.parameters_loaded`).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TypedDict

from gputop.core.records.parameters import ParameterLoad, ParameterStages

__all__ = ["ParametersFields", "ParametersState"]


class ParametersFields(TypedDict):
    """The snapshot's fields this part fills."""

    parameters: ParameterLoad | None


class ParametersState:
    """The newest load (None before any) and when it began (monotonic)."""

    def __init__(self) -> None:
        self.load: ParameterLoad | None = None
        self.started = 0.0  # monotonic

    def begin(self, mode: str, total_bytes: int, files: int, *, observed: bool, started: float | None = None) -> None:
        self.started = time.monotonic() if started is None else started
        self.load = ParameterLoad(mode, total_bytes, 0, 0.0, observed=observed, files=files)

    def progress(self, loaded_bytes: int) -> bool:
        """Bytes in place so far; False (and nothing kept) when no load runs."""
        if self.load is None or self.load.done:
            return False
        self.load = replace(self.load, loaded_bytes=loaded_bytes)
        return True

    def end(
        self,
        loaded_bytes: int,
        seconds: float,
        *,
        mode: str | None = None,
        zero_copy: bool = False,
        stages: ParameterStages | None = None,
    ) -> bool:
        """The load's totals; False (and nothing kept) when no load began."""
        if self.load is None:
            return False
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
        return True

    def fields(self) -> ParametersFields:
        load = self.load
        if load is not None and not load.done:
            load = replace(load, seconds=time.monotonic() - self.started, timestamp=time.time())
        return ParametersFields(parameters=load)
