"""What a `.vmfb` holds: its inlined constants and its compiled kernels, counted without loading it.

IREE's runtime says nothing of a module's weights: `VmModule` lists functions,
and an allocator's statistics count only what it allocates (on local-task the
constants are read in place from the mapped file, and never show in the pools).
The file itself says. A `.vmfb` is a FlatBuffer that is also a ZIP archive:
IREE's archive writer (`compiler/.../VM/Target/Bytecode/ArchiveWriter.cpp`)
stores every read-only segment over 4 KiB as a file of its own, named for its
MIME type (`mimeTypeToFileExtension` in `BytecodeModuleTarget.cpp`): the
module's constants, packed by the compiler into `_const.bin` (octet-stream, or
no type: `.bin`), and each executable (`.so` for llvm-cpu's ELF, `.fb` for
Vulkan, CUDA and HIP FlatBuffers, `.dll`, `.dylib`, `.wasm`), beside the
module's own `module.fb`. Seen with IREE 3.13: a 1 MiB non-splat constant in a
matmul module gave `_const.bin` of exactly 1,048,576 bytes for llvm-cpu,
Vulkan and CUDA alike. Segments of 4 KiB or less stay inside `module.fb` and
are not counted here; splat constants are folded into fills and take no bytes.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["EXECUTABLE_SUFFIXES", "VmfbContents", "vmfb_contents"]

CONSTANT_SUFFIX = ".bin"
EXECUTABLE_SUFFIXES = (".so", ".fb", ".dll", ".dylib", ".wasm")
MODULE_ENTRY = "module.fb"


@dataclass(frozen=True)
class VmfbContents:
    """A `.vmfb`'s size and the bytes of its inlined constants and of its executables.

    `constant_bytes` and `executable_bytes` are None, with `reason`, where the file cannot be read as an
    archive (a module written by another tool, or a truncated file).
    """

    vmfb_bytes: int
    constant_bytes: int | None
    executable_bytes: int | None
    reason: str | None = None


def vmfb_contents(path: Path) -> VmfbContents:
    """The constants and executables `path` embeds, from its archive listing (nothing is read but the listing)."""
    size = path.stat().st_size
    try:
        with zipfile.ZipFile(path) as archive:
            entries = [(info.filename, info.file_size) for info in archive.infolist()]
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        return VmfbContents(size, None, None, f"{path.name} could not be read as an IREE archive ({exc})")
    constants = sum(n for name, n in entries if name.endswith(CONSTANT_SUFFIX))
    executables = sum(n for name, n in entries if name != MODULE_ENTRY and name.endswith(EXECUTABLE_SUFFIXES))
    return VmfbContents(size, constants, executables)
