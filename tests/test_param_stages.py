"""The streamed loader's stage times and its read paths, on local-task with real files on the real disk.

Issue 32: a load must say where its time went (reads, slot waits, copies,
the loading thread's own work) in numbers that add up, and a cold archive
must be read with O_DIRECT, around the page cache, and still arrive byte for
byte. Cold means evicted (`posix_fadvise(DONTNEED)`) and checked out with
`mincore`; that needs a disk-backed filesystem (tmpfs pages are the cache),
so those tests skip with the reason where the test folder is not on one.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import device_bytes, run_gputop
from gputop.core.module.device_discovery import resolve_device
from gputop.core.params.archive import (
    TensorSpec,
    evict_from_page_cache,
    expected_head,
    head_module_source,
    read_archive,
    write_irpa,
)
from gputop.core.params.page_cache import resident_share
from gputop.core.params.reads import ALIGNMENT, SLOT_PADDING, open_archive_file
from gputop.core.params.streamed_load import ParameterStream, StreamOptions
from gputop.core.records.parameters import ParameterStages
from gputop.core.runners.iree_runner import IreeModuleRun

MiB = 2**20
# Odd element counts: every tensor after the first starts off a 4 KiB block and ends off one, so direct
# reads need their aligned heads and tails.
SPECS = [TensorSpec(f"blk.{i}.weight", 3 * 2**18 + 1021 * (i + 1)) for i in range(12)]


def disk_folder(tmp_path: Path) -> Path:
    """`tmp_path` when it is on a disk-backed filesystem that takes O_DIRECT; else the test is skipped."""
    kind = subprocess.run(["stat", "-f", "-c", "%T", str(tmp_path)], capture_output=True, text=True).stdout.strip()
    if kind in ("tmpfs", "ramfs", "overlayfs"):
        pytest.skip(f"{tmp_path} is on {kind}: its pages cannot leave the page cache, so nothing is cold")
    probe = tmp_path / "probe"
    probe.write_bytes(bytes(ALIGNMENT))
    try:
        os.close(os.open(probe, os.O_RDONLY | os.O_DIRECT))
    except OSError as exc:
        pytest.skip(f"the filesystem of {tmp_path} ({kind}) refuses O_DIRECT: {exc.strerror}")
    finally:
        probe.unlink()
    return tmp_path


def write_synced(path: Path, specs: list[TensorSpec]) -> int:
    """The archive on disk (synced, so eviction can drop its pages); the bytes of its tensors."""
    write_irpa(path, specs)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return sum(s.nbytes for s in specs)


def make_cold(path: Path) -> None:
    evict_from_page_cache(path)
    share = resident_share(path, windows=0)  # every page asked about
    if share is None or share > 0.01:
        pytest.skip(f"the kernel kept {path.name} in the page cache after POSIX_FADV_DONTNEED ({share})")


def make_warm(path: Path) -> None:
    path.read_bytes()
    assert resident_share(path, windows=0) == 1.0


def load_whole(path: Path, options: StreamOptions) -> tuple[ParameterStages, list[bytes], ParameterStream]:
    """Every parameter of the archive through the streamed loader: its stage times and the device's bytes."""
    import iree.runtime as rt

    runner = IreeModuleRun([resolve_device("local-task")])
    runner.open_devices()
    entries = read_archive(path)
    stream = ParameterStream(runner.devices[0], entries, options=options)
    usage = int(rt.BufferUsage.DEFAULT) | int(rt.BufferUsage.TRANSFER)
    buffers = stream.load_entries(entries, int(rt.MemoryType.DEVICE_LOCAL), usage)
    contents = [device_bytes(runner, b) for b in buffers]
    stages = stream.stage_times()
    assert stages is not None
    del buffers
    runner.close()
    return stages, contents, stream


def file_bytes(path: Path) -> list[bytes]:
    data = np.fromfile(path, dtype=np.uint8)
    return [data[e.offset : e.offset + e.length].tobytes() for e in read_archive(path) if e.offset is not None]


