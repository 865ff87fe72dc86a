"""Parameters: how fast each loading path brings a model onto the device, beside the bus's own limit.

A large model's context took minutes when its parameters went through host
memory. This builds a model-like archive (`--tensors N --gib G`: an embedding,
transformer layers of nine tensors, an output projection; `--tensors 1` is one
parameter of G GiB) and a module whose `head()` returns the first and last
four values of every parameter, then times, each path in a fresh process,
index load + context creation + first call, and checks the call's output
against the markers written into the archive (a wrong or partial load fails
the check, so a fast path cannot be fast by skipping bytes):

- streamed: gputop's loader (core/params/streamed_load.py), the product's own code path;
- streamed_wc: the same loader staging through write-combined pinned memory (its first version);
- streamed_pc: the same loader made to read with `preadv` through the page cache, warm or cold (its
  `read_path` forced to page-cache; plain `streamed` copies a warm file out of a mapping and reads a
  cold one with O_DIRECT), the A/B for the mapped copy;
- streamed_up: the same loader making every buffer before the first read (`overlap_allocation` off,
  as it was before), the A/B for allocation beside the reads;
- streamed_al: the same loader staging through the driver's own pinned allocations, where `streamed`
  imports its staging (CUDA; `imported_staging`), the A/B for imported staging;
- mmap, file_async: IREE's, as gputop runs them (`--params-mode`);
- file_async_c8: IREE's async file reads with `max_concurrent_operations=8`;
- fd: a plain file descriptor (`FileHandle.wrap_fd`);
- host_copy: every parameter copied through Python memory first (the slow path).

Beside them, the physical figure: the same number of bytes copied host to
device through the same device API from pinned memory (IREE's host-local,
device-visible buffers) and from pageable memory (`allocate_buffer_copy` of a
NumPy array), and through PyTorch where it is installed with CUDA. Warm page
cache (the file read once before) and cold (`posix_fadvise(DONTNEED)`; the
share of the file still resident is read with `mincore` and reported).

With a cold cache the disk's own figure is measured in the same run: a plain
sequential read of the archive with O_DIRECT into an aligned buffer (one
thread, 64 MiB requests), and each cold row gets `vs_direct_read`, its GB/s
over that one's. Streamed rows carry the loader's stage times
(`parameters.stages` of a report: see `ParameterStages`), printed one line each.

Usage: python bench/params.py [--device cuda] [--tensors 256] [--gib 16] [--archive A.irpa] [--vmfb M.vmfb]
           [--paths streamed,mmap,file_async] [--cache warm,cold] [--reference] [--sweep] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

PATHS = (
    "streamed",
    "streamed_wc",
    "streamed_pc",
    "streamed_up",
    "streamed_al",
    "mmap",
    "file_async",
    "file_async_c8",
    "fd",
    "host_copy",
)
SWEEP = ((8, 2), (8, 8), (8, 16), (4, 4), (12, 4), (16, 4))  # streamed: (workers, chunk MiB); 8x4 is the default


# -- page cache -----------------------------------------------------------------------------------------------


def resident_fraction(path: Path) -> float:
    """The share of the file's pages in the page cache (mincore over every page; nan if the kernel won't say)."""
    from gputop.core.params.page_cache import resident_share

    share = resident_share(path, windows=0)
    return float("nan") if share is None else share


def direct_read(path: Path, block: int = 64 * 2**20) -> dict[str, Any]:
    """The disk's figure: the whole file read once, sequentially, with O_DIRECT into an aligned buffer."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError as exc:
        return {"error": f"O_DIRECT refused: {exc.strerror}"}
    buffer = mmap.mmap(-1, block)  # anonymous mappings are page-aligned, as O_DIRECT needs
    total = 0
    try:
        started = time.perf_counter()
        while (got := os.preadv(fd, [buffer], total)) > 0:
            total += got
        elapsed = time.perf_counter() - started
    finally:
        os.close(fd)
        buffer.close()
    return {"bytes": total, "seconds": round(elapsed, 4), "gbps": round(total / elapsed / 1e9, 3), "block": block}


