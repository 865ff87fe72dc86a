"""Parameters on their way to the device: the load's progress, and where its time went.

The loaders report a `ParameterLoad` while they run and at the end; gputop's
streamed loader adds its `ParameterStages` (`params.stages`), which say
whether reads, copies or submissions limited it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputop.core.records.base import now

__all__ = ["ParameterLoad", "ParameterStages"]


@dataclass(frozen=True)
class ParameterStages:
    """Where a streamed load's time went, stage by stage, so a reader can tell which stage limits it.

    Two kinds of thread do the work. `readers` threads each take a chunk, wait
    for a free pinned staging slot (`slot_wait_s`) and read the file into it
    (`read_s`). One loading thread queues each filled slot's copy to the device
    and hands slots back; it waits either for a read to finish (`read_wait_s`)
    or for a copy to land (`dma_wait_s`), and the rest of its time is its own
    work (`submit_s`: recording and queueing copies, polling), so those three
    add up to `wall_s`, the time from the first read to the last copy landed.
    The readers' times overlap: they are worker-seconds, summed over threads,
    out of `reader_s` (readers x wall).

    How to read them: the readers' shares say whether reads hold the pipeline
    back. Readers busy reading (`read_share` near 1, `slot_wait_share` low):
    the disk or the page cache limits. Readers mostly waiting for a slot: what
    comes after the reads limits, and the loading thread says which: waiting
    for copies to land (`dma_wait_share`: the bus) or busy on its own
    (`submit_share`: the host's submissions). `limited_by` is that verdict:
    reads, copies or submissions. The loading thread's `read_wait_share` is a
    lower bound: while a copy is in flight it waits for that copy first.
    `allocate_s` (what was made before the first read: one pinned staging
    slot per reader, or every buffer when allocation is not overlapped; on
    CUDA the slots are the process's own memory, page-locked by the loading
    thread before each one's first copy, which falls in `submit_s`) and
    `context_after_s` (context creation after the last byte) lie outside
    `wall_s`; `allocate_overlapped_s` is the loading thread's allocation while
    the reads ran (the other staging slots, the device buffers), a part of
    `submit_s`. The staging slots (`staging_bytes` of pinned memory) are kept
    for the stream's later loads and freed when the run closes, so their
    release is not in the load either.
    """

    read_path: str  # page-cache (preadv), mapped (copied out of a mapping), o_direct, or mixed (several files)
    read_path_note: str | None  # why O_DIRECT or a mapping was wanted and not used, when it was not
    readers: int  # reader threads (the most one load used)
    chunks: int
    chunk_bytes: int
    bytes_read: int  # file bytes read into staging (splats are filled on the device, never read)
    allocate_s: float  # loading thread: device buffers and pinned staging, before the first read
    fill_s: float  # loading thread: splat fills on the device
    wall_s: float  # first read to last copy landed, summed over the loads
    reader_s: float  # worker-seconds the readers had: readers x wall
    read_s: float  # worker-seconds in reads into staging
    slot_wait_s: float  # worker-seconds waiting for a free staging slot
    read_wait_s: float  # loading thread: waiting for a read to finish
    dma_wait_s: float  # loading thread: waiting for a copy to land
    submit_s: float  # loading thread: its own work (wall - read_wait - dma_wait)
    read_share: float  # of reader_s
    slot_wait_share: float  # of reader_s
    read_wait_share: float  # of wall_s
    dma_wait_share: float  # of wall_s
    submit_share: float  # of wall_s
    limited_by: str  # reads, copies or submissions (none: nothing was read); see above
    context_before_s: float | None = None  # context creation before the first parameter was asked for
    context_after_s: float | None = None  # context creation after the last byte landed
    allocate_overlapped_s: float = 0.0  # loading thread: buffers made while the reads ran (part of submit_s)
    staging_bytes: int = 0  # pinned staging the stream holds (kept for its later loads, freed at close)


@dataclass(frozen=True)
class ParameterLoad:
    """Parameters on their way to the device: bytes in place of all, how fast, and how long still.

    gputop's streamed loader counts every chunk as its copy lands (`observed`).
    IREE's own loaders hold the Python interpreter until the context exists, so
    for them only the start and the end are seen.
    """

    mode: str  # streamed, mmap, file_async
    total_bytes: int
    loaded_bytes: int
    seconds: float  # since the load began; its whole length once done
    done: bool = False
    observed: bool = True
    files: int = 1
    timestamp: float = field(default_factory=now)
    zero_copy: bool = False  # mapped in place (mmap on the CPU): nothing moved, so no rate
    stages: ParameterStages | None = None  # gputop's streamed loader, once done

    @property
    def gbps(self) -> float | None:
        """Decimal gigabytes per second so far (the bus's unit: PCIe Gen5 x16 is about 64 GB/s)."""
        if self.zero_copy or self.seconds <= 0 or not self.loaded_bytes:
            return None
        return self.loaded_bytes / self.seconds / 1e9

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the rate so far."""
        if self.done:
            return 0.0
        rate = self.loaded_bytes / self.seconds if self.seconds > 0 else 0.0
        return (self.total_bytes - self.loaded_bytes) / rate if rate > 0 else None