def assert_stages_add_up(stages: ParameterStages, *, file_bytes: int, readers: int, seconds: float) -> None:
    times = [getattr(stages, name) for name in ParameterStages.__dataclass_fields__ if name.endswith("_s")]
    assert all(t is None or t >= 0 for t in times), stages
    assert stages.bytes_read == file_bytes
    assert stages.readers == readers
    assert 0 < stages.wall_s <= seconds
    assert stages.reader_s == pytest.approx(readers * stages.wall_s)
    # Worker-seconds: no reader can spend more than the wall in its stages.
    assert stages.read_s + stages.slot_wait_s <= stages.reader_s * 1.01 + 1e-3
    assert stages.read_s > 0
    # The loading thread's three parts are its whole wall.
    assert stages.read_wait_s + stages.dma_wait_s + stages.submit_s == pytest.approx(stages.wall_s)
    shares = (stages.read_share, stages.slot_wait_share, stages.read_wait_share, stages.dma_wait_share)
    assert all(0 <= s <= 1 for s in (*shares, stages.submit_share))
    assert stages.read_wait_share + stages.dma_wait_share + stages.submit_share == pytest.approx(1.0)
    assert stages.limited_by in ("reads", "copies", "submissions")
    assert stages.wall_s + stages.allocate_s + stages.fill_s <= seconds * 1.01


def test_stage_times_add_up(tmp_path: Path) -> None:
    import iree.runtime as rt

    index = rt.ParameterIndex()
    index.add_splat("zeros", np.float32(0.0), 2 * MiB)
    index.add_buffer("data", np.arange(3 * MiB, dtype=np.float32).tobytes())
    index.add_buffer("more", np.arange(MiB + 3, dtype=np.float32).tobytes())
    path = tmp_path / "mixed.irpa"
    index.create_archive_file(str(path))
    stages, contents, stream = load_whole(path, StreamOptions(workers=3, chunk_bytes=MiB, read_path="page-cache"))
    data_bytes = (4 * MiB + 3) * 4
    assert_stages_add_up(stages, file_bytes=data_bytes, readers=3, seconds=stream.seconds)
    assert stages.chunks == 12 + 5  # 12 MiB in 1 MiB chunks, and 4 MiB + 12 bytes in five
    assert stages.chunk_bytes == MiB and stages.fill_s > 0
    assert stages.read_path == "page-cache" and stages.read_path_note is None
    assert contents[1:] == file_bytes(path)
    assert contents[0] == bytes(2 * MiB)  # the splat, filled on the device


def test_a_cold_archive_is_read_with_o_direct_byte_for_byte(tmp_path: Path) -> None:
    folder = disk_folder(tmp_path)
    path = folder / "cold.irpa"
    total = write_synced(path, SPECS)
    assert any((e.offset or 0) % ALIGNMENT for e in read_archive(path)[1:])  # heads and tails to align
    make_cold(path)
    stages, contents, stream = load_whole(path, StreamOptions(workers=3, chunk_bytes=MiB))
    assert stages.read_path == "o_direct" and stages.read_path_note is None
    assert_stages_add_up(stages, file_bytes=total, readers=3, seconds=stream.seconds)
    # Around the cache: a buffered read leaves all of the file cached, this leaves most of it out. Not all:
    # IREE maps the archive to read its index, and that fault starts the kernel's readahead (read_ahead_kb,
    # 8 MiB on the CI machine: 22% of this file) before the first direct read.
    share = resident_share(path, windows=0)
    assert share is not None and share < 0.5, share
    assert contents == file_bytes(path)


def test_a_module_computes_with_parameters_read_cold(tmp_path: Path) -> None:
    """A compiled module's initializer loads through O_DIRECT; its output equals NumPy's from the file."""
    from gputop.core.module.compile import compile_module

    folder = disk_folder(tmp_path)
    path = folder / "model.irpa"
    write_synced(path, SPECS)
    info = resolve_device("local-task")
    source = head_module_source(SPECS).encode()
    vmfb = compile_module(folder / "head.mlir", info.compile_target or (), source_bytes=source).vmfb_path
    make_cold(path)
    runner = IreeModuleRun([info])
    runner.open_devices()
    runner.load_module(vmfb)
    runner.load_parameters([path], mode="streamed", options=StreamOptions(workers=2, chunk_bytes=MiB))
    runner.create_context("head")
    [out] = runner.read_back(runner.call())
    assert runner.parameter_stream is not None
    stages = runner.parameter_stream.stage_times()
    runner.close()
    assert stages is not None and stages.read_path == "o_direct"
    # What the module returns (each parameter's first and last four values), from the file's own bytes.
    values = [np.frombuffer(b, dtype=np.float32) for b in file_bytes(path)]
    assert np.array_equal(out, np.stack([np.concatenate([v[:4], v[-4:]]) for v in values]))
    assert np.array_equal(out, expected_head(len(SPECS)))