def drop_cache(path: Path) -> float:
    """Evict the file from the page cache; returns the share still resident afterwards."""
    from gputop.core.params.archive import evict_from_page_cache

    evict_from_page_cache(path)
    return resident_fraction(path)


def warm_cache(path: Path, threads: int = 8) -> float:
    """Read the whole file once (in parallel) so it sits in the page cache; returns the resident share."""
    size = path.stat().st_size
    block = 64 * 2**20
    fd = os.open(path, os.O_RDONLY)

    def read(offset: int) -> None:
        buffer = bytearray(block)
        os.preadv(fd, [buffer], offset)

    try:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(read, range(0, size, block)))
    finally:
        os.close(fd)
    return resident_fraction(path)


# -- one path, in a fresh process -------------------------------------------------------------------------------


def one_path(args: argparse.Namespace) -> dict[str, Any]:
    import iree.runtime as rt

    from gputop.core.module.device_discovery import resolve_device
    from gputop.core.params.archive import expected_head, read_archive
    from gputop.core.params.streamed_load import StreamOptions
    from gputop.core.runners.iree_runner import IreeModuleRun

    info = resolve_device(args.device)
    runner = IreeModuleRun([info])
    runner.open_devices()
    runner.load_module(args.vmfb)
    mode = args.one
    warmed = prewarm(runner.devices[0], args.prewarm) if args.prewarm else {}
    started = time.perf_counter()
    entries = read_archive(args.archive)
    if mode in ("streamed", "streamed_wc", "streamed_pc", "streamed_up", "streamed_al", "mmap", "file_async"):
        # streamed_wc: the same loader staging through write-combined pinned memory (its first version);
        # streamed_pc: preadv through the page cache whatever the cache holds
        options = StreamOptions(
            workers=args.workers,
            chunk_bytes=args.chunk_mib * 2**20,
            cached_staging=mode != "streamed_wc",
            read_path="page-cache" if mode == "streamed_pc" else "auto",
            overlap_allocation=mode != "streamed_up",
            slots_per_worker=args.slots,
            # as the runner picks it (imported on CUDA), but for streamed_al, the A/B
            imported_staging=info.backend == "cuda" and mode != "streamed_al",
        )
        base_mode = mode.split("_")[0] if mode.startswith("streamed") else mode
        runner.load_parameters([args.archive], mode=base_mode, options=options)
    else:
        index = rt.ParameterIndex()
        if mode == "file_async_c8":
            index.load(str(args.archive), mode="file_async")
            provider = index.create_provider(scope="model", max_concurrent_operations=8)
        elif mode == "fd":
            index.load_from_file_handle(rt.FileHandle.wrap_fd(os.open(args.archive, os.O_RDONLY)), "irpa")
            provider = index.create_provider(scope="model")
        else:  # host_copy: the slow path users fall into (bytes through Python memory)
            probe = rt.ParameterIndex()
            probe.load(str(args.archive))
            for name, entry in probe.items():
                index.add_buffer(name, rt.parameter_index_entry_as_numpy_flat_ndarray(entry).tobytes())
            provider = index.create_provider(scope="model")
        runner.parameter_files = [args.archive]
        runner.parameters_module = rt.create_io_parameters_module(runner.instance, provider)
    index_s = time.perf_counter() - started
    marks: dict[str, float] = {}
    stream = runner.parameter_stream
    if stream is not None:  # when the loader handed its buffers back to the VM (the rest of `after` is IREE's)
        load = stream._load

        def marked_load(*load_args: Any) -> Any:
            result = load(*load_args)
            marks["load_returned"] = time.perf_counter()
            return result

        stream._load = marked_load
    context_started = time.perf_counter()
    runner.create_context("head")
    context_done = time.perf_counter()
    results = runner.call()
    called = time.perf_counter()
    outputs = runner.read_back(results)
    elapsed = time.perf_counter() - started
    total = sum(e.length for e in entries)
    expected = expected_head(len(entries))
    passed = bool(outputs) and np.array_equal(outputs[0], expected)
    result = {
        "path": f"{mode} w{args.workers} c{args.chunk_mib}M"
        + (f" s{args.slots}" if args.slots != 2 else "")
        + (f" prewarmed {args.prewarm}" if args.prewarm else "")
        if mode.startswith("streamed")
        else mode,
        "bytes": total,
        "seconds": round(elapsed, 4),
        "index_s": round(index_s, 4),
        "context_s": round(context_done - started - index_s, 4),
        "call_s": round(called - context_done, 4),
        "read_back_s": round(elapsed - (called - started), 4),
        "gbps": round(total / elapsed / 1e9, 3),
        "check": "passed" if passed else "FAILED: the first call's markers differ from the archive's",
        "mode_used": runner.parameter_mode,
        **({"prewarm": warmed} if warmed else {}),
        "fallback": runner.parameter_fallback,
    }
    if runner.parameter_stream is not None:
        from gputop.core.records.base import to_json

        result["loader_s"] = round(runner.parameter_stream.seconds, 4)
        # The product's own figure (a report's parameters.gbps): the index and the loader, not the rest of
        # the context or the first call.
        result["loader_gbps"] = round(total / (index_s + runner.parameter_stream.seconds) / 1e9, 3)
        result["stages"] = to_json(runner.parameter_stream.stage_times(context_started, context_done))
        last_byte = runner.parameter_stream._clock.last_byte_at
        if "load_returned" in marks and last_byte is not None:
            result["after_loader_s"] = round(marks["load_returned"] - last_byte, 5)
            result["after_vm_s"] = round(context_done - marks["load_returned"], 5)
    return result


