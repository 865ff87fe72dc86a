"""Parameter archives: what one holds, read from its index without loading the data; model-like ones written fast.

Before minutes go into loading a model, gputop wants to know what it will
load: every parameter's name, size and where its bytes are. IREE's own index
reader gives that for `.irpa`, `.safetensors` and `.gguf` alike by mapping the
file and parsing only its header, so reading the index costs no data reads.

Benchmarks and tests also need archives shaped like a real model (hundreds of
tensors of transformer-layer sizes, many GiB) built in seconds. IREE's writer
copies through small buffers (0.36 GB/s here), so `write_irpa` lays out the
same `.irpa` format itself (byte for byte what `ParameterIndex.create_archive_file`
writes, which a test checks) and fills it with parallel `pwrite`s.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gputop.core.errors import RuntimeFailure, UsageError
from gputop.core.files import require_file
from gputop.core.processes import first_line

__all__ = [
    "PARAMETER_SUFFIXES",
    "ParameterEntry",
    "TensorSpec",
    "evict_from_page_cache",
    "expected_head",
    "head_module_source",
    "model_layout",
    "read_archive",
    "write_irpa",
    "write_model",
]

PARAMETER_SUFFIXES = {".irpa": "irpa", ".safetensors": "safetensors", ".gguf": "gguf"}


@dataclass(frozen=True)
class ParameterEntry:
    """One parameter of an archive: its key, its size, and where its bytes are."""

    key: str
    length: int
    path: Path
    offset: int | None  # byte offset in `path`; None for a splat
    splat: bytes | None = None  # the repeated pattern of a splat (synthetic) parameter
    external: bool = False  # its bytes are in another file the index names, not in `path`


def archive_kind(path: Path) -> str:
    kind = PARAMETER_SUFFIXES.get(path.suffix)
    if kind is None:
        raise UsageError(f"{path}: parameter files must be .irpa, .safetensors or .gguf")
    return kind


def read_archive(path: Path) -> tuple[ParameterEntry, ...]:
    """Every parameter of one archive, from its index only (IREE maps the file; no data is read)."""
    import iree.runtime as rt

    kind = archive_kind(path)
    size = require_file(path, "parameter file")
    index = rt.ParameterIndex()
    try:
        index.load(str(path))
    except Exception as exc:
        raise RuntimeFailure(f"{path}: not a valid {kind} parameter file ({first_line(str(exc))})") from None
    entries = []
    for key, entry in index.items():
        if entry.is_splat:
            entries.append(ParameterEntry(key, int(entry.length), path, None, splat=bytes(entry.splat_pattern)))
            continue
        handle, offset = entry.file_storage
        # An irpa entry may name another file; its handle then maps that file, not this one.
        external = not handle.is_host_allocation or len(handle.host_allocation) != size
        entries.append(ParameterEntry(key, int(entry.length), path, int(offset), external=external))
    return tuple(entries)


# -- model-like archives ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorSpec:
    """One f32 tensor of a model-like archive."""

    key: str
    elements: int

    @property
    def nbytes(self) -> int:
        return self.elements * 4


def _layer_shapes(d: int) -> list[tuple[str, int]]:
    ffn = max(256, round(8 * d / 3 / 256) * 256)  # a SwiGLU feed-forward width, as in Llama
    kv = max(128, d // 4)  # grouped-query attention: 4 query heads share a key/value head
    return [
        ("attn_norm", d),
        ("attn_q", d * d),
        ("attn_k", d * kv),
        ("attn_v", d * kv),
        ("attn_output", d * d),
        ("ffn_norm", d),
        ("ffn_gate", d * ffn),
        ("ffn_up", d * ffn),
        ("ffn_down", ffn * d),
    ]


def _transformer(tensors: int, d: int) -> list[TensorSpec]:
    layers = (tensors - 3) // 9
    vocab = 8 * d
    specs = [TensorSpec("token_embd.weight", vocab * d)]
    for layer in range(layers):
        specs += [TensorSpec(f"blk.{layer}.{name}.weight", n) for name, n in _layer_shapes(d)]
    specs += [TensorSpec(f"extra_{i}.bias", d) for i in range(tensors - 3 - 9 * layers)]
    specs += [TensorSpec("output_norm.weight", d), TensorSpec("output.weight", vocab * d)]
    return specs


def model_layout(tensors: int, total_bytes: int) -> list[TensorSpec]:
    """`tensors` f32 tensors of about `total_bytes` in all, sized like a Llama-style transformer.

    One tensor is the single-parameter case. With 12 or more, the model has an
    embedding and an output projection (vocabulary 8 x width), layers of nine
    tensors (two norms, q/k/v/o with grouped keys and values, a SwiGLU
    feed-forward) and small extra vectors to reach the count; the width is the
    largest multiple of 64 (or of 8 when small) that stays within `total_bytes`.
    Fewer than 12 tensors are equal slices.
    """
    if tensors < 1 or total_bytes < 64 * tensors:
        raise UsageError("a model-like archive needs at least one tensor and 64 bytes per tensor")
    if tensors == 1:
        return [TensorSpec("weight", total_bytes // 4)]
    if tensors < 12:
        return [TensorSpec(f"t{i}", total_bytes // 4 // tensors) for i in range(tensors)]

    def size(d: int) -> int:
        return sum(s.nbytes for s in _transformer(tensors, d))

    step = 64 if size(64) <= total_bytes else 8  # small archives (tests): a narrower model
    if size(step) > total_bytes:
        return [TensorSpec(f"t{i}", total_bytes // 4 // tensors) for i in range(tensors)]
    d = step
    while size(d + step) <= total_bytes:
        d += step
    return _transformer(tensors, d)


def markers(index: int) -> tuple[np.ndarray, np.ndarray]:
    """The first and last four values of tensor `index`: exact in f32, so their sums check the load."""
    quarter = np.arange(4, dtype=np.float32) * np.float32(0.25)
    return np.float32(index) + quarter, -(np.float32(index) + quarter)


def expected_head(count: int) -> np.ndarray:
    """What `head_module_source`'s function returns once all `count` parameters arrived: row i is tensor i's markers."""
    return np.stack([np.concatenate(markers(i)) for i in range(count)])


def head_module_source(specs: list[TensorSpec], scope: str = "model") -> str:
    """An MLIR module whose `head()` returns the first and the last four values of every parameter.

    Slices and inserts only, which IREE turns into copies: no dispatch has to
    bind hundreds of buffers (Vulkan allows 32 bindings per dispatch here).
    """
    n = len(specs)
    lines = [
        f'util.global private @p{i} = #flow.parameter.named<"{scope}"::"{s.key}"> : tensor<{s.elements}xf32>'
        for i, s in enumerate(specs)
    ]
    lines.append(f"func.func @head() -> tensor<{n}x8xf32> {{")
    lines.append(f"  %acc = tensor.empty() : tensor<{n}x8xf32>")
    acc = "%acc"
    for i, s in enumerate(specs):
        e = s.elements
        lines.append(f"  %w{i} = util.global.load @p{i} : tensor<{e}xf32>")
        for tag, start, column in (("f", 0, 0), ("l", e - 4, 4)):
            lines.append(
                f"  %{tag}{i} = tensor.extract_slice %w{i}[{start}] [4] [1] : tensor<{e}xf32> to tensor<4xf32>"
            )
            lines.append(
                f"  %{tag}a{i} = tensor.insert_slice %{tag}{i} into {acc}[{i}, {column}] [1, 4] [1, 1]"
                f" : tensor<4xf32> into tensor<{n}x8xf32>"
            )
            acc = f"%{tag}a{i}"
    lines.append(f"  return {acc} : tensor<{n}x8xf32>")
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- the .irpa format (iree/schemas/parameter_archive.h), as IREE's own writer lays it out ---------------

_HEADER = struct.Struct("<IHHQQQQQQQQQQ")  # prefix, entry count, entry/metadata/storage segments
_DATA_ENTRY = struct.Struct("<QIQQQQQQQQ")  # size, type, flags, name, metadata, alignment, storage
_ENTRY_ALIGNMENT = 16
_DATA_ALIGNMENT = 64
_FILE_ALIGNMENT = 4096
_MAGIC = 0x41505249
_TYPE_DATA = 2
_WRITE_BLOCK = 64 * 2**20


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def irpa_layout(keys: list[str], lengths: list[int]) -> tuple[bytes, list[int], int]:
    """The header bytes, each entry's absolute data offset, and the padded file size."""
    entry_start = _align(_HEADER.size, _ENTRY_ALIGNMENT)
    stride = _align(_DATA_ENTRY.size, _ENTRY_ALIGNMENT)
    entry_length = (len(keys) - 1) * stride + _DATA_ENTRY.size if keys else 0
    names = b"".join(k.encode() for k in keys)
    metadata_start = entry_start + entry_length
    storage_start = _align(metadata_start + len(names), _DATA_ALIGNMENT)
    relative, cursor = [], 0
    for length in lengths:
        cursor = _align(cursor, _DATA_ALIGNMENT)
        relative.append(cursor)
        cursor += length
    storage_length = cursor
    head = bytearray(storage_start)
    _HEADER.pack_into(
        head, 0, _MAGIC, 0, 0, _HEADER.size, 0, 0, len(keys),
        entry_start, entry_length, metadata_start, len(names), storage_start, storage_length,
    )  # fmt: skip
    name_offset = 0
    for i, (key, length) in enumerate(zip(keys, lengths, strict=True)):
        size = len(key.encode())
        _DATA_ENTRY.pack_into(
            head, entry_start + i * stride, _DATA_ENTRY.size, _TYPE_DATA, 0,
            name_offset, size, 0, 0, _DATA_ALIGNMENT, relative[i], length,
        )  # fmt: skip
        name_offset += size
    head[metadata_start : metadata_start + len(names)] = names
    total = _align(storage_start + storage_length, _FILE_ALIGNMENT)
    return bytes(head), [storage_start + r for r in relative], total


