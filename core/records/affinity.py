"""Where a multi-device function's values live, and the copies between devices that follow.

`multidevice.affinity` reads a module's affinities into `ExportAffinity`
rows and the `Transfer`s they imply; a profiled call's copies fill in the
bytes it saw move.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputop.core.records.base import now

__all__ = ["ExportAffinity", "Transfer"]


@dataclass(frozen=True)
class ExportAffinity:
    """Where one argument or result of an exported function lives."""

    function: str
    kind: str  # argument | result
    index: int
    declared: str | None  # the source's iree.abi.affinity device, None if undeclared
    export_affinity: str | None  # the device the value is imported on / exported from
    producer_affinity: str | None  # results: the device whose work wrote it; arguments: where it is consumed
    transfer_bytes: int  # bytes moved between devices for this value
    flag: str | None  # hidden_transfer | transfer | undeclared | passthrough | None
    timestamp: float = field(default_factory=now)
    # Bytes a profiled call showed moving for this value (copies matched to the analysis);
    # None where no profile was taken or nothing a profile records moves it (an export handed over).
    observed_transfer_bytes: int | None = None
    # Sizes known only at run time (dynamic shapes): the formula of transfer_bytes in the arguments'
    # dimensions (`argN[i]`), None where every size is a constant; bytes_from_call: transfer_bytes
    # was computed from a profiled call's real input shapes.
    transfer_bytes_expr: str | None = None
    bytes_from_call: bool = False
    # The value's type as the module declares it (`1x100xf32`), where known: a one-device run's records, read
    # from the loaded module (`module/results.py`); None for the affinity analysis's, and where unknown.
    value_type: str | None = None


@dataclass(frozen=True)
class Transfer:
    function: str
    source: str
    target: str
    bytes: int
    op: str
    observed_bytes: int | None = None  # the matching copy in a profiled call; None where a profile cannot see it
    bytes_expr: str | None = None  # a dynamic size: `bytes` as a formula in the arguments' dims (`argN[i]`)
    bytes_from_call: bool = False  # `bytes` computed from a profiled call's real input shapes
