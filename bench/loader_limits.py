"""What bounds gputop's streamed loader on a GPU: the copies it queues, the reads that feed them, or both at once.

Issue 32 asks the streamed loader for 85% of the pinned host-to-device figure end to end. Its stream (first read
to last copy landed) reads 82-87% of pinned on an H100 with 8 readers, and 12 readers are no faster. This takes
the pipeline apart, on one machine, through the same IREE calls the loader makes:

- `submit`: copies only. Pinned staging slots filled once, then the whole archive's byte count queued as the
  loader queues it (one command buffer per copy, a semaphore timeline per slot, the oldest slot waited for
  when none is free), for several copy sizes and slot counts: can IREE's queue carry the bus's figure in
  pieces of a few MiB?
- `reads`: reads only. `preadv` of the warm archive into pinned slots by N threads, each with two slots (as
  the loader's readers), no bus; then the same with the copies of `submit` running beside them, which is the
  host memory traffic of a real load: does the DMA slow the readers down?
- `threads`: can a thread other than the one that opened the device queue a copy and allocate (IREE's CUDA
  driver works on the calling thread's CUDA context)?

Prints one line per measurement and writes them as JSON (`--json`).
Usage: python bench/loader_limits.py ARCHIVE --device cuda [--json OUT]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from page_cache_pinning import in_threads

MIB = 2**20


def pinned_slots(rt: Any, device: Any, size: int, count: int) -> list[tuple[Any, np.ndarray, Any, Any]]:
    """(buffer, mapped view, semaphore, mapping) per slot: host-local, device-visible, cached, as the loader's."""
    memory_type = int(rt.MemoryType.HOST_LOCAL) | int(rt.MemoryType.DEVICE_VISIBLE) | int(rt.MemoryType.HOST_CACHED)
    slots = []
    for _ in range(count):
        buffer = device.allocator.allocate_buffer(
            memory_type=memory_type,
            allowed_usage=int(rt.BufferUsage.TRANSFER_SOURCE | rt.BufferUsage.MAPPING_SCOPED),
            allocation_size=size,
        )
        mapping = buffer.map()
        view = mapping.asarray([size], np.dtype(np.uint8))
        slots.append((buffer, view, device.create_semaphore(0), mapping))  # the mapping keeps the view alive
    return slots