def write_irpa(
    path: Path,
    specs: list[TensorSpec],
    *,
    seed: int = 0,
    writers: int = 8,
    on_progress: Callable[[int], None] | None = None,
) -> tuple[ParameterEntry, ...]:
    """Write a model-like `.irpa`: random bytes in every tensor, with `markers` at both ends.

    The bytes come from one 64 MiB random block, each tensor starting at a
    different place in it, written by `writers` threads in parallel (pwrite
    releases the GIL); nothing is held in memory beyond the block.
    """
    if any(s.elements < 8 for s in specs):
        raise UsageError("every tensor of a model-like archive needs at least 8 elements")
    head, offsets, total = irpa_layout([s.key for s in specs], [s.nbytes for s in specs])
    block = np.frombuffer(np.random.default_rng(seed).bytes(_WRITE_BLOCK), dtype=np.uint8)
    pieces: list[tuple[int, int, int]] = []  # (file offset, block offset, length)
    for index, (spec, offset) in enumerate(zip(specs, offsets, strict=True)):
        start = (index * 7919 * _DATA_ALIGNMENT) % _WRITE_BLOCK
        done = 0
        while done < spec.nbytes:
            length = min(spec.nbytes - done, _WRITE_BLOCK - start)
            pieces.append((offset + done, start, length))
            done += length
            start = 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.ftruncate(fd, total)
        os.pwrite(fd, head, 0)

        def put(piece: tuple[int, int, int]) -> int:
            offset, start, length = piece
            view = memoryview(block.data)[start : start + length]
            while view:
                written = os.pwrite(fd, view, offset)
                view, offset = view[written:], offset + written
            return length

        with ThreadPoolExecutor(max_workers=max(1, writers)) as pool:
            for length in pool.map(put, pieces):
                if on_progress is not None:
                    on_progress(length)
        for index, (spec, offset) in enumerate(zip(specs, offsets, strict=True)):
            first, last = markers(index)
            os.pwrite(fd, first.tobytes(), offset)
            os.pwrite(fd, last.tobytes(), offset + spec.nbytes - 16)
    finally:
        os.close(fd)
    return tuple(ParameterEntry(s.key, s.nbytes, path, o) for s, o in zip(specs, offsets, strict=True))


def write_model(archive: Path, source: Path, tensors: int, total_bytes: int) -> list[TensorSpec]:
    """A model-like archive of `tensors` tensors and the module that reads it (`head()`), the archive on disk.

    Synced, so that evicting it afterwards really sends its reads to the disk.
    """
    specs = model_layout(tensors, total_bytes)
    write_irpa(archive, specs)
    source.write_text(head_module_source(specs))
    fd = os.open(archive, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return specs


def evict_from_page_cache(path: Path) -> None:
    """Drop `path` from the page cache, so the next read of it goes to the disk (a cold load).

    The file is synced first: pages written moments ago are dirty, and the kernel
    evicts only clean ones.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
