"""Compiler target flags for each device, and the targets we know to fail.

IREE compiles ahead of time for a named target, and choosing the wrong one
fails in ways that are hard to read (a missing-target error for CUDA sm_90, a
compiler segfault for `--iree-vulkan-target=sm_90`). This table records what
was verified on real hardware (see PLATFORM.md) so gputop picks a target that
works and explains one that does not before the compiler is even started.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CUDA_FLAGS",
    "HIP_FLAGS",
    "KNOWN_BAD_TARGETS",
    "LOCAL_FLAGS",
    "NVIDIA_VENDOR_ID",
    "VULKAN_DEFAULT_FLAGS",
    "VULKAN_NVIDIA_FLAGS",
    "KnownBadTarget",
    "compile_target_for",
    "device_names",
    "known_bad_target",
]

LOCAL_FLAGS: tuple[str, ...] = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
)
VULKAN_DEFAULT_FLAGS: tuple[str, ...] = ("--iree-hal-target-device=vulkan",)
# Verified on the H200 (driver 580): the ampere SPIR-V target runs on Hopper.
VULKAN_NVIDIA_FLAGS: tuple[str, ...] = (
    "--iree-hal-target-device=vulkan",
    "--iree-vulkan-target=ampere",
)
# sm_90 fails to compile in IREE 3.13; sm_80 PTX runs on H100/H200.
CUDA_FLAGS: tuple[str, ...] = ("--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80")
HIP_FLAGS: tuple[str, ...] = ("--iree-hal-target-device=hip", "--iree-rocm-target=gfx942")

NVIDIA_VENDOR_ID = 0x10DE


@dataclass(frozen=True)
class KnownBadTarget:
    """A flag value that fails in the compiler we ship, and what to use instead."""

    flag: str
    what_happens: str
    instead: str


KNOWN_BAD_TARGETS: tuple[KnownBadTarget, ...] = (
    KnownBadTarget(
        "--iree-cuda-target=sm_90",
        "IREE 3.13 fails with 'missing GPU target in #hal.executable.target'",
        "--iree-cuda-target=sm_80 (runs on H100/H200)",
    ),
    KnownBadTarget(
        "--iree-cuda-target=sm_90a",
        "IREE 3.13 fails with 'missing GPU target in #hal.executable.target'",
        "--iree-cuda-target=sm_80 (runs on H100/H200)",
    ),
    KnownBadTarget(
        "--iree-vulkan-target=sm_90",
        "the IREE 3.13 compiler crashes (segfault)",
        "--iree-vulkan-target=ampere on NVIDIA GPUs",
    ),
)


def known_bad_target(flags: tuple[str, ...] | list[str]) -> KnownBadTarget | None:
    """The first flag in `flags` that is known to fail, if any."""
    for bad in KNOWN_BAD_TARGETS:
        if bad.flag in flags:
            return bad
    return None


def compile_target_for(backend: str, *, vendor_id: int | None = None) -> tuple[str, ...]:
    """Compiler flags for a device of `backend` (and, for Vulkan, its vendor)."""
    if backend in ("local-task", "local-sync"):
        return LOCAL_FLAGS
    if backend == "vulkan":
        return VULKAN_NVIDIA_FLAGS if vendor_id == NVIDIA_VENDOR_ID else VULKAN_DEFAULT_FLAGS
    if backend == "cuda":
        return CUDA_FLAGS
    if backend == "hip":
        return HIP_FLAGS
    raise ValueError(f"no IREE compile target for backend {backend!r}")


def device_names(count: int) -> list[str]:
    """The names gputop gives the target devices of a multi-device module, in order."""
    return [f"device_{chr(ord('a') + i)}" for i in range(count)]