class Copier:
    """Queues copies out of a set of pinned slots to device buffers as the loader does, and counts them."""

    def __init__(
        self, rt: Any, device: Any, slots: list[Any], targets: list[Any], target_bytes: int, shared: Any = None
    ) -> None:
        self.rt, self.device, self.slots, self.targets, self.target_bytes = rt, device, slots, targets, target_bytes
        self.values = [0] * len(slots)
        self.submit_s = 0.0
        # shared: one timeline semaphore for every copy (the queue runs them in order), not one per slot
        self.shared = shared
        self.counter = int(shared.query()) if shared is not None else 0

    def run(self, total: int, chunk: int, batch: int = 1, stop: threading.Event | None = None) -> tuple[int, float]:
        rt, device = self.rt, self.device
        free = collections.deque(range(len(self.slots)))
        in_flight: collections.deque[int] = collections.deque()
        moved = 0
        offset = 0
        started = time.perf_counter()
        while moved < total and not (stop is not None and stop.is_set()):
            group: list[int] = []
            while len(group) < batch and moved < total:
                if not free:
                    oldest = in_flight.popleft()
                    (self.shared or self.slots[oldest][2]).wait(self.values[oldest])
                    free.append(oldest)
                group.append(free.popleft())
                moved += chunk
            began = time.perf_counter()
            command_buffer = rt.HalCommandBuffer(device, 0, True)
            for k, index in enumerate(group):
                target = self.targets[(offset // self.target_bytes) % len(self.targets)]
                command_buffer.copy(
                    self.slots[index][0], target, 0, offset % self.target_bytes, chunk, end=k == len(group) - 1
                )
                offset += chunk
            signals = []
            if self.shared is not None:
                self.counter += 1
                for index in group:
                    self.values[index] = self.counter
                signals.append((self.shared, self.counter))
            else:
                for index in group:
                    self.values[index] += 1
                    signals.append((self.slots[index][2], self.values[index]))
            device.queue_execute(command_buffer, [], signals)
            in_flight.extend(group)
            self.submit_s += time.perf_counter() - began
        for index in in_flight:
            (self.shared or self.slots[index][2]).wait(self.values[index])
        return moved, time.perf_counter() - started


def part_submit(
    rt: Any, device: Any, targets: list[Any], target_bytes: int, total: int, row: Callable[..., None]
) -> None:
    for chunk_mib, count, batch in (
        (1, 64, 1),
        (2, 32, 1),
        (4, 16, 1),
        (4, 32, 1),
        (4, 16, 4),
        (8, 8, 1),
        (16, 4, 1),
        (64, 4, 1),
    ):
        slots = pinned_slots(rt, device, chunk_mib * MIB, count)
        for _, view, _, _ in slots:
            view[:] = 1
        copier = Copier(rt, device, slots, targets, target_bytes)
        copier.run(min(total, 2**30), chunk_mib * MIB, batch)  # warm the path
        copier.submit_s = 0.0
        moved, seconds = copier.run(total // (chunk_mib * MIB) * chunk_mib * MIB, chunk_mib * MIB, batch)
        row(
            "submit",
            f"{chunk_mib} MiB copies, {count} slots, {batch} per command buffer",
            seconds,
            moved,
            submit_s=round(copier.submit_s, 4),
            staging_mib=chunk_mib * count,
        )
        del copier, slots


def part_reads(
    rt: Any, device: Any, archive: str, targets: list[Any], target_bytes: int, row: Callable[..., None]
) -> None:
    descriptor = os.open(archive, os.O_RDONLY)
    size = os.fstat(descriptor).st_size
    for with_dma in (False, True):
        for threads, chunk_mib in ((8, 4), (12, 4), (16, 4), (16, 2), (12, 2)):
            chunk = chunk_mib * MIB
            offsets = list(range(0, size - chunk, chunk))
            cursor = [0]
            lock = threading.Lock()
            slots = [pinned_slots(rt, device, chunk, 2) for _ in range(threads)]

            def read(
                mine: list[Any], lock: threading.Lock = lock, cursor: list[int] = cursor, offsets: list[int] = offsets
            ) -> None:
                turn = 0
                while True:
                    with lock:
                        if cursor[0] >= len(offsets):
                            return
                        offset = offsets[cursor[0]]
                        cursor[0] += 1
                    view = memoryview(mine[turn % 2][1].data)
                    os.preadv(descriptor, [view], offset)
                    turn += 1

            stop = threading.Event()
            dma: dict[str, float] = {}
            background = None
            if with_dma:
                dma_slots = pinned_slots(rt, device, 4 * MIB, 16)
                copier = Copier(rt, device, dma_slots, targets, target_bytes)

                def copy_forever(
                    copier: Copier = copier, stop: threading.Event = stop, dma: dict[str, float] = dma
                ) -> None:
                    moved, seconds = copier.run(2**40, 4 * MIB, 1, stop)
                    dma.update(moved=moved, seconds=seconds)

                background = threading.Thread(target=copy_forever)
                background.start()
                time.sleep(0.05)
            seconds = in_threads(threads, [partial(read, slots[i]) for i in range(threads)])
            extra: dict[str, Any] = {}
            if background is not None:
                stop.set()
                background.join()
                extra["dma_gbps_beside"] = round(dma["moved"] / dma["seconds"] / 1e9, 2)
            label = f"{threads} readers, {chunk_mib} MiB, 2 slots each" + (
                ", the DMA beside" if with_dma else ", no bus"
            )
            row("reads", label, seconds, len(offsets) * chunk, **extra)
    os.close(descriptor)


def part_staging(
    rt: Any, device: Any, targets: list[Any], target_bytes: int, total: int, row: Callable[..., None]
) -> None:
    """Making the loader's staging: the driver's pinned allocations against the process's memory imported.

    An imported slot is made at once (a mapping); its pages come in with its first write (a reader's read) and it
    is page-locked by the import before its first copy: both timed after the making, as `first write + import`.
    """
    from gputop.core.params.staging import StagingPool

    for round_ in range(2):
        for imported in (False, True):
            pool = StagingPool(device, cached=True, imported=imported)
            started = time.perf_counter()
            slots = pool.take(4 * MIB, 8)
            seconds = time.perf_counter() - started
            kind = "imported" if imported else "allocated"
            row("staging", f"8 slots of 4 MiB, {kind}, round {round_ + 1}", seconds, 32 * MIB)
            if imported:
                started = time.perf_counter()
                for slot in slots:
                    slot.view[:] = 1
                    pool.ready(slot)
                row("staging", f"8 slots of 4 MiB, first write + import, round {round_ + 1}",
                    time.perf_counter() - started, 32 * MIB)  # fmt: skip
            if round_ == 1:
                more = pool.take(4 * MIB, 8, have=8)
                for slot in slots + more:
                    slot.view[:] = 1
                    pool.ready(slot)
                as_tuples = [(slot.buffer, slot.view, slot.semaphore, None) for slot in slots + more]
                copier = Copier(rt, device, as_tuples, targets, target_bytes)
                copier.run(2**30, 4 * MIB)
                moved, seconds = copier.run(total, 4 * MIB)
                row("submit", f"4 MiB copies, 16 slots, {kind} staging", seconds, moved)
            pool.release()


def part_latency(
    rt: Any, device: Any, targets: list[Any], target_bytes: int, total: int, row: Callable[..., None], in_order: bool
) -> None:
    """One 4 MiB copy queued and waited for, again and again (the round trip), and few slots against many, each
    slot with its own semaphore or all copies on one timeline (only where the queue runs copies in order: CUDA)."""
    slots = pinned_slots(rt, device, 4 * MIB, 32)
    for _, view, _, _ in slots:
        view[:] = 1
    rounds = []
    for k in range(40):
        started = time.perf_counter()
        command_buffer = rt.HalCommandBuffer(device, 0, True)
        command_buffer.copy(slots[0][0], targets[0], 0, 0, 4 * MIB, end=True)
        device.queue_execute(command_buffer, [], [(slots[0][2], k + 1)])
        slots[0][2].wait(k + 1)
        rounds.append(time.perf_counter() - started)
    rounds.sort()
    row(
        "latency",
        "one 4 MiB copy queued and waited for, median of 40",
        rounds[20],
        4 * MIB,
        p10_us=round(rounds[4] * 1e6, 1),
        p90_us=round(rounds[36] * 1e6, 1),
    )
    shared = device.create_semaphore(0)
    for _ in range(2):
        for count in (2, 4, 8, 16, 32):
            for one_timeline in (False, True) if in_order else (False,):
                fresh = [(b, v, device.create_semaphore(0), None) for b, v, _, _ in slots[:count]]
                copier = Copier(rt, device, fresh, targets, target_bytes, shared if one_timeline else None)
                moved, seconds = copier.run(total // 4, 4 * MIB)
                kind = "one timeline" if one_timeline else "a semaphore per slot"
                row("latency", f"4 MiB copies, {count} slots, {kind}", seconds, moved)


def part_dirty(
    rt: Any, device: Any, targets: list[Any], target_bytes: int, total: int, row: Callable[..., None]
) -> None:
    """Copies of slots a CPU has just written (as the readers leave them) against slots written long before.

    Writers copy from host memory into their slots (numpy, GIL released) and queue each slot's copy right after
    writing it (lag 0), or after writing their next slot (lag 1: the first slot's lines pushed out of the
    writer's core cache by then), or queue without writing (prewritten).
    """
    lock = threading.Lock()
    for writers, lag, write in ((12, 0, True), (12, 1, True), (12, 0, False), (12, 0, True), (12, 1, True)):
        sources = [np.full(64 * MIB, k, dtype=np.uint8) for k in range(writers)]
        own = [pinned_slots(rt, device, 4 * MIB, 3) for _ in range(writers)]
        share = total // writers // (4 * MIB)
        offsets = [0]

        def write_and_copy(
            k: int,
            share: int = share,
            lag: int = lag,
            write: bool = write,
            own: list[Any] = own,
            sources: list[np.ndarray] = sources,
            offsets: list[int] = offsets,
        ) -> None:
            mine = own[k]
            values = [int(slot[2].query()) for slot in mine]
            written: collections.deque[int] = collections.deque()
            for i in range(share):
                index = i % len(mine)
                if values[index] > int(mine[index][2].query()):
                    mine[index][2].wait(values[index])
                if write:
                    start = (i * 4 * MIB) % (64 * MIB)
                    np.copyto(mine[index][1], sources[k][start : start + 4 * MIB])
                written.append(index)
                while len(written) > lag or (i == share - 1 and written):
                    ready = written.popleft()
                    command_buffer = rt.HalCommandBuffer(device, 0, True)
                    with lock:
                        offset = offsets[0]
                        offsets[0] += 4 * MIB
                    target = targets[(offset // target_bytes) % len(targets)]
                    command_buffer.copy(mine[ready][0], target, 0, offset % target_bytes, 4 * MIB, end=True)
                    values[ready] += 1
                    with lock:
                        device.queue_execute(command_buffer, [], [(mine[ready][2], values[ready])])
            for index, slot in enumerate(mine):
                slot[2].wait(values[index])

        seconds = in_threads(writers, [partial(write_and_copy, k) for k in range(writers)])
        what = "written just before" if write else "prewritten"
        row("dirty", f"{writers} writers, 3 slots each, 4 MiB, {what}, lag {lag}", seconds, share * writers * 4 * MIB)


def part_twice(rt: Any, args: argparse.Namespace, row: Callable[..., None]) -> None:
    """The head module's context and first call twice in one process: what the first time costs beyond the next."""
    from gputop.core.module.device_discovery import resolve_device
    from gputop.core.params.archive import read_archive
    from gputop.core.runners.iree_runner import IreeModuleRun

    runner = IreeModuleRun([resolve_device(args.device)])
    runner.open_devices()
    runner.load_module(Path(args.vmfb))
    read_archive(Path(args.archive))
    for round_ in range(3):
        runner.load_parameters([Path(args.archive)], mode="streamed")
        stream = runner.parameter_stream
        started = time.perf_counter()
        runner.create_context("head")
        created = time.perf_counter()
        outputs = runner.read_back(runner.call())
        called = time.perf_counter()
        last = stream._clock.last_byte_at if stream is not None else None
        after = created - last if last is not None else 0.0
        row(
            "twice",
            f"context {round_ + 1}: after the last byte",
            after,
            0,
            context_s=round(created - started, 4),
            call_ms=round((called - created) * 1e3, 2),
            outputs=len(outputs),
        )
        print(
            f"twice    context {round_ + 1}: {created - started:.4f} s, after the last byte {after * 1e3:.1f} ms, "
            f"call + read back {(called - created) * 1e3:.1f} ms",
            flush=True,
        )
        runner.context = None


def part_threads(rt: Any, device: Any, targets: list[Any], row: Callable[..., None]) -> None:
    slot = pinned_slots(rt, device, 4 * MIB, 1)[0]
    answers: dict[str, str] = {}

    def attempt(name: str, work: Callable[[], object]) -> None:
        try:
            work()
            answers[name] = "ok"
        except Exception as exc:  # the answer is what it says
            answers[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"

    def on_another_thread() -> None:
        semaphore = device.create_semaphore(0)

        def copy() -> None:
            command_buffer = rt.HalCommandBuffer(device, 0, True)
            command_buffer.copy(slot[0], targets[0], 0, 0, 4 * MIB, end=True)
            device.queue_execute(command_buffer, [], [(semaphore, 1)])
            semaphore.wait(1)

        attempt("copy queued from another thread", copy)
        attempt(
            "device buffer allocated on another thread",
            lambda: device.allocator.allocate_buffer(
                memory_type=int(rt.MemoryType.DEVICE_LOCAL),
                allowed_usage=int(rt.BufferUsage.DEFAULT | rt.BufferUsage.TRANSFER),
                allocation_size=64 * MIB,
            ),
        )
        attempt("pinned slot allocated on another thread", lambda: pinned_slots(rt, device, 4 * MIB, 1))

    thread = threading.Thread(target=on_another_thread)
    thread.start()
    thread.join()
    for name, answer in answers.items():
        print(f"threads: {name}: {answer}", flush=True)
        row("threads", name, 0.0, 0, answer=answer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("archive")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--parts", default="threads,staging,submit,reads")
    parser.add_argument(
        "--target-mib",
        type=int,
        default=16 * 1024,
        help="device memory the copies land in, in 1 GiB buffers or one smaller one",
    )
    parser.add_argument("--vmfb", help="the archive's head module (part twice)")
    parser.add_argument("--json")
    args = parser.parse_args()
    import iree.runtime as rt

    device = rt.get_device(args.device)
    rows: list[dict[str, Any]] = []

    def row(part: str, what: str, seconds: float, nbytes: int, **extra: Any) -> None:
        gbps = nbytes / seconds / 1e9 if seconds > 0 else 0.0
        rows.append(
            {"part": part, "what": what, "seconds": round(seconds, 4), "bytes": nbytes, "gbps": round(gbps, 2), **extra}
        )
        if seconds > 0:
            print(f"{part:8s} {what:60s} {seconds * 1e3:8.1f} ms {gbps:7.2f} GB/s {extra or ''}", flush=True)
        if args.json:
            with open(args.json, "w") as out:
                json.dump({"device": args.device, "archive": args.archive, "rows": rows}, out, indent=1)

    target_bytes = min(2**30, args.target_mib * MIB)
    targets = [
        device.allocator.allocate_buffer(
            memory_type=int(rt.MemoryType.DEVICE_LOCAL),
            allowed_usage=int(rt.BufferUsage.DEFAULT | rt.BufferUsage.TRANSFER),
            allocation_size=target_bytes,
        )
        for _ in range(max(1, args.target_mib * MIB // target_bytes))
    ]
    total = os.path.getsize(args.archive) // (64 * MIB) * 64 * MIB
    parts = args.parts.split(",")
    if "threads" in parts:
        part_threads(rt, device, targets, row)
    if "twice" in parts:
        part_twice(rt, args, row)
    if "latency" in parts:
        part_latency(rt, device, targets, target_bytes, total, row, args.device.startswith("cuda"))
    if "dirty" in parts:
        part_dirty(rt, device, targets, target_bytes, total, row)
    if "staging" in parts:
        part_staging(rt, device, targets, target_bytes, total, row)
    if "submit" in parts:
        part_submit(rt, device, targets, target_bytes, total, row)
    if "reads" in parts:
        part_reads(rt, device, args.archive, targets, target_bytes, row)
    os._exit(0)  # IREE's bindings may crash in their own teardown after a clean run


if __name__ == "__main__":
    main()
