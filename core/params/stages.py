"""The streamed loader's stage clock: time in each stage of its pipeline, added up across threads and loads.

Issue 32 asked why the loader reached 32 GB/s on a bus that does 53. Only a
breakdown of its own time can say which stage holds it back: reads into
staging, copies over the bus, waiting for a staging slot, or the loading
thread's own submissions. Each reader thread keeps its own tally (no lock on
the hot path); the loading thread keeps its own; when a batch of chunks is
done they are folded in here under one lock, and `stages()` turns the sums
into a `ParameterStages` (see its docstring for how to read it).
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

from gputop.core.params.reads import ReadHow
from gputop.core.records.parameters import ParameterStages

__all__ = ["LoaderTally", "ReaderTally", "StageClock"]


@dataclass
class ReaderTally:
    """One reader thread's times and bytes; written by that thread only."""

    read_s: float = 0.0
    slot_wait_s: float = 0.0
    bytes_by_how: Counter[ReadHow] = field(default_factory=Counter)  # o_direct, mapped, page-cache
    chunks: int = 0

    def add(self, how: ReadHow, length: int) -> None:
        """One chunk read, and how it came (reads.ArchiveFile.read_chunk)."""
        self.chunks += 1
        self.bytes_by_how[how] += length


@dataclass
class LoaderTally:
    """The loading thread's waits during one batch of chunks."""

    read_wait_s: float = 0.0
    dma_wait_s: float = 0.0
    allocate_s: float = 0.0  # buffers made while the reads ran (a part of the thread's own work)


class StageClock:
    """Sums of a stream's stage times, safe to add to from the loading thread while others read them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._readers = 0
        self._chunk_bytes = 0
        self._allocate_s = self._fill_s = self._wall_s = self._reader_s = 0.0
        self._allocate_overlapped_s = 0.0
        self._read_s = self._slot_wait_s = self._read_wait_s = self._dma_wait_s = 0.0
        self._chunks = 0
        self._bytes_by_how: Counter[ReadHow] = Counter()
        self._notes: list[str] = []
        self._first_request_at: float | None = None  # perf_counter
        self._last_byte_at: float | None = None

    @property
    def first_request_at(self) -> float | None:
        with self._lock:
            return self._first_request_at

    @property
    def last_byte_at(self) -> float | None:
        with self._lock:
            return self._last_byte_at

    def request_began(self, at: float) -> None:
        with self._lock:
            if self._first_request_at is None:
                self._first_request_at = at

    def last_byte(self, at: float) -> None:
        with self._lock:
            self._last_byte_at = at

    def add_allocate(self, seconds: float) -> None:
        with self._lock:
            self._allocate_s += seconds

    def add_fill(self, seconds: float) -> None:
        with self._lock:
            self._fill_s += seconds

    def note(self, text: str | None) -> None:
        """A reason the read path wanted (O_DIRECT, a mapping) was not used; each said once."""
        with self._lock:
            if text and text not in self._notes:
                self._notes.append(text)

    def add_batch(self, *, chunk_bytes: int, wall_s: float, readers: list[ReaderTally], loader: LoaderTally) -> None:
        """One batch of chunks done: its wall time, every reader's tally and the loading thread's waits."""
        with self._lock:
            self._readers = max(self._readers, len(readers))
            self._chunk_bytes = max(self._chunk_bytes, chunk_bytes)
            self._wall_s += wall_s
            self._reader_s += wall_s * len(readers)
            self._read_wait_s += loader.read_wait_s
            self._dma_wait_s += loader.dma_wait_s
            self._allocate_overlapped_s += loader.allocate_s
            for tally in readers:
                self._read_s += tally.read_s
                self._slot_wait_s += tally.slot_wait_s
                self._bytes_by_how.update(tally.bytes_by_how)
                self._chunks += tally.chunks

    def stages(
        self,
        *,
        context_before_s: float | None = None,
        context_after_s: float | None = None,
        staging_bytes: int = 0,
    ) -> ParameterStages | None:
        """The sums as a value, with the pinned staging held now; None before any file bytes were read."""
        with self._lock:
            if not self._chunks and not self._fill_s:
                return None
            wall = self._wall_s
            # Waits measured on the loading thread cannot exceed its wall; clamp rounding at the edges.
            read_wait = min(self._read_wait_s, wall)
            dma_wait = min(self._dma_wait_s, wall - read_wait)
            submit = max(0.0, wall - read_wait - dma_wait)
            read_share = _share(self._read_s, self._reader_s)
            slot_wait_share = _share(self._slot_wait_s, self._reader_s)
            # The readers say whether reads or what comes after them hold the pipeline back: readers
            # that mostly wait for slots are held up downstream. The loading thread's own split cannot
            # say it alone: while a copy is in flight it waits for that copy even when reads lag too.
            if wall <= 0:
                limited_by = "none"
            elif read_share >= slot_wait_share:
                limited_by = "reads"
            else:
                limited_by = "copies" if dma_wait >= submit else "submissions"
            kinds = [how for how, count in self._bytes_by_how.items() if count]
            read_path = "mixed" if len(kinds) > 1 else kinds[0] if kinds else "page-cache"
            return ParameterStages(
                read_path=read_path,
                read_path_note="; ".join(self._notes) or None,
                readers=self._readers,
                chunks=self._chunks,
                chunk_bytes=self._chunk_bytes,
                bytes_read=self._bytes_by_how.total(),
                allocate_s=self._allocate_s,
                fill_s=self._fill_s,
                wall_s=wall,
                reader_s=self._reader_s,
                read_s=self._read_s,
                slot_wait_s=self._slot_wait_s,
                read_wait_s=read_wait,
                dma_wait_s=dma_wait,
                submit_s=submit,
                read_share=read_share,
                slot_wait_share=slot_wait_share,
                read_wait_share=_share(read_wait, wall),
                dma_wait_share=_share(dma_wait, wall),
                submit_share=_share(submit, wall),
                limited_by=limited_by,
                context_before_s=context_before_s,
                context_after_s=context_after_s,
                allocate_overlapped_s=min(self._allocate_overlapped_s, submit),
                staging_bytes=staging_bytes,
            )


def _share(part: float, whole: float) -> float:
    return min(1.0, part / whole) if whole > 0 else 0.0