def prewarm(device: Any, which: int) -> dict[str, float]:
    """A diagnosis, outside the timed window: the device's first queue-ordered allocation (which & 1) and first
    small device-to-device copies (which & 2), so that a row with it shows what those first uses cost the context
    and the call; the host's time in each step, in ms."""
    import iree.runtime as rt

    steps: dict[str, float] = {}
    semaphore = device.create_semaphore(0)
    value = 0
    clock = time.perf_counter

    def device_buffer() -> Any:
        return device.allocator.allocate_buffer(
            memory_type=int(rt.MemoryType.DEVICE_LOCAL),
            allowed_usage=int(rt.BufferUsage.DEFAULT) | int(rt.BufferUsage.TRANSFER),
            allocation_size=65536,
        )

    if which & 1:
        began = clock()
        buffer = device.queue_alloca(65536, [(semaphore, value)], [(semaphore, value + 1)])
        value += 1
        steps["alloca_call_ms"] = (clock() - began) * 1e3
        began = clock()
        device.queue_dealloca(buffer, [(semaphore, value)], [(semaphore, value + 1)])
        value += 1
        semaphore.wait(value)
        steps["dealloca_and_wait_ms"] = (clock() - began) * 1e3
    if which & 2:
        source, other = device_buffer(), device_buffer()
        began = clock()
        command_buffer = rt.HalCommandBuffer(device, 0, True)
        for k in range(64):
            command_buffer.copy(source, other, k * 16, k * 16, 16, end=k == 63)
        steps["record_ms"] = (clock() - began) * 1e3
        began = clock()
        device.queue_execute(command_buffer, [(semaphore, value)], [(semaphore, value + 1)])
        value += 1
        steps["execute_call_ms"] = (clock() - began) * 1e3
        began = clock()
        semaphore.wait(value)
        steps["copies_wait_ms"] = (clock() - began) * 1e3
    return {k: round(v, 3) for k, v in steps.items()}


