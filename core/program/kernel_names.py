"""A watched program's kernels named as `gputop run` names them: from the module files it loaded.

CUPTI names a kernel for its dispatch (`main_dispatch_0_matmul_32x512x512_f32`); what the
user's model calls it is in the executable sources the compiler dumps (`NAME.sources/`, or
the `NAME.work.json` gputop counts from them). gputop run finds those beside the `.vmfb` it
runs; a watched program loads its own modules, and its watcher says from which file
(`VmModule.mmap`). This puts each module file's source-op map (`profiling/work/source_ops.py`,
the same one gputop run uses, with the same `.vmfb` origin) to the kernels of a profile, so
every kernel carries its source ops or the one line that says why it has none: the module came
from memory, not a file, or its file has no sources beside it (with how to compile one that has).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from gputop.core.module.compile import SITES_SUFFIX
from gputop.core.profiling.work.dispatch_work import ModuleWork
from gputop.core.profiling.work.ir_count import module_work
from gputop.core.profiling.work.source_ops import SourceOpMap, SourceOrigin, layer_times, source_op_map
from gputop.core.records.profile import KernelTiming, ProfileSummary
from gputop.core.records.program import ProgramLoad

__all__ = ["ProgramKernelNames"]

NO_LOAD = "gputop saw no module load of the program's (loaded before its watcher came?): no file to read sources beside"


@dataclass(frozen=True)
class _ModuleMap:
    work: ModuleWork
    names: SourceOpMap


class ProgramKernelNames:
    """Each module file's source-op map, read once per file, and a profile's kernels named by them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._maps: dict[Path, _ModuleMap] = {}

    def name(self, summary: ProfileSummary, loads: Sequence[ProgramLoad], cwd: str | None) -> ProfileSummary:
        """`summary` with every kernel's source ops, or why not, from the modules `loads` read from files
        (relative paths are the program's, against its working directory `cwd`)."""
        modules = [load for load in loads if load.kind == "module"]
        files = list(dict.fromkeys(_resolved(f, cwd) for load in modules for f in load.files))
        if not files:
            memory = sorted({load.api for load in modules})
            reason = (
                f"the program loaded its module from memory ({', '.join(memory)}), not from a file: "
                "no NAME.sources/ beside it to name the kernels from"
                if memory
                else NO_LOAD
            )
            kernels = tuple(replace(k, source_ops=None, source_ops_reason=reason) for k in summary.kernels)
            return replace(summary, kernels=kernels, layers=layer_times(kernels), source_ops_reason=reason)
        maps = [self._map_of(path) for path in files]
        kernels = tuple(_named(kernel, maps) for kernel in summary.kernels)
        reasons = {m.names.reason for m in maps}
        said = reasons.pop() if len(reasons) == 1 else None  # several modules: each kernel says its own
        return replace(summary, kernels=kernels, layers=layer_times(kernels), source_ops_reason=said)

    def _map_of(self, vmfb: Path) -> _ModuleMap:
        with self._lock:
            known = self._maps.get(vmfb)
        if known is not None:
            return known
        try:
            work = module_work(vmfb)
        except Exception as exc:  # the compiler's bindings missing (a GPU machine), a source that does not parse
            line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            work = ModuleWork({}, source="", reason=f"{vmfb.name}: its sources could not be read ({line})")
        sites = vmfb.with_suffix(SITES_SUFFIX)
        found = _ModuleMap(work, source_op_map(SourceOrigin("vmfb", vmfb.name), work, sites))
        with self._lock:
            self._maps[vmfb] = found
        return found


def _named(kernel: KernelTiming, maps: list[_ModuleMap]) -> KernelTiming:
    """The kernel named by the first module whose dispatches include it, else by why the first cannot."""
    for module in maps:
        work = module.work.lookup(kernel.name)
        if work is not None:
            ops, reason = module.names.ops_for(work)
            return replace(kernel, source_ops=ops, source_ops_reason=None if ops else reason)
    ops, reason = maps[0].names.ops_for(None)
    if reason is None or maps[0].names.reason is None:
        names = ", ".join(sorted({m.work.source or "?" for m in maps}))
        reason = f"no module the program loaded from a file has this kernel ({names})"
    return replace(kernel, source_ops=None, source_ops_reason=reason)


def _resolved(file: str, cwd: str | None) -> Path:
    path = Path(file)
    return path if path.is_absolute() or not cwd else Path(cwd) / path
