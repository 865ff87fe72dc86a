"""Parameters streamed onto the device by gputop: many reads in flight through pinned staging buffers.

IREE 3.13's own loaders move a large model well below the bus's speed, for
reasons fixed in its C code (read in its source, `runtime/src/iree/hal/utils/
file_transfer.c`, `io/parameter_index_provider.c`, `hal/drivers/vulkan/queue.h`):
a file is streamed through one 64 MiB staging chunk at a time, each copy
waited for before the next read (`IREE_HAL_TRANSFER_WORKER_LIMIT` is 1, a
compile-time constant); a mapped archive is first registered whole with the
driver (`cuMemHostRegister` of every page on CUDA); Vulkan stages through
sixteen 1 MiB slots. And the Python bindings hold the GIL for all of
`VmContext` creation, so while IREE loads, nothing else in the process (the
TUI, the memory sampler, a progress line) runs at all.

This module replaces IREE's `io_parameters` VM module with one written in
Python that implements the same imports (`load`, `gather`) from the same
archives. Its `load` allocates each parameter's device buffer, then several
threads each read the next chunk of the file into one of their pinned
staging buffers (a warm file copied out of a mapping of it, a cold one read
with O_DIRECT, a partly cached one with `preadv`: see reads.py), in
host-local, device-visible memory (on CUDA the process's own, page-locked at
its first copy; elsewhere from the device's allocator; see staging.py), and
queue a copy of it to the parameter's buffer, so disk or page-cache reads,
and copies over the bus, overlap. The reads and waits release the GIL, so the
process stays live and every finished chunk is counted: progress is exact,
not estimated. When the copies are done it signals the program's fence and
returns, as IREE's provider would.

Each stage of that pipeline is timed (`stages.StageClock`, read with
`stage_times`), and a cold archive is read with O_DIRECT straight into the
staging slots (`reads`), so a cold load is held by the disk, not by the
kernel's copy out of the page cache.
"""

from __future__ import annotations

import collections
import contextlib
import queue
import struct
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from gputop.core.params.archive import ParameterEntry
from gputop.core.params.reads import READ_PATHS, SLOT_PADDING, ArchiveFile, open_archive_file
from gputop.core.params.stages import LoaderTally, ReaderTally, StageClock
from gputop.core.params.staging import DeviceTargets, StagingPool, StagingSlot
from gputop.core.records.parameters import ParameterStages
from gputop.core.units import human_bytes

__all__ = ["ParameterStream", "StreamOptions", "StreamRequest"]

Progress = Callable[[int, int], None]  # (bytes in place, bytes requested)
_KEY_ENTRY = struct.Struct("<II")  # iree_io_parameters_string_entry_t: offset, length
_SPAN_ENTRY = struct.Struct("<QQQ")  # iree_io_parameters_span_entry_t: parameter offset, buffer offset, length
_MIN_CHUNK = 2**20
_CHUNK_ALIGNMENT = 64 * 2**10


@dataclass(frozen=True)
class StreamOptions:
    """How many reads are in flight and how large each is."""

    workers: int = 8
    # 4 MiB: on the H200 (16 GiB, 256 tensors, warm; BENCHMARKS.md) 39.3-41.4 GB/s on CUDA in three sweeps
    # against 38.0-38.3 with 8 MiB and 23.6-30.6 with 16 MiB (the default before), and on Vulkan 18.3 GB/s
    # (8 MiB 18.5, 16 MiB 13.4). 8 workers x 2 slots: 64 MiB of pinned staging at most.
    chunk_bytes: int = 4 * 2**20
    slots_per_worker: int = 2  # a worker reads into one while the other's copy is on the bus
    # Cached staging: without HOST_CACHED, IREE's CUDA allocator makes write-combined pinned memory,
    # which the kernel's page-cache copy (preadv) fills far more slowly than ordinary memory.
    cached_staging: bool = True
    # auto: O_DIRECT for an archive under half in the page cache (measured with mincore), a copy out of a
    # mapping from 90% cached, preadv through the cache in between; page-cache, mapped or o_direct force one
    # (benchmarks, tests).
    read_path: str = "auto"
    # Make the device buffers and all but one staging slot per reader while the reads run, on the loading
    # thread's idle moments, not before the first read. On an H100 (BENCHMARKS.md) that took CUDA from 35.5
    # to 40.6 GB/s (medians of 3 pairs; one pair on another H100 went the other way by 3%). On Vulkan, whose
    # 256 allocations take 0.34-0.42 s on this same thread either way, it does not help (3-6% slower in two
    # comparisons). False: everything up front (the A/B).
    overlap_allocation: bool = True
    # Staging in the process's own memory, page-locked by the driver at its first copy (staging.py), instead
    # of the driver's own pinned allocations, which take 1.4-2.6 ms per 4 MiB slot before the first read on an
    # H100. The runner turns it on for CUDA, where it was measured; elsewhere it stays off.
    imported_staging: bool = False

    def __post_init__(self) -> None:
        if self.read_path not in READ_PATHS:
            raise ValueError(f"read_path {self.read_path!r}: choose from {', '.join(READ_PATHS)}")