def reference(args: argparse.Namespace) -> dict[str, Any]:
    """Host-to-device copies of the archive's byte count through the device API: the bus's figure."""
    import iree.runtime as rt

    from gputop.core.module.device_discovery import resolve_device
    from gputop.core.runners.iree_runner import IreeModuleRun

    results: dict[str, Any] = {}

    def step(name: str) -> None:
        """What is measured next, with what is measured so far: a crash (Vulkan on the H100 exited -11 here) names
        its step and keeps the figures before it (`child` reads the last of these lines)."""
        print(json.dumps({"partial": results, "next": name}), flush=True)

    step("open the device")
    info = resolve_device(args.device)
    runner = IreeModuleRun([info])
    runner.open_devices()
    device = runner.devices[0]
    total = args.archive.stat().st_size
    piece = int(min(total, 2**30))
    count = max(1, total // piece)
    usage = int(rt.BufferUsage.DEFAULT) | int(rt.BufferUsage.TRANSFER)
    results.update(bytes=piece * count, piece_bytes=piece)
    step(f"allocate {min(count, 4)} device-local buffers of {piece} bytes")
    targets = [
        device.allocator.allocate_buffer(
            memory_type=int(rt.MemoryType.DEVICE_LOCAL), allowed_usage=usage, allocation_size=piece
        )
        for _ in range(min(count, 4))
    ]
    step(f"allocate a pinned host staging buffer of {piece} bytes")
    staging = device.allocator.allocate_buffer(
        memory_type=int(rt.MemoryType.HOST_LOCAL | rt.MemoryType.DEVICE_VISIBLE),
        allowed_usage=int(rt.BufferUsage.TRANSFER_SOURCE | rt.BufferUsage.MAPPING_SCOPED),
        allocation_size=piece,
    )
    step("map and fill the staging buffer")
    staging.map().asarray([piece], np.dtype(np.uint8))[:] = 1
    step("pinned copies (queue_execute of a copy command buffer)")
    semaphore = device.create_semaphore(0)
    for round_ in range(2):  # the first round warms the path up; the second is timed
        started = time.perf_counter()
        for k in range(count):
            command_buffer = rt.HalCommandBuffer(device, 0, True)
            command_buffer.copy(staging, targets[k % len(targets)], 0, 0, piece, end=True)
            value = round_ * count + k + 1
            device.queue_execute(command_buffer, [(semaphore, value - 1)], [(semaphore, value)])
        semaphore.wait((round_ + 1) * count)
        pinned_s = time.perf_counter() - started
    results["iree_pinned_gbps"] = round(piece * count / pinned_s / 1e9, 3)
    step("pageable copies (allocate_buffer_copy)")
    pageable = np.ones(piece, dtype=np.uint8)
    started = time.perf_counter()
    for _ in range(count):
        device.allocator.allocate_buffer_copy(
            memory_type=int(rt.MemoryType.DEVICE_LOCAL), allowed_usage=usage, device=device, buffer=pageable
        )
    results["iree_pageable_gbps"] = round(piece * count / (time.perf_counter() - started) / 1e9, 3)
    step("PyTorch's copies")
    try:
        import torch

        if torch.cuda.is_available():
            for kind, host in (
                ("pinned", torch.ones(piece, dtype=torch.uint8).pin_memory()),
                ("pageable", torch.ones(piece, dtype=torch.uint8)),
            ):
                gpu = torch.empty(piece, dtype=torch.uint8, device="cuda")
                gpu.copy_(host, non_blocking=True)
                torch.cuda.synchronize()
                started = time.perf_counter()
                for _ in range(count):
                    gpu.copy_(host, non_blocking=True)
                torch.cuda.synchronize()
                results[f"torch_{kind}_gbps"] = round(piece * count / (time.perf_counter() - started) / 1e9, 3)
    except ImportError:
        results["torch"] = "not installed"
    return results


# -- the driver -------------------------------------------------------------------------------------------------


def variant(path: str, args: argparse.Namespace) -> tuple[str, dict[str, int]]:
    """A path with its own loader settings (`streamed/s3/w12/c2`: 3 slots per reader, 12 readers, 2 MiB chunks),
    so that settings alternate within one run; what a path does not set comes from the command line."""
    mode, *overrides = path.split("/")
    settings = {"workers": args.workers, "chunk-mib": args.chunk_mib, "slots": args.slots, "prewarm": args.prewarm}
    names = {"w": "workers", "c": "chunk-mib", "s": "slots", "p": "prewarm"}
    for override in overrides:
        if override[:1] not in names or not override[1:].isdigit():
            raise SystemExit(
                f"params: {path!r}: a path's settings are w<readers>, c<chunk MiB>, s<slots> or p<1-3> (prewarm)"
            )
        settings[names[override[0]]] = int(override[1:])
    return mode, settings


def child(args: argparse.Namespace, mode: str, *extra: str, timeout: float = 300) -> dict[str, Any]:
    command = [
        sys.executable, __file__, "--one", mode, "--device", args.device, "--archive", str(args.archive),
        "--vmfb", str(args.vmfb), *extra,
    ]  # fmt: skip
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"path": mode, "error": f"timed out after {timeout:.0f} s"}
    partial: dict[str, Any] | None = None
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            data = json.loads(line)
            if "partial" not in data:
                return dict(data)
            partial = data
            break
    tail = [line for line in proc.stderr.splitlines() if line.strip() and "leak" not in line]
    error = (tail[-1] if tail else f"exit {proc.returncode}")[:300]
    if partial is not None:  # the figures measured before the crash, and the step it crashed in
        return {
            "path": mode,
            **partial["partial"],
            "error": f"{error} (exit {proc.returncode}) during: {partial['next']}",
        }
    return {"path": mode, "error": error}