def mapped_bytes_of(path: Path) -> int:
    """How much of the file this process has mapped now, from /proc/self/maps."""
    inode = path.stat().st_ino
    total = 0
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split()
        if len(fields) >= 6 and int(fields[4]) == inode and fields[5] == str(path):
            start, end = (int(x, 16) for x in fields[0].split("-"))
            total += end - start
    return total


def test_a_cached_archive_is_copied_out_of_a_mapping_that_is_gone_after_the_load(tmp_path: Path) -> None:
    path = tmp_path / "warm.irpa"
    total = write_synced(path, SPECS)
    make_warm(path)
    stages, contents, stream = load_whole(path, StreamOptions(workers=2, chunk_bytes=MiB))
    assert stages.read_path == "mapped" and stages.read_path_note is None
    assert_stages_add_up(stages, file_bytes=total, readers=2, seconds=stream.seconds)
    assert contents == file_bytes(path)
    assert mapped_bytes_of(path) == 0  # nothing of it left in the process (its RSS does not keep the archive)
    # The A/B the benchmark runs: preadv through the cache, the same bytes.
    stages, contents, _ = load_whole(path, StreamOptions(workers=2, chunk_bytes=MiB, read_path="page-cache"))
    assert stages.read_path == "page-cache" and contents == file_bytes(path)


