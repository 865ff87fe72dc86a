"""Can the GPU read a warm archive straight from the page cache faster than gputop copies it into pinned staging?

Issue 32's streamed loader copies every byte of a warm archive once, page cache to pinned staging (`preadv`),
before the bus carries it: three or four bytes of host memory traffic per byte loaded. The other road skips the
copy: map the file, page-lock (`cuMemHostRegister`, read-only) the mapped page cache, and let the DMA engine read
it there. This measures, on one machine and one warm file, with the CUDA driver API alone (ctypes, no IREE):

- `memcpy`: the host's own copy bandwidth, numpy between two anonymous buffers, 1..N threads;
- `preadv`: the page-cache copy gputop's readers do, into page-locked buffers, N threads, no bus;
- `register`: page-locking the mapped file, in pieces, by 1..N threads (and the unlocking);
- `dma`: host-to-device copies out of the registered page cache, one stream (the bus from it);
- `pipelined`: N threads register pieces while one thread queues their copies, and each piece is unregistered
  once its copy is done: the zero-copy loader's end to end figure, to set beside gputop's streamed load.

Prints one line per measurement and writes them as JSON (`--json`).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import mmap
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import numpy as np

CU_MEMHOSTREGISTER_PORTABLE = 0x01
CU_MEMHOSTREGISTER_READ_ONLY = 0x08
ATTRIBUTE_PAGEABLE_USES_HOST_PAGE_TABLES = 100
ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED = 113
MADV_POPULATE_READ = 22


class Driver:
    """The few CUDA driver calls this needs, on the device's primary context (made current per thread)."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.check(self.lib.cuInit(0), "cuInit")
        self.device = ctypes.c_int()
        self.check(self.lib.cuDeviceGet(ctypes.byref(self.device), 0), "cuDeviceGet")
        self.context = ctypes.c_void_p()
        self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.context), self.device), "retain")
        self.lib.cuMemHostRegister_v2.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
        self.lib.cuMemHostUnregister.argtypes = [ctypes.c_void_p]
        self.lib.cuMemcpyHtoDAsync_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        self.lib.cuMemHostAlloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_uint]
        self.current()
        self.stream = ctypes.c_void_p()
        self.check(self.lib.cuStreamCreate(ctypes.byref(self.stream), 1), "cuStreamCreate")

    @staticmethod
    def check(result: int, what: str) -> None:
        if result != 0:
            raise RuntimeError(f"{what}: CUresult {result}")

    def current(self) -> None:
        self.check(self.lib.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")

    def attribute(self, which: int) -> int:
        value = ctypes.c_int()
        self.check(self.lib.cuDeviceGetAttribute(ctypes.byref(value), which, self.device), "attribute")
        return value.value

    def device_buffer(self, size: int) -> int:
        pointer = ctypes.c_uint64()
        self.check(self.lib.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(size)), "cuMemAlloc")
        return pointer.value

    def pinned_buffer(self, size: int) -> np.ndarray:
        pointer = ctypes.c_void_p()
        self.check(self.lib.cuMemHostAlloc(ctypes.byref(pointer), size, 0), "cuMemHostAlloc")
        return np.ctypeslib.as_array(ctypes.cast(pointer, ctypes.POINTER(ctypes.c_uint8)), (size,))

    def register(self, address: int, size: int) -> None:
        flags = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_READ_ONLY
        self.check(self.lib.cuMemHostRegister_v2(address, size, flags), "cuMemHostRegister")

    def unregister(self, address: int) -> None:
        self.check(self.lib.cuMemHostUnregister(address), "cuMemHostUnregister")

    def copy(self, target: int, address: int, size: int) -> None:
        self.check(self.lib.cuMemcpyHtoDAsync_v2(target, address, size, self.stream), "cuMemcpyHtoDAsync")

    def synchronize(self) -> None:
        self.check(self.lib.cuStreamSynchronize(self.stream), "cuStreamSynchronize")


def timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def in_threads(threads: int, jobs: Sequence[Callable[[], object]], driver: Driver | None = None) -> float:
    def run(job: Callable[[], object]) -> object:
        if driver is not None:
            driver.current()
        return job()

    with ThreadPoolExecutor(threads) as pool:
        started = time.perf_counter()
        for future in [pool.submit(run, job) for job in jobs]:
            future.result()
        return time.perf_counter() - started


def memcpy_bandwidth(thread_counts: list[int], row: Callable[..., None]) -> None:
    """The host's copy bandwidth: 2 GiB between two anonymous buffers (touched first), split among threads."""
    source = np.ones(2**31, dtype=np.uint8)
    target = np.zeros_like(source)
    step = 2**24

    def copy_part(starts: np.ndarray) -> None:
        for start in starts:
            np.copyto(target[start : start + step], source[start : start + step])

    for threads in thread_counts:
        parts = np.array_split(np.arange(0, source.size, step), threads)
        seconds = in_threads(threads, [partial(copy_part, p) for p in parts])
        row("memcpy (anonymous, 16 MiB pieces)", threads, seconds, source.size)


def preadv_bandwidth(
    descriptor: int, size: int, thread_counts: list[int], driver: Driver, row: Callable[..., None]
) -> None:
    """The page-cache copy gputop's readers do: preadv of 4 MiB chunks into page-locked buffers, no bus."""
    chunk = 4 * 2**20
    offsets = list(range(0, size, chunk))

    def read_share(buffer: np.ndarray, share: list[int]) -> None:
        view = memoryview(buffer.data)
        for offset in share:
            os.preadv(descriptor, [view], offset)

    for threads in thread_counts:
        jobs = [partial(read_share, driver.pinned_buffer(chunk), offsets[i::threads]) for i in range(threads)]
        row("preadv page cache -> pinned, 4 MiB", threads, in_threads(threads, jobs), size)


def pipelined_load(driver: Driver, pieces: list[tuple[int, int]], piece: int, threads: int) -> float:
    """The zero-copy loader end to end: register in threads, copy each piece as it comes, unregister after."""
    registered: queue.Queue[tuple[int, int]] = queue.Queue()
    targets = [driver.device_buffer(piece) for _ in range(2)]

    def register_one(address: int, length: int) -> None:
        driver.register(address, length)
        registered.put((address, length))

    started = time.perf_counter()
    with ThreadPoolExecutor(threads, initializer=driver.current) as pool:
        futures = [pool.submit(register_one, a, n) for a, n in pieces]
        done: list[int] = []
        for index in range(len(pieces)):
            address, length = registered.get()
            driver.copy(targets[index % 2], address, length)
            done.append(address)
        driver.synchronize()
        for future in futures:
            future.result()
    for address in done:
        driver.unregister(address)
    return time.perf_counter() - started