def build(args: argparse.Namespace, folder: Path) -> None:
    from gputop.core.params.archive import head_module_source, model_layout, write_irpa

    specs = model_layout(args.tensors, int(args.gib * 2**30))
    if args.archive is None or not args.archive.exists():
        args.archive = args.archive or folder / f"model_{args.tensors}x_{args.gib:g}g.irpa"
        started = time.perf_counter()
        write_irpa(args.archive, specs)
        fd = os.open(args.archive, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        size, took = args.archive.stat().st_size, time.perf_counter() - started
        print(f"built {args.archive} ({size / 2**30:.2f} GiB, {len(specs)} tensors) in {took:.1f} s")
    if args.vmfb is None:
        from gputop.core.module.compile import compile_module
        from gputop.core.module.device_discovery import resolve_device

        flags = resolve_device(args.device).compile_target or ()
        source = head_module_source(specs).encode()
        args.vmfb = compile_module(Path("params_head.mlir"), flags, source_bytes=source).vmfb_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="local-task")
    parser.add_argument("--tensors", type=int, default=1)
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--archive", type=Path, help="an archive written by this script (or core.param_archive)")
    parser.add_argument("--vmfb", type=Path, help="its head module compiled for this device (default: compile here)")
    parser.add_argument(
        "--paths",
        default="streamed,mmap,file_async,file_async_c8,fd,host_copy",
        help="comma separated; a streamed path may carry its own settings: streamed/s3/w12/c2",
    )
    parser.add_argument("--cache", default="warm", help="warm, cold or warm,cold")
    parser.add_argument("--reference", action="store_true", help="also the host-to-device copy figures")
    parser.add_argument("--sweep", action="store_true", help="also streamed with other workers/chunk sizes (warm)")
    parser.add_argument("--repeat", type=int, default=1, help="warm: the paths this many times, alternating")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--chunk-mib", type=int, default=4, help="gputop's default: 4")
    parser.add_argument("--slots", type=int, default=2, help="pinned staging slots per reader (gputop's default: 2)")
    parser.add_argument("--prewarm", type=int, default=0, help="first uses, untimed: 1 alloca, 2 copies, 3 both")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(reference(args) if args.one == "reference" else one_path(args)), flush=True)
        os._exit(0)  # IREE's bindings may crash in their own teardown after a clean run

    from gputop.core.module.device_discovery import resolve_device
    from gputop.core.params.archive import read_archive
    from gputop.core.runners.iree_runner import parameter_mode_for
    from gputop.tui.text import parameter_stages_line

    folder = tempfile.TemporaryDirectory(prefix="gputop-params-")
    owned = args.archive is None
    build(args, Path(folder.name))
    device = resolve_device(args.device)
    chosen = parameter_mode_for(device)
    rows: list[dict[str, Any]] = []
    size = args.archive.stat().st_size
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"),
        "device": args.device,
        "device_name": device.name,
        "bytes": size,
        "tensors": len(read_archive(args.archive)),
        "rows": rows,
        "reference": None,
        "direct_read": None,
        "gputop_picks": chosen,
        "fastest_warm": None,
    }

    def save(row: dict[str, Any] | None = None) -> None:
        """Each row as it comes (a killed run keeps what it measured)."""
        if row is not None:
            rows.append(row)
            print(json.dumps(row), flush=True)
        timed = [r for r in rows if "gbps" in r and r.get("cache") == "warm" and r["check"] == "passed"]
        result["fastest_warm"] = max(timed, key=lambda r: r["gbps"])["path"] if timed else None
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(result, indent=2))

    paths = [p for p in args.paths.split(",") if p]
    available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    for cache in args.cache.split(","):
        if cache == "cold":
            resident = drop_cache(args.archive)
            result["direct_read"] = {**direct_read(args.archive), "resident_before": round(resident, 4)}
            print(json.dumps({"direct_read": result["direct_read"]}), flush=True)
        for mode in paths * (max(1, args.repeat) if cache == "warm" else 1):
            if mode == "host_copy" and size > available / 3:
                save({"path": mode, "cache": cache, "error": "skipped: needs the archive's size in host memory twice"})
                continue
            resident = drop_cache(args.archive) if cache == "cold" else warm_cache(args.archive)
            mode, settings = variant(mode, args)
            extra = [f"--{name}={value}" for name, value in settings.items()]
            row = child(args, mode, *extra, timeout=args.timeout)
            row.update(cache=cache, resident_before=round(resident, 4))
            reference_gbps = (result["direct_read"] or {}).get("gbps")
            if cache == "cold" and reference_gbps and "gbps" in row:
                row["vs_direct_read"] = round(row["gbps"] / reference_gbps, 3)
            save(row)
    if args.sweep:
        for workers, chunk in SWEEP:
            warm_cache(args.archive)
            row = child(args, "streamed", "--workers", str(workers), "--chunk-mib", str(chunk), timeout=args.timeout)
            row.update(cache="warm", sweep=True)
            save(row)
    if args.reference:
        result["reference"] = child(args, "reference", timeout=args.timeout)
        print(json.dumps({"reference": result["reference"]}), flush=True)
        save()
    print(f"\n{args.device}: {size / 2**30:.2f} GiB in {result['tensors']} tensor(s); index + context + first call")
    for row in rows:
        what = row.get("error") or f"{row['seconds'] * 1e3:9.1f} ms  {row['gbps']:7.2f} GB/s  {row['check']}"
        mark = "  <- gputop" if row["path"].split()[0] == chosen and not row.get("sweep") else ""
        versus = f"  {row['vs_direct_read']:.2f}x the direct read" if "vs_direct_read" in row else ""
        pinned = (result["reference"] or {}).get("iree_pinned_gbps")
        if row.get("cache") == "warm" and pinned and "gbps" in row:
            row["vs_pinned"] = round(row["gbps"] / pinned, 3)
            versus = f"  {row['vs_pinned']:.0%} of pinned"
            if row.get("loader_gbps"):
                row["loader_vs_pinned"] = round(row["loader_gbps"] / pinned, 3)
                versus += f" (the loader: {row['loader_gbps']:.2f} GB/s, {row['loader_vs_pinned']:.0%})"
        print(f"  {row['cache']:4s} {row['path']:22s} {what}{versus}{mark}")
        if row.get("stages"):
            print(f"       stages: {parameter_stages_line(row['stages'])}")
    direct = result["direct_read"]
    if direct:
        figure = direct.get("error") or f"{direct['seconds'] * 1e3:9.1f} ms  {direct['gbps']:7.2f} GB/s"
        print(f"  cold O_DIRECT sequential read (the disk)  {figure}")
    ref = result["reference"]
    if ref:
        print("  reference copies host->device: " + ", ".join(f"{k} {v}" for k, v in ref.items() if k.endswith("gbps")))
    save()  # with the ratios to the pinned reference
    if owned:
        args.archive.unlink(missing_ok=True)
    folder.cleanup()


if __name__ == "__main__":
    main()
