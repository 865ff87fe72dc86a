"""How a run gets on: the seconds each phase took and the lines of its log.

`Phases` and `Event` are what the run's lifecycle and log write and the TUI's
header and Log pane read; the flows report them through `RunState`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputop.core.records.base import now

__all__ = ["Event", "Phases"]


@dataclass(frozen=True)
class Phases:
    """Seconds spent in each phase of a run; None until the phase has run."""

    compile_s: float | None = None
    load_s: float | None = None
    import_s: float | None = None  # ONNX models: iree-import-onnx, before the compile
    parameters_s: float | None = None
    context_s: float | None = None
    first_call_s: float | None = None
    teardown_s: float | None = None


@dataclass(frozen=True)
class Event:
    """A line for the log: what happened, in one line, and where details are."""

    seq: int
    level: str  # info, warning, error
    message: str
    log_path: str | None = None
    timestamp: float = field(default_factory=now)