@dataclass(frozen=True)
class StreamRequest:
    """One parameter range the program asked for, and where it goes."""

    key: str
    entry: ParameterEntry
    parameter_offset: int
    buffer_offset: int
    length: int


@dataclass
class _Chunk:
    file: ArchiveFile
    file_offset: int
    request: int  # index of the request (and of its target buffer)
    target_offset: int
    length: int


class _Batch:
    """One batch of chunks between the readers and the loading thread: the chunks handed out in order, the
    free slots the readers fill, the filled ones the loading thread queues, and the copies in flight."""

    def __init__(
        self,
        chunks: list[_Chunk],
        slots: list[StagingSlot],
        wanted: int,
        slot_bytes: int,
        unmade: collections.deque[int],
    ) -> None:
        self.chunks = chunks
        self.slots = slots  # every slot taken for the batch, the ones made ahead included
        self.wanted = wanted  # how many slots the batch may have
        self.slot_bytes = slot_bytes  # with the direct reads' padding
        self.unmade = unmade  # the device buffers still to make, in the order the chunks first need them
        self.free: queue.SimpleQueue[StagingSlot] = queue.SimpleQueue()
        for slot in slots:
            self.free.put(slot)
        self.filled: queue.SimpleQueue[tuple[StagingSlot, _Chunk, int] | BaseException] = queue.SimpleQueue()
        self.in_flight: collections.deque[StagingSlot] = collections.deque()
        self.stopping = threading.Event()
        self._cursor = 0
        self._cursor_lock = threading.Lock()

    def next_chunk(self) -> _Chunk | None:
        with self._cursor_lock:
            if self.stopping.is_set() or self._cursor >= len(self.chunks):
                return None
            self._cursor += 1
            return self.chunks[self._cursor - 1]

    def read(self, tally: ReaderTally) -> None:
        """A reader thread: chunks into free slots until none is left or the batch stops."""
        clock = time.perf_counter
        try:
            while (chunk := self.next_chunk()) is not None:
                waited = clock()
                slot = self.free.get()
                reading = clock()
                tally.slot_wait_s += reading - waited
                if self.stopping.is_set():
                    return
                start, how = chunk.file.read_chunk(slot.view, chunk.file_offset, chunk.length)
                tally.read_s += clock() - reading
                tally.add(how, chunk.length)
                self.filled.put((slot, chunk, start))
        except BaseException as exc:  # handed to the loading thread, which raises it
            self.filled.put(exc)


@dataclass
class _Totals:
    requested: int = 0
    done: int = 0
    seconds: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)


