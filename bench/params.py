"""Parameters: context creation with a 1 GiB `.irpa` through each loading path.

A large model's context can take minutes when its parameters go through host
memory instead of file handles. This builds a module that reads one 1 GiB
parameter, then for each path gputop can take (memory-mapped, async file
handle, plain fd, host copy) times the index load plus context creation plus
a first call, side by side in one run, and shows which path gputop picks
for the backend. Prints a table, writes JSON.

Usage: python bench/params.py [--device local-task] [--gib 1] [--vmfb M.vmfb] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from gputop.core.devices import resolve_device
from gputop.core.iree_runner import parameter_mode_for

SOURCE = """
util.global private @weight = #flow.parameter.named<"model"::"weight"> : tensor<{n}xf32>
func.func @head() -> tensor<4xf32> {{
  %w = util.global.load @weight : tensor<{n}xf32>
  %s = tensor.extract_slice %w[0] [4] [1] : tensor<{n}xf32> to tensor<4xf32>
  return %s : tensor<4xf32>
}}
"""


def make_archive(path: Path, count: int) -> None:
    import iree.runtime as rt

    index = rt.ParameterIndex()
    index.add_buffer("weight", np.arange(count, dtype=np.float32).tobytes())
    index.create_archive_file(str(path))


def one_path(mode: str, device_spec: str, vmfb: Path, archive: Path) -> float:
    import iree.runtime as rt

    info = resolve_device(device_spec)
    driver = rt.get_driver(info.backend)
    device = (
        driver.create_default_device()
        if info.backend.startswith("local")
        else driver.create_device(driver.query_available_devices()[0])
    )
    instance = rt.VmInstance()
    module = rt.VmModule.mmap(instance, str(vmfb))
    started = time.perf_counter()
    index = rt.ParameterIndex()
    if mode == "mmap":
        index.load(str(archive))
    elif mode == "file_async":
        index.load(str(archive), mode="file_async")
    elif mode == "fd":
        index.load_from_file_handle(rt.FileHandle.wrap_fd(os.open(archive, os.O_RDONLY)), "irpa")
    else:  # host copy: the slow path users fall into (bytes through Python memory)
        probe = rt.ParameterIndex()
        probe.load(str(archive))
        name, entry = probe.items()[0]
        index.add_buffer(name, rt.parameter_index_entry_as_numpy_flat_ndarray(entry).tobytes())
    provider = index.create_provider(scope="model")
    params = rt.create_io_parameters_module(instance, provider)
    context = rt.VmContext(instance, modules=[rt.create_hal_module(instance, device), params, module])
    result = rt.FunctionInvoker(context, device, module.lookup_function("head"))()
    elapsed = time.perf_counter() - started
    # Release in dependency order: IREE crashes when a device outlives nothing but its arrays.
    del result, context, params, provider, index, module, instance, device
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="local-task")
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--vmfb", type=Path, help="the module compiled for this device (default: compile here)")
    parser.add_argument("--archive", type=Path, help="an existing archive of the right size")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    count = int(args.gib * 2**30 // 4)
    tmp = tempfile.TemporaryDirectory()
    archive = args.archive or Path(tmp.name) / "weight.irpa"
    if not archive.exists():
        make_archive(archive, count)
    vmfb = args.vmfb
    if vmfb is None:
        from gputop.core.compile import compile_module

        flags = resolve_device(args.device).compile_target or ()
        vmfb = compile_module(Path("params.mlir"), flags, source_bytes=SOURCE.format(n=count).encode()).vmfb_path
    device = resolve_device(args.device)
    modes = ["mmap", "file_async", "fd", "host_copy"]
    times: dict[str, float | str] = {}
    for mode in modes:
        try:
            times[mode] = round(one_path(mode, args.device, vmfb, archive), 4)
        except Exception as exc:
            times[mode] = f"fails: {str(exc).splitlines()[0][:120]}"
    chosen = parameter_mode_for(device)
    numbers = {m: t for m, t in times.items() if isinstance(t, float)}
    fastest = min(numbers, key=lambda m: numbers[m]) if numbers else None
    print(f"{args.device}: {archive.stat().st_size / 2**30:.2f} GiB parameter, index load + context + first call")
    for mode, value in times.items():
        mark = "  <- gputop" if mode == chosen else ""
        print(f"  {mode:11s} {value if isinstance(value, str) else f'{value * 1e3:10.1f} ms'}{mark}")
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "device": args.device,
        "bytes": archive.stat().st_size,
        "seconds": times,
        "gputop_picks": chosen,
        "fastest": fastest,
        "picks_fastest": chosen == fastest
        or (fastest is not None and numbers.get(chosen, 1e9) <= 1.5 * numbers[fastest]),
    }
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    tmp.cleanup()


if __name__ == "__main__":
    main()
