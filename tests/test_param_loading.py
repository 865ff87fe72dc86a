"""Parameter archives and gputop's streamed loader, as building blocks, on local-task and lavapipe.

The archive writer is checked against IREE's own (byte for byte) and its
reader; the streamed loader is checked byte for byte against the file on the
device, with chunks small enough that every large tensor crosses several;
Vulkan limits read through the loader are checked against `vulkaninfo`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import device_bytes
from gputop.core.module.device_discovery import resolve_device
from gputop.core.params.archive import (
    TensorSpec,
    expected_head,
    head_module_source,
    irpa_layout,
    markers,
    model_layout,
    read_archive,
    write_irpa,
)
from gputop.core.params.streamed_load import ParameterStream, StreamOptions
from gputop.core.runners.iree_runner import IreeModuleRun

MiB = 2**20


def test_the_irpa_layout_is_what_iree_writes(tmp_path: Path) -> None:
    import iree.runtime as rt

    keys, lengths = ["alpha", "be", "a.much.longer.name"], [40, 36, 1000]
    index = rt.ParameterIndex()
    for key, length in zip(keys, lengths, strict=True):
        index.add_buffer(key, bytes(length))
    reference = tmp_path / "iree.irpa"
    index.create_archive_file(str(reference))
    head, offsets, total = irpa_layout(keys, lengths)
    ours = bytearray(total)
    ours[: len(head)] = head
    assert bytes(ours) == reference.read_bytes()
    assert [e.offset for e in read_archive(reference)] == offsets


def test_model_layout_is_transformer_like() -> None:
    specs = model_layout(256, 16 * 2**30)
    total = sum(s.nbytes for s in specs)
    assert len(specs) == 256 and len({s.key for s in specs}) == 256
    assert 0.9 * 16 * 2**30 <= total <= 16 * 2**30
    assert specs[0].key == "token_embd.weight" and specs[-1].key == "output.weight"
    layer = [s for s in specs if s.key.startswith("blk.0.")]
    assert [s.key.split(".")[2] for s in layer] == [
        "attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down",
    ]  # fmt: skip
    width = layer[0].elements
    assert layer[1].elements == width * width and width % 64 == 0
    assert model_layout(1, 8 * 2**30) == [TensorSpec("weight", 2 * 2**30)]
    assert len(model_layout(7, 7 * MiB)) == 7


def test_write_irpa_builds_what_iree_reads(tmp_path: Path) -> None:
    import iree.runtime as rt

    specs = model_layout(30, 6 * MiB)
    path = tmp_path / "model.irpa"
    written: list[int] = []
    entries = write_irpa(path, specs, on_progress=written.append)
    assert sum(written) == sum(s.nbytes for s in specs)
    assert [(e.key, e.length, e.offset) for e in read_archive(path)] == [(e.key, e.length, e.offset) for e in entries]
    index = rt.ParameterIndex()
    index.load(str(path))
    items = index.items()
    assert len(items) == len(specs)
    for i, (key, entry) in enumerate(items):
        values = rt.parameter_index_entry_as_numpy_flat_ndarray(entry).view(np.float32)
        first, last = markers(i)
        assert key == specs[i].key and values.size == specs[i].elements
        assert np.array_equal(values[:4], first) and np.array_equal(values[-4:], last)
    # Tensors differ from each other (each starts at its own place in the random block).
    first_two = [rt.parameter_index_entry_as_numpy_flat_ndarray(e)[64:128].tobytes() for _, e in items[1:3]]
    assert first_two[0] != first_two[1]
    assert expected_head(3)[2].tolist() == [2.0, 2.25, 2.5, 2.75, -2.0, -2.25, -2.5, -2.75]


def test_read_archive_sees_splats_and_safetensors(tmp_path: Path) -> None:
    import json
    import struct

    import iree.runtime as rt

    index = rt.ParameterIndex()
    index.add_splat("zeros", np.float32(0.5), 3 * 2**30)
    index.add_buffer("data", np.arange(4, dtype=np.float32).tobytes())
    index.create_archive_file(str(tmp_path / "s.irpa"))
    splat, data = read_archive(tmp_path / "s.irpa")
    assert splat.splat == np.float32(0.5).tobytes() and splat.length == 3 * 2**30 and splat.offset is None
    assert data.offset is not None and not data.external
    header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    header += b" " * (-len(header) % 8)
    (tmp_path / "t.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + bytes(8))
    [entry] = read_archive(tmp_path / "t.safetensors")
    assert (entry.key, entry.length, entry.offset) == ("w", 8, 8 + len(header))


@pytest.fixture(scope="module")
def small_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("params") / "small.irpa"
    write_irpa(path, model_layout(20, 24 * MiB))
    return path


@pytest.mark.parametrize("device", ["local-task", "vulkan"])
def test_streamed_load_is_byte_exact(device: str, small_model: Path, request: pytest.FixtureRequest) -> None:
    import iree.runtime as rt

    if device == "vulkan":
        request.getfixturevalue("vulkan_device")
    runner = IreeModuleRun([resolve_device(device)])
    runner.open_devices()
    entries = read_archive(small_model)
    progress: list[tuple[int, int]] = []
    stream = ParameterStream(
        runner.devices[0],
        entries,
        options=StreamOptions(workers=3, chunk_bytes=MiB),
        on_progress=lambda done, requested: progress.append((done, requested)),
    )
    usage = int(rt.BufferUsage.DEFAULT) | int(rt.BufferUsage.TRANSFER)
    buffers = stream.load_entries(entries, int(rt.MemoryType.DEVICE_LOCAL), usage)
    total = sum(e.length for e in entries)
    assert stream.chunk_bytes_for(total) == MiB and max(e.length for e in entries) > 3 * MiB  # tensors span chunks
    with open(small_model, "rb") as handle:
        for entry, buffer in zip(entries, buffers, strict=True):
            assert entry.offset is not None
            handle.seek(entry.offset)
            assert device_bytes(runner, buffer) == handle.read(entry.length), entry.key
    done = [d for d, _ in progress]
    assert done == sorted(done) and done[-1] == total == stream.bytes_loaded and len(done) > len(entries)
    assert stream.seconds > 0
    del buffers, stream
    runner.close()


def test_streamed_load_fills_splats_and_stops_when_asked(tmp_path: Path) -> None:
    import iree.runtime as rt

    index = rt.ParameterIndex()
    index.add_splat("ones", np.float32(1.0), 4 * MiB)
    index.add_buffer("data", np.arange(MiB, dtype=np.float32).tobytes())
    index.create_archive_file(str(tmp_path / "mixed.irpa"))
    entries = read_archive(tmp_path / "mixed.irpa")
    runner = IreeModuleRun([resolve_device("local-task")])
    runner.open_devices()
    usage = int(rt.BufferUsage.DEFAULT) | int(rt.BufferUsage.TRANSFER)
    stream = ParameterStream(runner.devices[0], entries)
    ones, data = stream.load_entries(entries, int(rt.MemoryType.DEVICE_LOCAL), usage)
    assert np.all(np.frombuffer(device_bytes(runner, ones), np.float32) == 1.0)
    assert np.array_equal(np.frombuffer(device_bytes(runner, data), np.float32), np.arange(MiB, dtype=np.float32))
    stopping = ParameterStream(runner.devices[0], entries, should_stop=lambda: True)
    with pytest.raises(RuntimeError, match="CANCELLED"):
        stopping.load_entries(entries[1:], int(rt.MemoryType.DEVICE_LOCAL), usage)
    del ones, data, stream, stopping
    runner.close()


@pytest.mark.parametrize("device", ["local-task", "vulkan"])
def test_streamed_parameters_serve_a_compiled_module(
    device: str, small_model: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The Python io_parameters module stands in for IREE's: the module's initializer loads through it."""
    from gputop.core.module.compile import compile_module

    if device == "vulkan":
        request.getfixturevalue("vulkan_device")
    info = resolve_device(device)
    specs = model_layout(20, 24 * MiB)
    source = head_module_source(specs).encode()
    vmfb = compile_module(tmp_path / "head.mlir", info.compile_target or (), source_bytes=source).vmfb_path
    runner = IreeModuleRun([info])
    runner.open_devices()
    runner.load_module(vmfb)
    runner.load_parameters([small_model], mode="streamed", options=StreamOptions(workers=2, chunk_bytes=MiB))
    runner.create_context("head")
    [out] = runner.read_back(runner.call())
    assert runner.parameter_mode == "streamed" and runner.parameter_fallback is None
    assert np.array_equal(out, expected_head(len(specs)))
    assert runner.parameter_stream is not None
    assert runner.parameter_stream.bytes_loaded == sum(s.nbytes for s in specs)
    runner.close()


def test_vulkan_limits_match_vulkaninfo(vulkan_device: str) -> None:
    """The ctypes query against Vulkan's own tool: maxMemoryAllocationSize and maxStorageBufferRange."""
    from gputop.core.module.vulkan_limits import limits_for_uuid

    if shutil.which("vulkaninfo") is None:
        pytest.skip("vulkaninfo is not installed (apt-get install vulkan-tools)")
    info = resolve_device(vulkan_device)
    limits = limits_for_uuid(info.uuid)
    assert limits is not None, f"no Vulkan device with UUID {info.uuid}"
    text = subprocess.run(["vulkaninfo"], capture_output=True, text=True, timeout=120).stdout
    allocation = re.search(r"maxMemoryAllocationSize\s*=\s*(0x[0-9a-fA-F]+|\d+)", text)
    storage = re.search(r"maxStorageBufferRange\s*=\s*(\d+)", text)
    assert allocation and storage
    assert limits.max_memory_allocation_size == int(allocation.group(1), 0)
    assert limits.max_storage_buffer_range == int(storage.group(1))
