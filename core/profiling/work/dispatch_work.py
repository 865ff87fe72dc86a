"""What a dispatch computes and moves: `DispatchWork`, a module's `ModuleWork`, and the `.work.json` that keeps them.

The work of a dispatch is counted from its IR (`ir_count.py`) or read from its
name (`name_work.py`); either way it is one `DispatchWork`, and a module's are
one `ModuleWork`, which the efficiency, the source ops and the counters pass
read. The counts are cached as `NAME.work.json` beside the `.vmfb`, written
and read here, so they are computed once.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = [
    "WORK_FORMAT",
    "WORK_VERSION",
    "DispatchWork",
    "ModuleWork",
    "kernel_key",
    "read_work",
    "sources_dir_for",
    "work_file_for",
    "write_work",
]

WORK_FORMAT = "gputop-work"
# 2: each dispatch carries its ops' source locations (`locs`), read by `source_ops.py`.
WORK_VERSION = 2


@dataclass(frozen=True)
class DispatchWork:
    """What one dispatch (an executable export) computes and moves per invocation."""

    name: str  # the export's name: what profiles call the kernel
    flops: int | None  # None: an op it cannot count (see `unknown`)
    bytes_read: int | None  # None: a dynamic shape
    bytes_written: int | None
    ops: tuple[str, ...]  # its structured ops in order: matmul, conv, elementwise, reduction, fill, copy, ...
    dtype: str | None  # element type of its main work (the op with most FLOPs): f32, f16, bf16, f64
    contraction: bool  # its main work is a matmul or convolution (tensor units may run it)
    unknown: str | None = None  # why its FLOPs (or, with FLOPs known, its bytes) are unknown
    # Where the numbers come from: "ir" (counted from its executable source, here) or "name" (read from
    # the name IREE gave the dispatch, `name_work.py`, for a module without sources).
    source: str = "ir"
    # The MLIR locations of its compute ops (structured ops, in order; where it has none, of its loads and
    # stores), as the compiler printed them with --mlir-print-debuginfo: what `source_ops.py` maps back to
    # the user's ONNX nodes or source lines. Empty for work read from a name.
    locs: tuple[tuple[str, str], ...] = ()  # (the op as written: linalg.matmul, copy; its location)

    @property
    def bytes(self) -> int | None:
        if self.bytes_read is None or self.bytes_written is None:
            return None
        return self.bytes_read + self.bytes_written

    @property
    def label(self) -> str:
        """`matmul+elementwise`, `unknown: why`, or `conv_2d_nhwc_hwcf; bytes unknown: why`."""
        what = "+".join(dict.fromkeys(self.ops)) or ("copy" if self.bytes else "nothing")
        if self.unknown and self.flops is not None:
            return f"{what}; bytes unknown: {self.unknown}"
        return f"unknown: {self.unknown}" if self.unknown else what


@dataclass(frozen=True)
class ModuleWork:
    """Every dispatch's work in one module, where it came from, and why there is none."""

    dispatches: dict[str, DispatchWork]
    source: str  # executable sources FOLDER, or a FILE.work.json; empty with a reason
    reason: str | None = None  # why nothing was counted from the IR (the kernels' names are all there is)
    with_locs: bool = True  # counted by a gputop that keeps the ops' locations (work files of version 1 do not)

    def lookup(self, kernel: str) -> DispatchWork | None:
        """The work of the dispatch a profile calls `kernel` (exact, else by the name's letters and digits)."""
        found = self.dispatches.get(kernel)
        if found is not None:
            return found
        wanted = kernel_key(kernel)
        for name, work in self.dispatches.items():
            if kernel_key(name) == wanted:
                return work
        return None


def kernel_key(name: str) -> str:
    """A backend may turn `$` or `.` in a symbol into `_`: compare names by their letters and digits."""
    return re.sub(r"[^0-9A-Za-z]+", "_", name)


def work_file_for(vmfb: Path) -> Path:
    return vmfb.with_suffix(".work.json")


def sources_dir_for(vmfb: Path) -> Path:
    return vmfb.with_suffix(".sources")


def write_work(path: Path, work: ModuleWork) -> None:
    data = {
        "format": WORK_FORMAT,
        "version": WORK_VERSION,
        "source": work.source,
        "dispatches": [asdict(d) for d in work.dispatches.values()],
    }
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(data, indent=1), encoding="utf-8")
    partial.replace(path)


def read_work(path: Path) -> ModuleWork:
    """A `.work.json` written by `write_work` (here, or on the machine that compiled the module)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != WORK_FORMAT:
            raise ValueError("not a gputop work file")
        if data.get("version") not in (1, WORK_VERSION):
            raise ValueError(f"counted by another gputop (version {data.get('version')}, not {WORK_VERSION})")
        dispatches = {}
        for row in data["dispatches"]:
            row["ops"] = tuple(row["ops"])
            row["locs"] = tuple((str(op), str(loc)) for op, loc in row.get("locs", ()))
            work = DispatchWork(**row)
            dispatches[work.name] = work
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return ModuleWork({}, source=str(path), reason=f"{path}: unreadable work file ({exc})")
    return ModuleWork(
        dispatches,
        source=f"{path} (counted from {data.get('source') or 'unknown sources'})",
        with_locs=data.get("version") == WORK_VERSION,
    )
