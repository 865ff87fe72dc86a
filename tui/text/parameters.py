"""A parameters load in words: its progress line (the header, the Run pane, `gputop run`'s stderr) and its stages.

IREE's own loaders are seen only when they finish, gputop's streamed loader
as it goes; the progress line says which, and the stage line says what the
streamed loader waited on. Numbers are written by the engine's units, as
every other face writes them.
"""

from __future__ import annotations

from typing import Any

from gputop.tui.bridge import fixed, gbps, human_bytes, percent, seconds

__all__ = ["parameter_stages_line", "parameters_progress"]


def parameters_progress(load: Any, *, mode: bool = True) -> str:
    """A parameters' load in one line (a `ParameterLoad`): under way, or its totals once done.

    `4.2 GiB / 14.7 GiB (28%)  25.3 GB/s  0.4 s left  streamed` while it runs;
    `14.7 GiB in 581.0 ms  25.4 GB/s  streamed` after. IREE's own loaders are
    seen only when they finish, which the line says instead of a rate.
    """
    how = f"  {load.mode}" if mode else ""
    rate = f"  {gbps(load.gbps)}" if load.gbps else ""
    if load.done and load.zero_copy:
        return f"{human_bytes(load.loaded_bytes)} mapped in place (zero copy){how}"
    if load.done:
        return f"{human_bytes(load.loaded_bytes)} in {seconds(load.seconds)}{rate}{how}"
    if not load.observed:
        return f"{human_bytes(load.total_bytes)}, {seconds(load.seconds)} so far{how} (IREE reports only the end)"
    share = f" ({load.loaded_bytes / load.total_bytes:.0%})" if load.total_bytes else ""
    left = f"  {fixed(load.eta_s)} s left" if load.eta_s is not None else ""
    return f"{human_bytes(load.loaded_bytes)} / {human_bytes(load.total_bytes)}{share}{rate}{left}{how}"


def parameter_stages_line(stages: dict[str, Any]) -> str:
    """The streamed loader's stage shares in one line (a report's `parameters.stages`).

    `o_direct, 8 readers: read 91% slot wait 6% | loader waits: reads 72% copies 20%, own work 8%
    -> limited by reads | allocated 2.0 ms before the reads, 9.3 ms beside them | context after last
    byte 4.1 ms`: the readers' shares are of their worker-seconds, the loading thread's of the wall
    time (see `ParameterStages`).
    """
    note = "  (" + stages["read_path_note"] + ")" if stages.get("read_path_note") else ""
    after = stages.get("context_after_s")
    allocated = f" | allocated {seconds(stages['allocate_s'])} before the reads" if "allocate_s" in stages else ""
    if allocated and stages.get("allocate_overlapped_s"):
        allocated += f", {seconds(stages['allocate_overlapped_s'])} beside them"
    return (
        f"{stages['read_path']}, {stages['readers']} readers: read {percent(100 * stages['read_share'], 0)} "
        f"slot wait {percent(100 * stages['slot_wait_share'], 0)} | loader waits: "
        f"reads {percent(100 * stages['read_wait_share'], 0)} copies {percent(100 * stages['dma_wait_share'], 0)}, "
        f"own work {percent(100 * stages['submit_share'], 0)} -> limited by {stages['limited_by']}"
        + allocated
        + (f" | context after last byte {seconds(after)}" if after is not None else "")
        + note
    )
