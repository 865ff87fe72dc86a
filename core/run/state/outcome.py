"""What a run produced besides its snapshots: the compiled module, tensors, output check, parameters, stages.

A state part (see `gputop.core.run.state`): its setters take the run's lock
(the compile goes to the session's manifest too, the check's verdict to the
log). Of the snapshots it fills only the output check
(`fields()`: a failed check is a state of the run a viewer must see);
`summary_fields()` is its piece of the run's report. `RunOutcome` is the
frozen value readers get (`Session.outcome`): the part replaces it, never
changes it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypedDict

import numpy as np

from gputop.core.module.compile import CompiledModule
from gputop.core.module.tensors import summarize
from gputop.core.records.base import to_json
from gputop.core.records.calls import StageTimings
from gputop.core.records.checks import OutputCheck, TensorSummary
from gputop.core.records.compile import CompileRecord
from gputop.core.records.parameters import ParameterStages
from gputop.core.run.state.link import RunLink
from gputop.core.run.state.log import LogState
from gputop.core.wording import check_tolerances, unchecked_outputs

__all__ = ["OutcomeFields", "OutcomeState", "OutcomeSummaryFields", "RunOutcome", "check_lines", "compile_record"]


@dataclass(frozen=True)
class RunOutcome:
    """What a run produced besides its snapshots: module, tensors, check, parameters, stage timings."""

    compiled: CompiledModule | None = None
    f64: str | None = None  # float64 in the compiled module: "kept", "demoted" or None (see set_compiled)
    inputs: tuple[np.ndarray, ...] = ()
    outputs: tuple[np.ndarray, ...] = ()
    check: OutputCheck | None = None
    parameter_files: tuple[Path, ...] = ()
    parameter_mode: str | None = None
    stages: StageTimings | None = None
    timestamp: float = field(default_factory=time.time)
    parameter_bytes: int | None = None
    parameter_seconds: float | None = None
    parameter_zero_copy: bool = False
    parameter_stages: ParameterStages | None = None


class OutcomeFields(TypedDict):
    """The snapshot's fields this part fills."""

    check: OutputCheck | None


class OutcomeSummaryFields(TypedDict):
    """The run summary's fields this part fills."""

    compile: CompileRecord | None
    parameter_files: tuple[str, ...]
    parameter_mode: str | None
    inputs: tuple[TensorSummary, ...]
    outputs: tuple[TensorSummary, ...]
    check: OutputCheck | None
    stages: StageTimings | None
    parameter_bytes: int | None
    parameter_seconds: float | None
    parameter_zero_copy: bool
    parameter_stages: ParameterStages | None


class OutcomeState:
    """The run's `RunOutcome` so far, replaced field by field as the run produces them."""

    def __init__(self, link: RunLink | None = None, log: LogState | None = None) -> None:
        self.link = link or RunLink.alone()
        self.log = log or LogState(self.link)
        self.value = RunOutcome()

    def set_compiled(self, compiled: CompiledModule, *, f64: str | None = None) -> None:
        """Keep the compiled module; `f64` says whether float64 was kept or demoted to float32."""
        record = compile_record(compiled, f64)
        with self.link.lock:
            self.value = replace(self.value, compiled=compiled, f64=f64)
        self.link.update_manifest(compile=record)

    def set_tensors(self, *, inputs: list[np.ndarray] | None = None, outputs: list[np.ndarray] | None = None) -> None:
        """The run's inputs and (or) outputs; None leaves what is there."""
        with self.link.lock:
            if inputs is not None:
                self.value = replace(self.value, inputs=tuple(inputs))
            if outputs is not None:
                self.value = replace(self.value, outputs=tuple(outputs))

    def set_parameter_files(self, files: list[Path], mode: str | None) -> None:
        """The parameter files the run loads, and how (`streamed`, `mmap`, `file_async`)."""
        with self.link.lock:
            self.value = replace(self.value, parameter_files=tuple(files), parameter_mode=mode)

    def set_stages(self, stages: StageTimings) -> None:
        with self.link.lock:
            self.value = replace(self.value, stages=stages)

    def record_check(self, check: OutputCheck | None) -> None:
        """Keep the outcome of an output check and say it in the log, one line."""
        with self.link.lock:
            self.value = replace(self.value, check=check)
        if check is not None:
            for level, line in check_lines(check):
                self.log.add(level, line)

    def parameters_loaded(
        self, loaded_bytes: int, seconds: float, *, mode: str | None, zero_copy: bool, stages: ParameterStages | None
    ) -> None:
        """The parameters' load is over: its totals (and its mode, where a fallback changed it)."""
        with self.link.lock:
            self.value = replace(
                self.value,
                parameter_bytes=loaded_bytes,
                parameter_seconds=seconds,
                parameter_mode=mode or self.value.parameter_mode,
                parameter_zero_copy=zero_copy,
                parameter_stages=stages,
            )

    def fields(self) -> OutcomeFields:
        return OutcomeFields(check=self.value.check)

    def summary_fields(self) -> OutcomeSummaryFields:
        outcome = self.value
        compiled = outcome.compiled
        return OutcomeSummaryFields(
            compile=compile_record(compiled, outcome.f64) if compiled is not None else None,
            parameter_files=tuple(str(p) for p in outcome.parameter_files),
            parameter_mode=outcome.parameter_mode,
            inputs=summarize(list(outcome.inputs)),
            outputs=summarize(list(outcome.outputs)),
            check=outcome.check,
            stages=outcome.stages,
            parameter_bytes=outcome.parameter_bytes,
            parameter_seconds=outcome.parameter_seconds,
            parameter_zero_copy=outcome.parameter_zero_copy,
            parameter_stages=outcome.parameter_stages,
        )


def compile_record(compiled: CompiledModule, f64: str | None = None) -> CompileRecord:
    """What the manifest and the report keep of a compile."""
    return CompileRecord(
        vmfb=str(compiled.vmfb_path),
        flags=tuple(compiled.flags),
        cache_hit=compiled.cache_hit,
        cache_key=compiled.cache_key,
        log=str(compiled.log_path) if compiled.log_path else None,
        seconds=compiled.compile_s,
        f64=f64,
    )


def check_lines(check: OutputCheck) -> list[tuple[str, str]]:
    """What an output check says in the log: (level, line), the verdict first, then outputs it did not check."""
    verdict = "match" if check.passed else "DO NOT match"
    level = "info" if check.passed else "error"
    detail = f"max abs err {check.max_abs_err:.3g}"
    if check.tolerances:
        detail += f", {check_tolerances(to_json(check.tolerances))}"
    first = check.first_mismatch
    if first is not None:
        at = ",".join(map(str, first.index))
        detail += (
            f"; {check.mismatches} elements differ, first output {first.output} [{at}]: "
            f"got {first.got}, expected {first.expected}"
        )
    lines = [(level, f"outputs {verdict} {check.reference} ({detail})")]
    if check.unchecked:
        outputs = len(check.tolerances) + len(check.unchecked)
        lines.append(("warning", unchecked_outputs(check.unchecked, outputs)))
    return lines
