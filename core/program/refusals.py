"""What gputop cannot do to a watched program, and why: one sentence per request, for the engine and the TUI.

A watched program (`gputop -- CMD`) makes its own calls in its own process:
gputop cannot pause them, restart or move them, count them with Nsight
Compute (which must start the process) or sample its GPU counters (PM
sampling sees only the sampling process's work), and RenderDoc must be
loaded before the program makes its Vulkan device. A profile works only on
CUDA (CUPTI inside the program) while it runs. The engine answers a request
with these sentences; the TUI reads the same ones from a snapshot (the
program's devices and ending) to offer only the keys that can act, and to
say in `?` and in its windows why the others cannot.
"""

from __future__ import annotations

from collections.abc import Sequence

from gputop.core.program.profile import why_not

__all__ = ["PAUSE_REFUSAL", "PM_NOT_WATCHED", "counters_refusal", "program_refusal"]

PAUSE_REFUSAL = "a watched program makes its own calls: gputop cannot pause them (q ends the program)"
# PM sampling reads the work of the process that samples (bench/gpu/pm_strip.sh: a sampler beside another
# process decoded no samples); the watcher inside the program does not sample yet.
PM_NOT_WATCHED = (
    "PM sampling sees only the work of the process that samples, and a watched program's calls run in its own: "
    "gputop run on its .vmfb samples the same module's calls"
)
ENDED_OPS = ("profile", "capture")  # asked of the program's watcher: gone once the program has ended


def counters_refusal(command: Sequence[str]) -> str:
    """Why `n` cannot count a watched program's kernels: Nsight Compute must start the process itself."""
    return f"Nsight Compute must start the program itself; run ncu --target-processes all {' '.join(command)}"


def program_refusal(op: str, backends: set[str], command: Sequence[str], ended: str | None = None) -> str | None:
    """Why `op` (pause, profile, counters, pm, capture) cannot act on a watched program using `backends`, `ended`
    saying how it ended (None while it runs); None when it can."""
    if op == "pause":
        return PAUSE_REFUSAL
    if op == "counters":
        return counters_refusal(command)
    if op == "pm":
        return PM_NOT_WATCHED
    if ended is not None and op in ENDED_OPS:
        return f"the program has ended ({ended}): it makes no more calls to {op}"
    return why_not(op, backends)
