"""Nsight Compute's command line (`ncu`): where it is, what gputop asks of it, and what its failures mean.

A counters pass hands one call of the run's module to `ncu`, which runs IREE's
`iree-run-module` in a process of its own and replays each kernel as often as
its counters need. This module is the part of that which is about ncu alone:
finding it (`GPUTOP_NCU`, then PATH, the CUDA toolkit and the newest
`/opt/nvidia/nsight-compute/*`), the one profiling command and the two CSV
imports, its version, and the one line a person needs when it fails (counters
reserved for admins, a driver it does not support, no kernel profiled). The
command keeps the clock and the caches as the run has them
(`--clock-control none --cache-control none`): ncu's defaults lock the base
clock and flush the caches, which measures another kernel than the live one.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from gputop.core.processes import child_options, last_line
from gputop.core.profiling.ireeprof.tools import device_uri, runtime_tool
from gputop.core.records.devices import DeviceInfo

__all__ = [
    "METRICS",
    "NCU_ENV",
    "NOT_FOUND",
    "PERMISSION",
    "SECTIONS",
    "counters_command",
    "find_ncu",
    "import_command",
    "ncu_failure",
    "ncu_version",
    "newest",
    "one_call_command",
    "parse_version",
]

NCU_ENV = "GPUTOP_NCU"
TOOLKIT_NCU = "/usr/local/cuda/bin/ncu"
STANDALONE_NCU = "/opt/nvidia/nsight-compute/*/ncu"
NOT_FOUND = (
    f"Nsight Compute (ncu) not found: looked on PATH, at {TOOLKIT_NCU} and {STANDALONE_NCU} (set {NCU_ENV} to its path)"
)
PERMISSION = (
    "the GPU's performance counters are open to admin users only (ncu: ERR_NVGPUCTRPERM): run gputop as root, "
    "or load the nvidia kernel module with NVreg_RestrictProfilingToAdminUsers=0"
)
SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats")
# What each kernel's row is made of (core/profiling/ncu/kernel_counters.py reads them back). The tensor-path counters
# (GH100 and later; an older chip answers n/a, and the kernel's tensor ops are then unknown) are asked for
# with their .sum rollup, as every other counter here.
METRICS = (
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.avg.per_second",
    "dram__cycles_elapsed.avg.per_second",
    *(f"smsp__sass_thread_inst_executed_op_{p}{op}_pred_on.sum" for p in "hfd" for op in ("fma", "add", "mul")),
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_bytes.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__block_size",
    "launch__grid_size",
    *(
        f"sm__ops_path_tensor_src_{kind}.sum"
        for kind in ("fp16", "bf16_dst_fp32", "tf32_dst_fp32", "fp64", "fp8", "int8")
    ),
)
VERSION_TIMEOUT_S = 30.0


def newest(paths: Sequence[str]) -> str | None:
    """The path whose version folder is the highest (`/opt/nvidia/nsight-compute/2025.3.1/ncu` over 2024.1.0)."""

    def version(path: str) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", Path(path).parent.name))

    return max(paths, key=version, default=None)


def find_ncu() -> tuple[str | None, str | None]:
    """ncu's path and None, or None and why there is none (one line)."""
    given = os.environ.get(NCU_ENV)
    if given:
        if _runnable(given):
            return given, None
        return None, f"{NCU_ENV}={given}: no such executable (it should name Nsight Compute's ncu)"
    for candidate in (shutil.which("ncu"), TOOLKIT_NCU, newest(glob.glob(STANDALONE_NCU))):
        if candidate and _runnable(candidate):
            return candidate, None
    return None, NOT_FOUND


def _runnable(path: str) -> bool:
    return Path(path).is_file() and os.access(path, os.X_OK)


def parse_version(text: str) -> str | None:
    """`2025.3.1.0` from `ncu --version`'s last line (`Version 2025.3.1.0 (build 36398880) ...`)."""
    match = re.search(r"Version\s+(\S+)", last_line(text))
    return match.group(1) if match else None


def ncu_version(ncu: str) -> str | None:
    """The version of the ncu at `ncu`, None where it does not say."""
    try:
        proc = subprocess.run(
            [ncu, "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S, **child_options()
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_version(proc.stdout)


def one_call_command(
    vmfb: Path, device: DeviceInfo, function: str, input_args: Sequence[str], parameters: Sequence[Path] = ()
) -> list[str]:
    """IREE's `iree-run-module` making one call of `function` with the run's inputs (and parameter files, in
    the `model` scope the run gives them), printing no outputs."""
    return [
        runtime_tool("iree-run-module"),
        f"--device={device_uri(device)}",
        *[f"--parameters=model={path}" for path in parameters],
        f"--module={vmfb}",
        f"--function={function}",
        *[f"--input={arg}" for arg in input_args],
        "--output_max_element_count=0",
    ]


def counters_command(ncu: str, call: Sequence[str], report_stem: Path) -> list[str]:
    """ncu profiling every kernel of `call` into `report_stem`.ncu-rep, at the run's clock and warm caches."""
    sections = [arg for name in SECTIONS for arg in ("--section", name)]
    return [
        ncu,
        "--clock-control",
        "none",
        "--cache-control",
        "none",
        *sections,
        "--metrics",
        ",".join(METRICS),
        "-f",
        "-o",
        str(report_stem),
        *call,
    ]


def import_command(ncu: str, report: Path, page: str) -> list[str]:
    """The report's `raw` (every metric, a row per launch) or `details` (sections and rules) page as CSV."""
    return [ncu, "--import", str(report), "--csv", "--page", page, "--print-units", "base"]


def ncu_failure(output: str, exit_code: int = 0) -> str | None:
    """Why a profiling run of ncu gave no counters, in one line; None when it did.

    ncu says it on lines of its own: `==ERROR==` (the first one is the cause; a driver newer
    than this ncu supports, counters reserved for admins) and `==WARNING== No kernels were
    profiled` (the call launched no CUDA kernel: a Vulkan device, a module that ran on the CPU).
    """
    if "ERR_NVGPUCTRPERM" in output:
        return PERMISSION
    for line in output.splitlines():
        if line.startswith("==ERROR=="):
            return f"ncu: {line.removeprefix('==ERROR==').strip()}"
    if "No kernels were profiled" in output:
        return "ncu profiled no kernels: the call launched no CUDA kernel it could see"
    if exit_code != 0:
        return f"ncu exited with {exit_code}: {last_line(output) or 'no output'}"
    return None
