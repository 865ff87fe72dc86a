"""What profiling costs: call time with kernel profiling on vs off, same module, same run.

For IREE HAL-native profiling (local-task, Vulkan, HIP) this alternates rounds
of `iree-benchmark-module` with and without `--device_profiling_mode` on the
same `.vmfb`, device and inputs. For CUDA it alternates rounds of calls in
this process with and without CUPTI kernel recording. Prints a table, writes
JSON.

Usage: python bench/profile_overhead.py --vmfb M.vmfb --device D --function F --input ... [--rounds 5] [--calls 50]
       python bench/profile_overhead.py --demo mlp --device local-task
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from gputop.core.module.devices import resolve_device
from gputop.core.profiling.profiles import PROFILING_MODES, benchmark_call_ms, device_uri, runtime_tool


def tool_round(vmfb: str, device: str, function: str, inputs: list[str], calls: int, profile: Path | None) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bm.json"
        command = [
            runtime_tool("iree-benchmark-module"), f"--module={vmfb}", f"--device={device}",
            f"--function={function}", *[f"--input={i}" for i in inputs],
            "--benchmark_min_time=1x", f"--benchmark_repetitions={calls}",
            f"--benchmark_out={out}", "--benchmark_out_format=json",
        ]  # fmt: skip
        if profile is not None:
            mode = PROFILING_MODES[device.split(":")[0].split("/")[0]]
            command += [f"--device_profiling_mode={mode}", f"--device_profiling_output={profile}"]
        subprocess.run(command, check=True, capture_output=True)
        return statistics.median(benchmark_call_ms(out))


def cuda_rounds(vmfb: str, device_spec: str, function: str, inputs: list[str], calls: int, rounds: int):
    from gputop.core.module.inputs import parse_input
    from gputop.core.profiling.cupti import record_kernels
    from gputop.core.runners.iree_runner import IreeModuleRun

    runner = IreeModuleRun([resolve_device(device_spec)])
    runner.open_devices()
    runner.load_module(Path(vmfb))
    runner.create_context(function)
    runner.upload([parse_input(i) for i in inputs])

    def timed() -> list[float]:
        return runner.timed_calls(calls)

    timed()  # warm up
    off, on = [], []
    for _ in range(rounds):
        off.append(statistics.median(timed()) * 1e3)
        _, walls = record_kernels(timed)
        on.append(statistics.median(walls) * 1e3)
    runner.close()
    return off, on


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vmfb")
    parser.add_argument("--demo", default="mlp")
    parser.add_argument("--device", default="local-task")
    parser.add_argument("--function")
    parser.add_argument("--input", action="append", default=[])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    vmfb, function, inputs = args.vmfb, args.function, list(args.input)
    scratch = tempfile.TemporaryDirectory()
    if vmfb is None:
        from gputop.core.session import RunConfig, Session

        session = Session(RunConfig(target=f"demo:{args.demo}", device=args.device, iterations=1))
        session.start()
        session.wait()
        assert session.outcome.compiled is not None
        vmfb, function = str(session.outcome.compiled.vmfb_path), session.snapshot.function
        for index, array in enumerate(session.outcome.inputs):
            path = Path(scratch.name) / f"in{index}.npy"
            np.save(path, array)
            inputs.append(f"@{path}")
    device = resolve_device(args.device)
    if device.backend == "cuda":
        off, on = cuda_rounds(vmfb, args.device, function or "main", inputs, args.calls, args.rounds)
        method = "in-process calls, CUPTI kernel recording on vs off"
    else:
        off, on = [], []
        for index in range(args.rounds):
            uri = device_uri(device)
            off.append(tool_round(vmfb, uri, function or "main", inputs, args.calls, None))
            bundle = Path(scratch.name) / f"round{index}.ireeprof"
            on.append(tool_round(vmfb, uri, function or "main", inputs, args.calls, bundle))
        method = f"iree-benchmark-module with vs without --device_profiling_mode={PROFILING_MODES[device.backend]}"
    ratio = statistics.median(on) / statistics.median(off)
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "device": device.id,
        "device_name": device.name,
        "method": method,
        "rounds": args.rounds,
        "calls_per_round": args.calls,
        "off_p50_ms": statistics.median(off),
        "on_p50_ms": statistics.median(on),
        "ratio": ratio,
        "off_rounds_ms": off,
        "on_rounds_ms": on,
    }
    print(f"{device.id}: {method}")
    print(f"profiling off p50 {result['off_p50_ms']:.3f} ms, on {result['on_p50_ms']:.3f} ms, ratio {ratio:.3f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    scratch.cleanup()


if __name__ == "__main__":
    main()