def iree_import(
    device_uri: str, mapping: mmap.mmap, pieces: list[tuple[int, int]], piece: int, row: Callable[..., None]
) -> None:
    """IREE's own road to the same: `import_host_allocation` of a read-only slice of the mapping, one thread."""
    import iree.runtime as rt

    device = rt.get_device(device_uri)
    view = memoryview(mapping)
    kept = []

    def import_all() -> None:
        for index in range(len(pieces)):
            kept.append(
                device.allocator.import_host_allocation(
                    view[index * piece : (index + 1) * piece],
                    memory_type=rt.MemoryType.HOST_LOCAL | rt.MemoryType.DEVICE_VISIBLE,
                    allowed_usage=rt.BufferUsage.TRANSFER_SOURCE,
                )
            )

    try:
        row("iree import_host_allocation", 1, timed(import_all), len(pieces) * piece)
    except Exception as error:  # the answer is what it says
        print(f"iree import_host_allocation: {type(error).__name__}: {str(error).splitlines()[0]}", flush=True)
    kept.clear()
    view.release()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("archive", help="a warm file (its pages in the page cache)")
    parser.add_argument("--threads", default="1,8,16", help="thread counts to try")
    parser.add_argument("--piece-mib", type=int, default=64, help="bytes page-locked per call")
    parser.add_argument("--iree-device", default="cuda", help="also time IREE's import on this device ('' skips)")
    parser.add_argument("--json")
    args = parser.parse_args()
    thread_counts = [int(one) for one in args.threads.split(",")]
    piece = args.piece_mib * 2**20
    size = os.path.getsize(args.archive)
    size -= size % piece
    rows: list[dict[str, object]] = []

    def row(what: str, threads: int, seconds: float, nbytes: int, **extra: object) -> None:
        rows.append(
            {
                "what": what,
                "threads": threads,
                "seconds": seconds,
                "bytes": nbytes,
                "gbps": nbytes / seconds / 1e9,
                **extra,
            }
        )
        print(
            f"{what:<34} {threads:>2} threads  {seconds * 1e3:9.1f} ms  {nbytes / seconds / 1e9:7.2f} GB/s",
            *(f"{key}={value}" for key, value in extra.items()),
            flush=True,
        )

    driver = Driver()
    print(
        f"{size / 2**30:.2f} GiB of {args.archive}, pieces of {args.piece_mib} MiB; read-only registration"
        f" supported: {driver.attribute(ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED)}, pageable access through"
        f" host page tables: {driver.attribute(ATTRIBUTE_PAGEABLE_USES_HOST_PAGE_TABLES)}",
        flush=True,
    )

    memcpy_bandwidth(thread_counts, row)
    descriptor = os.open(args.archive, os.O_RDONLY)
    preadv_bandwidth(descriptor, size, thread_counts, driver, row)
    mapping = mmap.mmap(descriptor, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
    base = np.frombuffer(mapping, dtype=np.uint8).ctypes.data
    pieces = [(base + offset, piece) for offset in range(0, size, piece)]
    device = driver.device_buffer(piece)

    for threads in thread_counts:
        seconds = in_threads(threads, [partial(driver.register, a, n) for a, n in pieces], driver)
        row("register (read-only, mapped file)", threads, seconds, size)

        def copy_all() -> None:
            for address, length in pieces:
                driver.copy(device, address, length)
            driver.synchronize()

        row("dma from the registered page cache", 1, timed(copy_all), size)
        row(
            "unregister",
            threads,
            in_threads(threads, [partial(driver.unregister, a) for a, _ in pieces], driver),
            size,
        )

    # Populating the mapping's page tables first (MADV_POPULATE_READ), then registering: is the fault the cost?
    populate = ctypes.CDLL(None).madvise
    populate.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    threads = max(thread_counts)
    seconds = in_threads(threads, [partial(populate, a, n, MADV_POPULATE_READ) for a, n in pieces])
    row("madvise(POPULATE_READ)", threads, seconds, size)
    row(
        "register after populate",
        threads,
        in_threads(threads, [partial(driver.register, a, n) for a, n in pieces], driver),
        size,
    )
    in_threads(threads, [partial(driver.unregister, a) for a, _ in pieces], driver)

    for threads in thread_counts:
        row("pipelined: register + dma (+ unregister)", threads, pipelined_load(driver, pieces, piece, threads), size)
    if args.iree_device:
        # IREE's Python import wants a writable buffer: a read-only mapping is refused, and a private writable
        # one is registered for writing (each page copied on write by the kernel). Both are tried.
        iree_import(args.iree_device, mapping, pieces[:16], piece, row)
        private = mmap.mmap(descriptor, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        iree_import(args.iree_device, private, pieces[:16], piece, row)
        private.close()
    mapping.close()
    os.close(descriptor)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"archive": args.archive, "bytes": size, "piece": piece, "rows": rows}, out, indent=1)
    return 0


if __name__ == "__main__":
    threading.current_thread().name = "page_cache_pinning"
    sys.exit(main())
