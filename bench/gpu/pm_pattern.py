#!/usr/bin/env python3
"""A known pattern of GPU calls for the PM sampling strip (issue 48): the calls' own windows, to set samples against.

Runs FUNCTION of a CUDA `.vmfb` (seeded random 4096x4096 inputs) in phases: busy for --busy seconds, idle for
--idle, --phases times, and writes each call's window (CLOCK_MONOTONIC seconds: time.perf_counter, the clock the
sampler turns CUPTI's timestamps into) to a JSON file. With --sample-inside a `Sampler` runs on a thread of this
process (PM sampling sees only the work of the process that samples): samples that fall in the busy phases
should read the GPU busy, those in the idle ones idle, which checks the sampler's clock conversion.

Usage: python3 bench/gpu/pm_pattern.py .device/pm/pm_cuda.vmfb mm_f32 OUT.json [--busy 1 --idle 0.5 --phases 3]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vmfb")
    parser.add_argument("function")
    parser.add_argument("out")
    parser.add_argument("--busy", type=float, default=1.0)
    parser.add_argument("--idle", type=float, default=0.5)
    parser.add_argument("--phases", type=int, default=3)
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--sample-inside", help="also PM sample from a thread of this process, rows to this file")
    parser.add_argument("--interval-ms", type=float, default=1.0)
    parser.add_argument("--max-samples", type=int, help="the counter data image's room (default: the sampler's)")
    args = parser.parse_args()
    import iree.runtime as rt

    device = rt.get_device("cuda")
    config = rt.Config(device=device)
    context = rt.SystemContext(config=config)
    module = rt.VmModule.mmap(config.vm_instance, args.vmfb)
    context.add_vm_module(module)
    function = context.modules[module.name][args.function]
    dtype = np.float16 if args.function.endswith("f16") else np.float32
    rng = np.random.default_rng(0)
    inputs = [rt.asdevicearray(device, rng.standard_normal((args.n, args.n)).astype(dtype)) for _ in range(2)]

    def call() -> tuple[float, float]:
        started = time.perf_counter()
        function(*inputs).to_host()
        return started, time.perf_counter()

    for _ in range(3):
        call()  # warm-up, before the pattern: its calls are not in the file
    inside: list[list[float]] = []
    stop = None
    if args.sample_inside:
        import threading

        from gputop.core.profiling.cupti import pm_sampler

        pm_sampler.load_libraries()
        sampler = pm_sampler.Sampler(0, args.interval_ms, args.max_samples)
        sampler.open(None)
        stop = threading.Event()

        def drain() -> None:
            while not stop.wait(0.1):
                inside.extend(sampler.drain()[0])
            inside.extend(sampler.close()[0])

        thread = threading.Thread(target=drain, daemon=True)
        thread.start()
    windows: list[tuple[float, float]] = []
    phases: list[tuple[float, float]] = []
    for _ in range(args.phases):
        begun = time.perf_counter()
        while time.perf_counter() - begun < args.busy:
            windows.append(call())
        phases.append((begun, time.perf_counter()))
        time.sleep(args.idle)
    if stop is not None:
        stop.set()
        thread.join()
        Path(args.sample_inside).write_text(json.dumps({"metrics": sampler.metrics, "rows": inside}))
        costs = {k: round(v * 1e3, 1) if k != "drains" else v for k, v in sampler.costs.items()}
        print(f"{len(inside)} samples from inside; image {len(sampler.image)} bytes for {sampler.max_samples} samples;")
        print(f"  CPU ms over {costs.pop('drains'):.0f} drains: {costs}")
    calls = np.array([end - start for start, end in windows]) * 1e3
    print(f"{args.function}: {len(windows)} calls, p50 {np.median(calls):.3f} ms, in {len(phases)} busy phases")
    Path(args.out).write_text(json.dumps({"function": args.function, "calls": windows, "busy_phases": phases}))


if __name__ == "__main__":
    main()