class ParameterStream:
    """A Python `io_parameters` module for one device, serving the parameters of `entries`."""

    def __init__(
        self,
        device: Any,
        entries: Sequence[ParameterEntry],
        *,
        scope: str = "model",
        options: StreamOptions | None = None,
        on_progress: Progress | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        import iree.runtime as rt

        self._rt = rt
        self._device = device
        self._scope = scope
        self._options = options or StreamOptions()
        self._on_progress = on_progress
        self._should_stop = should_stop or (lambda: False)
        self._entries: dict[str, ParameterEntry] = {}
        for entry in entries:
            self._entries.setdefault(entry.key, entry)  # the first archive that has a key wins, as in IREE
        self._totals = _Totals()
        self._clock = StageClock()
        self._submit_lock = threading.Lock()
        # Kept from one load to the next, freed by `release_staging` when the run closes (see staging.py).
        self._pool = StagingPool(device, cached=self._options.cached_staging, imported=self._options.imported_staging)

    # -- what the run reads -------------------------------------------------------------------------------
    @property
    def bytes_loaded(self) -> int:
        with self._totals.lock:
            return self._totals.done

    @property
    def seconds(self) -> float:
        """Time spent in loads, from the first request to the last copy landed."""
        with self._totals.lock:
            return self._totals.seconds

    def stage_times(
        self, context_started: float | None = None, context_ended: float | None = None
    ) -> ParameterStages | None:
        """The pipeline's stage times so far; with the context's creation span (perf_counter), its parts
        before the first parameter was asked for and after the last byte landed. None before any load."""
        clock = self._clock
        first, last = clock.first_request_at, clock.last_byte_at
        before = first - context_started if context_started is not None and first is not None else None
        after = context_ended - last if context_ended is not None and last is not None else None
        return clock.stages(
            context_before_s=max(0.0, before) if before is not None else None,
            context_after_s=max(0.0, after) if after is not None else None,
            staging_bytes=self._pool.bytes,
        )

    def release_staging(self) -> None:
        """Free the pinned staging slots (the stream makes new ones if it loads again)."""
        self._pool.release()

    def module(self, instance: Any) -> Any:
        """The VM module to register in place of `create_io_parameters_module`'s."""
        rt = self._rt
        stream = self

        class Exports:
            def __init__(self, _iface: Any) -> None:
                pass

            def load(self, *args: Any) -> Any:
                return stream._load(*args)

            def gather(self, *args: Any) -> None:
                stream._gather(*args)

            def scatter(self, *_args: Any) -> None:
                raise RuntimeError(
                    "UNIMPLEMENTED; gputop's streamed parameters do not write parameters back "
                    "(io_parameters.scatter): run with --params-mode mmap"
                )

        iface = rt.PyModuleInterface("io_parameters", Exports)
        # Calling conventions of IREE's runtime/src/iree/modules/io/parameters/exports.inl.
        iface.export("gather", "0rIrrrrrrr_v", Exports.gather)
        iface.export("load", "0rIrrrIiirrr_r", Exports.load)
        iface.export("scatter", "0rIrrrrrrr_v", Exports.scatter)
        return iface.create()

    def load_entries(self, entries: Sequence[ParameterEntry], memory_type: int, buffer_usage: int) -> list[Any]:
        """Whole parameters onto the device outside any program (benchmarks, tests): one buffer each."""
        started = time.perf_counter()
        try:
            requests = [StreamRequest(e.key, e, 0, 0, e.length) for e in entries]
            targets = DeviceTargets([partial(self.allocate, memory_type, buffer_usage, r) for r in requests])
            self.transfer(requests, targets, [0] * len(requests))
            return targets.all()
        finally:
            self._add_seconds(time.perf_counter() - started)

    # -- the VM imports -----------------------------------------------------------------------------------
    def _load(
        self,
        _device_ref: Any,
        _queue_affinity: int,
        wait_ref: Any,
        signal_ref: Any,
        scope_ref: Any,
        _target_affinity: int,
        memory_types: int,
        buffer_usage: int,
        key_table_ref: Any,
        key_data_ref: Any,
        spans_ref: Any,
    ) -> Any:
        rt = self._rt
        started = time.perf_counter()
        self._clock.request_began(started)
        signal = signal_ref.deref(rt.HalFence)
        try:
            requests = self._requests(scope_ref, key_table_ref, key_data_ref, spans_ref)
            targets = DeviceTargets([partial(self.allocate, memory_types, buffer_usage, r) for r in requests])
            self._wait(wait_ref)
            self.transfer(requests, targets, [0] * len(requests))
            buffers = targets.all()
        except Exception as exc:
            signal.fail(str(exc))
            raise
        finally:
            self._add_seconds(time.perf_counter() - started)
        signal.signal()
        result = rt.VmVariantList(len(buffers))
        for buffer in buffers:
            result.push_ref(buffer.ref)
        return result.ref

    def _gather(
        self,
        _device_ref: Any,
        _queue_affinity: int,
        wait_ref: Any,
        signal_ref: Any,
        scope_ref: Any,
        target_ref: Any,
        key_table_ref: Any,
        key_data_ref: Any,
        spans_ref: Any,
    ) -> None:
        rt = self._rt
        started = time.perf_counter()
        self._clock.request_began(started)
        signal = signal_ref.deref(rt.HalFence)
        try:
            target = target_ref.deref(rt.HalBuffer)
            requests = self._requests(scope_ref, key_table_ref, key_data_ref, spans_ref)
            self._wait(wait_ref)
            self.transfer(
                requests, DeviceTargets([lambda: target] * len(requests)), [r.buffer_offset for r in requests]
            )
        except Exception as exc:
            signal.fail(str(exc))
            raise
        finally:
            self._add_seconds(time.perf_counter() - started)
        signal.signal()

    def _requests(self, scope_ref: Any, key_table_ref: Any, key_data_ref: Any, spans_ref: Any) -> list[StreamRequest]:
        rt = self._rt
        scope = bytes(memoryview(scope_ref.deref(rt.VmBuffer))).decode() if scope_ref is not None else ""
        if scope != self._scope:
            raise RuntimeError(f"NOT_FOUND; no parameter provider registered for scope '{scope}'")
        table = bytes(memoryview(key_table_ref.deref(rt.VmBuffer)))
        names = bytes(memoryview(key_data_ref.deref(rt.VmBuffer)))
        spans = bytes(memoryview(spans_ref.deref(rt.VmBuffer)))
        requests = []
        for i in range(len(spans) // _SPAN_ENTRY.size):
            start, size = _KEY_ENTRY.unpack_from(table, i * _KEY_ENTRY.size)
            key = names[start : start + size].decode()
            parameter_offset, buffer_offset, length = _SPAN_ENTRY.unpack_from(spans, i * _SPAN_ENTRY.size)
            entry = self._entries.get(key)
            if entry is None:
                raise RuntimeError(f"NOT_FOUND; no parameter found in index with key '{key}'")
            if parameter_offset + length > entry.length:
                raise RuntimeError(
                    f"OUT_OF_RANGE; parameter `{key}` range out of bounds (offset={parameter_offset}, "
                    f"length={length}, size={entry.length})"
                )
            requests.append(StreamRequest(key, entry, parameter_offset, buffer_offset, length))
        return requests

    def _wait(self, wait_ref: Any) -> None:
        fence = wait_ref.deref(self._rt.HalFence, True) if wait_ref is not None else None
        if fence is not None:
            fence.wait()

    # -- moving the bytes ---------------------------------------------------------------------------------
    def allocate(self, memory_types: int, buffer_usage: int, request: StreamRequest) -> Any:
        """The device buffer of one parameter, as the program asked for it (plus the copies' target usage)."""
        rt = self._rt
        try:
            return self._device.allocator.allocate_buffer(
                memory_type=memory_types,
                allowed_usage=buffer_usage | int(rt.BufferUsage.TRANSFER_TARGET),
                allocation_size=request.length,
            )
        except Exception as exc:
            from gputop.core.processes import first_line

            raise RuntimeError(
                f"RESOURCE_EXHAUSTED; cannot allocate parameter '{request.key}' ({human_bytes(request.length, 2)}) "
                f"on the device: {first_line(str(exc))}"
            ) from None

    def chunk_bytes_for(self, total: int) -> int:
        """Chunks as large as the options allow, but staging never more than a quarter of what it loads."""
        options = self._options
        slots = max(1, options.workers) * max(1, options.slots_per_worker)
        share = max(total // 4, 1) // slots
        return max(_MIN_CHUNK, min(options.chunk_bytes, share // _CHUNK_ALIGNMENT * _CHUNK_ALIGNMENT))

    def transfer(self, requests: list[StreamRequest], targets: DeviceTargets, bases: list[int]) -> None:
        """Fill each target range from its parameter: splats by a fill, file bytes by the workers."""
        total = sum(r.length for r in requests)
        with self._totals.lock:
            self._totals.requested += total
        chunk_bytes = self.chunk_bytes_for(total)
        files: dict[str, ArchiveFile] = {}
        try:
            chunks: list[_Chunk] = []
            splats = []
            for index, (request, base) in enumerate(zip(requests, bases, strict=True)):
                entry = request.entry
                if entry.splat is not None:
                    splats.append((request, index, base))
                    continue
                if entry.external or entry.offset is None:
                    raise RuntimeError(
                        f"UNIMPLEMENTED; parameter '{request.key}' lives in another file than {entry.path.name}: "
                        "run with --params-mode mmap"
                    )
                path = str(entry.path)
                if path not in files:
                    files[path] = open_archive_file(path, self._options.read_path)
                offset = entry.offset + request.parameter_offset
                files[path].expect(offset, request.length)  # the request's chunks, together
                for start in range(0, request.length, chunk_bytes):
                    length = min(chunk_bytes, request.length - start)
                    chunks.append(_Chunk(files[path], offset + start, index, base + start, length))
            chunks.sort(key=lambda c: (c.file.path, c.file_offset))  # file order: the kernel's readahead helps
            self._fill_splats(splats, targets)
            self._run_workers(chunks, targets, min(chunk_bytes, max((c.length for c in chunks), default=0)))
        finally:
            for file in files.values():
                self._clock.note(file.note)
                file.close()

    def _fill_splats(self, splats: list[tuple[StreamRequest, int, int]], targets: DeviceTargets) -> None:
        if not splats:
            return
        rt = self._rt
        started = time.perf_counter()
        command_buffer = rt.HalCommandBuffer(self._device, 0, True)
        for request, index, base in splats:
            assert request.entry.splat is not None
            command_buffer.fill(targets.get(index), request.entry.splat, base, request.length)
        command_buffer.end()
        semaphore = self._device.create_semaphore(0)
        with self._submit_lock:
            self._device.queue_execute(command_buffer, [], [(semaphore, 1)])
        semaphore.wait(1)
        self._clock.add_fill(time.perf_counter() - started)
        self._count(sum(r.length for r, _, _ in splats))
        self._clock.last_byte(time.perf_counter())

    def _run_workers(self, chunks: list[_Chunk], targets: DeviceTargets, slot_bytes: int) -> None:
        """Readers fill pinned slots from the file; this thread queues each slot's copy and recycles the slot.

        Every call into IREE (allocations, command buffers, queue submissions) stays on this, the
        loading thread: IREE's CUDA driver allocates on the calling thread's CUDA context, and a
        reader thread has none (`CUDA_ERROR_INVALID_CONTEXT`, seen on the H200). The readers only
        read, with the GIL released, so reads and copies still overlap. The readers start with one
        slot each; the others, and the device buffers in the order the chunks need them, are made
        here whenever nothing read is waiting to be queued, so allocation overlaps the reads and
        copies instead of coming before them (`overlap_allocation`).
        """
        if not chunks:
            return
        started = time.perf_counter()
        overlap = self._options.overlap_allocation
        if not overlap:
            targets.all()  # every device buffer made here, before the readers start
        count = max(1, min(self._options.workers, len(chunks)))
        # Direct reads land a chunk's aligned superset at the slot's first aligned address (see reads.py).
        padding = SLOT_PADDING if any(c.file.direct for c in chunks) else 0
        wanted = count * max(1, self._options.slots_per_worker)
        slots = self._pool.take(slot_bytes + padding, count if overlap else wanted)
        self._clock.add_allocate(time.perf_counter() - started)
        # The device buffers still to make, in the order the chunks first need them.
        unmade = collections.deque(dict.fromkeys(c.request for c in chunks)) if overlap else collections.deque()
        batch = _Batch(chunks, slots, wanted, slot_bytes + padding, unmade)
        tallies = [ReaderTally() for _ in range(count)]
        loader = LoaderTally()
        clock = time.perf_counter
        readers = [
            threading.Thread(target=batch.read, args=(tally,), name=f"gputop-params-{i}", daemon=True)
            for i, tally in enumerate(tallies)
        ]
        began = clock()
        for reader in readers:
            reader.start()
        ahead = overlap
        try:
            for _ in range(len(chunks)):
                item, ahead = self._next_filled(batch, targets, loader, ahead)
                slot, chunk, start = item
                made = clock()
                target = targets.get(chunk.request)  # made here if no idle moment came before it was needed
                if overlap:
                    loader.allocate_s += clock() - made
                self._submit_copy(slot, target, chunk, start)
                batch.in_flight.append(slot)
        finally:
            batch.stopping.set()
            for slot in slots:
                batch.free.put(slot)  # wakes readers waiting for a slot, so they see the stop
            for reader in readers:
                reader.join()  # waits with the GIL released: the TUI and the sampler run meanwhile
            waited = clock()
            while batch.in_flight:
                self._settled(batch.in_flight.popleft())
            ended = clock()
            loader.dma_wait_s += ended - waited
            self._clock.add_batch(chunk_bytes=slot_bytes, wall_s=ended - began, readers=tallies, loader=loader)
            self._clock.last_byte(ended)

    def _next_filled(
        self, batch: _Batch, targets: DeviceTargets, loader: LoaderTally, ahead: bool
    ) -> tuple[tuple[StagingSlot, _Chunk, int], bool]:
        """The next slot a reader filled (with its chunk and where the bytes start), and whether making ahead
        is still worth trying; meanwhile, landed copies' slots go back to the readers."""
        clock = time.perf_counter
        in_flight, free = batch.in_flight, batch.free
        item: tuple[StagingSlot, _Chunk, int] | BaseException | None = None
        while item is None:
            if self._should_stop():
                raise RuntimeError("CANCELLED; the parameter load was stopped")
            while in_flight and in_flight[0].landed():  # slots back to the readers as soon as free
                free.put(self._settled(in_flight.popleft()))
            try:
                item = batch.filled.get_nowait()
            except queue.Empty:
                if ahead and (ahead := self._make_ahead(batch, targets, loader)):
                    continue  # nothing to queue: made a buffer the load will need instead of waiting
                waited = clock()
                if in_flight:
                    # Nothing read yet: the readers are reading or waiting for a slot, and the oldest
                    # copy is the next to land (no timed poll: a sleep here capped the rate at ~5 GB/s).
                    free.put(self._settled(in_flight.popleft()))
                    loader.dma_wait_s += clock() - waited
                else:
                    with contextlib.suppress(queue.Empty):
                        item = batch.filled.get(timeout=0.1)
                    loader.read_wait_s += clock() - waited
        if isinstance(item, BaseException):
            raise item
        return item, ahead

    def _make_ahead(self, batch: _Batch, targets: DeviceTargets, loader: LoaderTally) -> bool:
        """One allocation the pipeline will want (a staging slot first, then a device buffer); False
        when none is left."""
        began = time.perf_counter()
        if len(batch.slots) < batch.wanted:
            slot = self._pool.take(batch.slot_bytes, 1, have=len(batch.slots))[0]
            batch.slots.append(slot)
            batch.free.put(slot)
        else:
            unmade = batch.unmade
            while unmade and targets.made(unmade[0]):
                unmade.popleft()
            if not unmade:
                return False
            targets.get(unmade.popleft())
        loader.allocate_s += time.perf_counter() - began
        return True

    def _submit_copy(self, slot: StagingSlot, target: Any, chunk: _Chunk, source_offset: int) -> None:
        rt = self._rt
        command_buffer = rt.HalCommandBuffer(self._device, 0, True)
        source = self._pool.ready(slot)  # an imported slot is page-locked here, before its first copy
        command_buffer.copy(source, target, source_offset, chunk.target_offset, chunk.length, end=True)
        with self._submit_lock:
            self._device.queue_execute(command_buffer, [], [(slot.semaphore, slot.value + 1)])
        slot.value += 1
        slot.pending_bytes = chunk.length

    def _settled(self, slot: StagingSlot) -> StagingSlot:
        self._settle(slot)
        return slot

    def _settle(self, slot: StagingSlot) -> None:
        """Wait until the slot's last copy has landed, and count its bytes as loaded."""
        if slot.pending_bytes:
            slot.semaphore.wait(slot.value)
            self._count(slot.pending_bytes)
            slot.pending_bytes = 0

    def _count(self, nbytes: int) -> None:
        with self._totals.lock:
            self._totals.done += nbytes
            done, requested = self._totals.done, self._totals.requested
        if self._on_progress is not None:
            self._on_progress(done, requested)

    def _add_seconds(self, seconds: float) -> None:
        with self._totals.lock:
            self._totals.seconds += seconds