def test_a_partly_cached_archive_is_read_with_preadv(tmp_path: Path) -> None:
    """Between half and 90% cached, `auto` reads through the cache with preadv (its readahead fetches the
    missing pages), not out of a mapping (one fault per missing page) nor with O_DIRECT (all from the disk)."""
    folder = disk_folder(tmp_path)
    path = folder / "partly.irpa"
    write_synced(path, SPECS)
    make_warm(path)
    size = path.stat().st_size
    fd = os.open(path, os.O_RDONLY)
    try:  # the last 30% out of the cache again
        os.posix_fadvise(fd, size * 7 // 10 // ALIGNMENT * ALIGNMENT, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    share = resident_share(path)
    if share is None or not 0.5 <= share < 0.9:
        pytest.skip(f"the kernel's readahead left {share} of the file cached, not 50-90%")
    file = open_archive_file(str(path))
    try:
        assert file.mapping is None and not file.direct
    finally:
        file.close()


def test_mapped_windows_are_unmapped_as_their_last_bytes_are_copied(tmp_path: Path) -> None:
    """The readers unmap each window of the mapping as soon as every byte expected of it was copied (a chunk
    that spans two windows counts in both); `close` unmaps the rest; a chunk past the end is DATA_LOSS, where
    the mapping itself would raise SIGBUS."""
    from gputop.core.params.mapped_file import map_file

    path = tmp_path / "windows.bin"
    page = os.sysconf("SC_PAGE_SIZE")
    data = np.random.default_rng(3).integers(0, 255, 10 * page + 100, dtype=np.uint8)
    path.write_bytes(data.tobytes())
    fd = os.open(path, os.O_RDONLY)
    mapping = map_file(fd, window_bytes=4 * page)  # windows [0, 4), [4, 8), [8, 10 pages + 100 bytes)
    os.close(fd)  # a mapping outlives its descriptor
    assert not isinstance(mapping, str) and mapping.mapped_windows() == 3
    size = path.stat().st_size
    assert mapped_bytes_of(path) == 11 * page
    chunks = [(0, 3 * page), (3 * page, 2 * page), (6 * page, page)]  # the second spans windows 0 and 1
    for offset, length in chunks:
        mapping.expect(offset, length)
    out = np.zeros(size, dtype=np.uint8)
    mapping.copy_into(int(out.ctypes.data), 0, 3 * page)
    assert mapping.mapped_windows() == 3  # window 0 still owes the spanning chunk its last page
    mapping.copy_into(int(out.ctypes.data) + 3 * page, 3 * page, 2 * page)
    assert mapping.mapped_windows() == 2 and mapped_bytes_of(path) == 7 * page  # window 0 gone
    mapping.copy_into(int(out.ctypes.data) + 6 * page, 6 * page, page)
    assert mapping.mapped_windows() == 1  # window 1 gone; window 2 was never expected of
    copied = np.r_[0 : 5 * page, 6 * page : 7 * page]
    assert np.array_equal(out[copied], data[copied]) and not out[5 * page : 6 * page].any()
    mapping.expect(size - 10, 20)  # an index that says more than the file holds: said when copied, not here
    with pytest.raises(RuntimeError, match="DATA_LOSS; the parameter file ended at byte"):
        mapping.copy_into(int(out.ctypes.data), size - 10, 20)
    mapping.close()
    assert mapping.mapped_windows() == 0 and mapped_bytes_of(path) == 0
    mapping.close()  # twice is harmless
    assert isinstance(map_file(os.open(tmp_path / "empty", os.O_RDONLY | os.O_CREAT)), str)  # nothing to map


def test_buffers_are_made_beside_the_reads_and_the_staging_is_kept_until_released(tmp_path: Path) -> None:
    """Allocation overlapped with the reads (the default) and up front (the A/B) load the same bytes; the
    overlapped part is counted inside the loading thread's own work; the pinned staging stays with the
    stream for its next load and is freed by `release_staging`, as the runner does when it closes."""
    import iree.runtime as rt

    path = tmp_path / "overlap.irpa"
    total = write_synced(path, SPECS)
    make_warm(path)
    expected = file_bytes(path)
    runner = IreeModuleRun([resolve_device("local-task")])
    runner.open_devices()
    entries = read_archive(path)
    usage = int(rt.BufferUsage.DEFAULT) | int(rt.BufferUsage.TRANSFER)
    for overlap in (True, False):
        options = StreamOptions(workers=3, chunk_bytes=MiB, read_path="page-cache", overlap_allocation=overlap)
        stream = ParameterStream(runner.devices[0], entries, options=options)
        buffers = stream.load_entries(entries, int(rt.MemoryType.DEVICE_LOCAL), usage)
        assert [device_bytes(runner, b) for b in buffers] == expected
        stages = stream.stage_times()
        assert stages is not None
        assert_stages_add_up(stages, file_bytes=total, readers=3, seconds=stream.seconds)
        assert 0 <= stages.allocate_overlapped_s <= stages.submit_s
        slots = stages.staging_bytes // MiB
        if overlap:  # one slot per reader before the first read; the second ones when the loader was idle
            assert 3 <= slots <= 6, stages
        else:
            assert slots == 6 and stages.allocate_overlapped_s == 0
        kept = [id(slot.buffer) for slot in stream._pool.slots]
        more = stream.load_entries(entries[:2], int(rt.MemoryType.DEVICE_LOCAL), usage)
        assert [device_bytes(runner, b) for b in more] == expected[:2]
        assert [id(slot.buffer) for slot in stream._pool.slots][: len(kept)] == kept  # the same slots again
        stream.release_staging()
        assert not stream._pool.slots
        released = stream.stage_times()
        assert released is not None and released.staging_bytes == 0
        del buffers, more
    runner.close()


@pytest.mark.parametrize("cold", [False, True], ids=["mapped", "o_direct"])
def test_imported_staging_arrives_byte_for_byte_and_is_imported_at_its_first_copy(tmp_path: Path, cold: bool) -> None:
    """Staging in the process's own memory (CUDA's default): each slot is a page-aligned mapping with no device
    buffer until the loading thread imports it before the slot's first copy, and is then kept with the stream.
    Cold, the direct reads land in those mappings (aligned without padding: they start on a page)."""
    folder = disk_folder(tmp_path) if cold else tmp_path
    path = folder / "imported.irpa"
    total = write_synced(path, SPECS)
    make_cold(path) if cold else make_warm(path)
    options = StreamOptions(workers=3, chunk_bytes=MiB, imported_staging=True)
    stages, contents, stream = load_whole(path, options)
    assert stages.read_path == ("o_direct" if cold else "mapped")
    assert_stages_add_up(stages, file_bytes=total, readers=3, seconds=stream.seconds)
    assert contents == file_bytes(path)
    slots = stream._pool.slots
    assert 3 <= len(slots) <= 6 and stages.staging_bytes == sum(len(s.view) for s in slots)
    for slot in slots:
        assert slot.view.ctypes.data % ALIGNMENT == 0  # a mapping: page aligned
        # Imported by the loading thread before its first copy, so every slot used has a buffer now; the
        # buffer is that same memory, not a copy of it.
        assert slot.buffer is not None and slot.buffer.byte_length() == len(slot.view)
    stream.release_staging()


def test_a_slot_is_imported_when_first_needed_not_when_made() -> None:
    """Making an imported slot touches no page and asks nothing of the device; `ready` imports it once."""
    import iree.runtime as rt

    from gputop.core.params.staging import StagingPool

    device = rt.get_device("local-task")
    pool = StagingPool(device, cached=True, imported=True)
    [slot] = pool.take(2 * MiB, 1)
    assert slot.buffer is None and len(slot.view) == 2 * MiB
    slot.view[:] = 7
    buffer = pool.ready(slot)
    assert pool.ready(slot) is buffer  # imported once
    assert buffer.byte_length() == 2 * MiB
    mapped = np.asarray(buffer.map().asarray([2 * MiB], np.dtype(np.uint8)))
    assert mapped.ctypes.data == slot.view.ctypes.data  # the slot's own memory, page-locked in place
    assert int(mapped[12345]) == 7


def test_the_runner_imports_staging_on_cuda_only() -> None:
    """The default options follow the device: imported staging on CUDA (where it was measured), the driver's
    pinned allocations everywhere else."""
    import dataclasses

    from gputop.core.runners import iree_runner

    runner = IreeModuleRun([resolve_device("local-task")])
    runner.open_devices()
    runner.parameter_entries = []
    runner.parameter_files = [Path("model.irpa")]
    runner.load_parameters([Path("model.irpa")], mode="streamed")
    assert runner.parameter_stream is not None and not runner.parameter_stream._options.imported_staging
    info = runner.device_infos[0]
    runner.device_infos = [dataclasses.replace(info, backend="cuda")]  # the choice is tested, not the device
    runner.load_parameters([Path("model.irpa")], mode="streamed")
    assert runner.parameter_stream._options.imported_staging
    runner.close()
    assert iree_runner.StreamOptions().imported_staging is False  # the loader's own default stays the driver's


def test_direct_reads_of_any_range_land_where_they_say(tmp_path: Path) -> None:
    """Unaligned starts, lengths and slots, up to the file's last byte: the bytes start where read_chunk says."""
    folder = disk_folder(tmp_path)
    path = folder / "ranges.bin"
    data = np.random.default_rng(7).integers(0, 256, 3 * ALIGNMENT * 5 + 123, dtype=np.uint8)
    data.tofile(path)
    file = open_archive_file(str(path), "o_direct")
    try:
        assert file.direct and file.note is None
        backing = np.zeros(4 * ALIGNMENT + SLOT_PADDING + 1, dtype=np.uint8)
        slot = backing[1:]  # an address off every block boundary
        for offset, length in [(0, 100), (5, 4 * ALIGNMENT), (ALIGNMENT - 1, 2), (data.size - 77, 77), (8192, 4096)]:
            start, how = file.read_chunk(slot, offset, length)
            assert how == "o_direct"
            assert slot[start : start + length].tobytes() == data[offset : offset + length].tobytes()
    finally:
        file.close()


def test_a_filesystem_that_refuses_o_direct_is_read_through_the_cache() -> None:
    """procfs refuses O_DIRECT (EINVAL on open): the file is read the ordinary way, and the reason kept."""
    file = open_archive_file("/proc/version", "o_direct")
    try:
        assert not file.direct
        assert file.note is not None and "refuses O_DIRECT (Invalid argument)" in file.note
        slot = np.zeros(64, dtype=np.uint8)
        start, how = file.read_chunk(slot, 0, 5)
        assert (start, how) == (0, "page-cache") and slot[:5].tobytes() == b"Linux"
    finally:
        file.close()


def test_gputop_run_reports_and_prints_the_stages(tmp_path: Path) -> None:
    folder = disk_folder(tmp_path)
    path, source = folder / "model.irpa", folder / "head.mlir"
    total = write_synced(path, SPECS)
    source.write_text(head_module_source(SPECS))
    make_cold(path)
    report_path = tmp_path / "report.json"
    proc = run_gputop(
        "run", str(source), "--device", "local-task", "-n", "1", "--params", str(path), "--params-mode", "streamed",
        "--json", str(report_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    params = json.loads(report_path.read_text())["parameters"]
    assert {"files", "mode", "bytes", "seconds", "gbps", "stages"} <= set(params)
    assert params["mode"] == "streamed" and params["bytes"] == total
    stages = params["stages"]
    assert stages["read_path"] == "o_direct" and stages["bytes_read"] == total
    assert stages["context_after_s"] is not None and 0 <= stages["context_after_s"] <= params["seconds"]
    assert stages["wall_s"] <= params["seconds"]
    line = next(line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("stages    "))
    assert line.startswith("stages    o_direct, 8 readers: read ") and f"limited by {stages['limited_by']}" in line
