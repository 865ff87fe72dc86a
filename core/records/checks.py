"""A run's tensors and how its outputs compare with a reference.

`module.tensors` summarises inputs and outputs (`TensorSummary`) and
`module.check` compares outputs (`OutputCheck`, with the `Tolerance` each was
held to and the first few `Mismatch`es); the report and the Log show them, and
every snapshot carries the check once it is made (the header's `check failed`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Mismatch", "OutputCheck", "TensorSummary", "Tolerance"]


@dataclass(frozen=True)
class TensorSummary:
    """Shape, type and a few numbers of one output, enough to eyeball a result."""

    index: int
    shape: tuple[int, ...]
    dtype: str
    mean: float | None
    min: float | None
    max: float | None


@dataclass(frozen=True)
class Mismatch:
    """The first element of an output that differs from its reference."""

    output: int
    index: tuple[int, ...]
    got: float | int | bool
    expected: float | int | bool


@dataclass(frozen=True)
class Tolerance:
    """The tolerance one output was held to: its element type's (or the coarser reference's), or given."""

    output: int
    dtype: str  # the element type whose tolerance applied; given, demo or spec when those set both
    rtol: float
    atol: float


@dataclass(frozen=True)
class OutputCheck:
    """How the outputs compare with a reference; on a failure the errors are never 0."""

    passed: bool
    max_abs_err: float  # inf when a NaN or an infinity sits where the reference has none (or another)
    max_rel_err: float
    reference: str
    mismatches: int = 0  # elements outside the tolerance, NaN/Inf misplaced included
    first_mismatch: Mismatch | None = None
    # The first few elements outside the tolerance (FIRST_MISMATCHES at most), in output then element order:
    # what `gputop run` prints under a failed check. The first of them is `first_mismatch`.
    first_mismatches: tuple[Mismatch, ...] = ()
    tolerances: tuple[Tolerance, ...] = ()  # one per checked output
    unchecked: tuple[int, ...] = ()  # outputs that had no reference: a pass says nothing of them
