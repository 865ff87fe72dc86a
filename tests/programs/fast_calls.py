"""Calls as fast as IREE makes them, and optionally a context per call: the load a watcher must keep up with.

Not gputop code: iree.runtime, numpy and the standard library. Calls `tiny.main`
(a 4-float add) N times through a FunctionInvoker on a device array, or with
`--contexts` makes a new `VmContext` for every call and calls it through
`VmContext.invoke`. Prints one JSON line from its own timers:
{"calls": N, "contexts": C, "seconds": .., "calls_per_s": .., "p50_ms": ..}.

Usage: python fast_calls.py TINY.vmfb N [--contexts] [--device local-sync]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import iree.runtime as rt
import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vmfb")
    parser.add_argument("n", type=int)
    parser.add_argument("--contexts", action="store_true", help="a new context for every call")
    parser.add_argument("--device", default="local-sync")
    args = parser.parse_args()
    config = rt.Config(device=rt.get_device(args.device))
    module = rt.VmModule.mmap(config.vm_instance, args.vmfb)
    x = np.arange(4, dtype=np.float32)
    times = []
    contexts = 0
    if args.contexts:
        hal = rt.create_hal_module(config.vm_instance, config.device)
        function = module.lookup_function("main")
        buffer = config.device.allocator.allocate_buffer_copy(
            memory_type=rt.MemoryType.DEVICE_LOCAL,
            allowed_usage=rt.BufferUsage.DEFAULT,
            device=config.device,
            buffer=x,
            element_type=rt.HalElementType.FLOAT_32,
        )
        started = time.perf_counter()
        for _ in range(args.n):
            t0 = time.perf_counter()
            context = rt.VmContext(config.vm_instance, modules=[hal, module])
            contexts += 1
            inputs = rt.VmVariantList(1)
            inputs.push_ref(buffer)
            outputs = rt.VmVariantList(1)
            context.invoke(function, inputs, outputs)
            times.append(time.perf_counter() - t0)
    else:
        main_fn = rt.load_vm_modules(module, config=config)[-1].main
        argument = rt.asdevicearray(config.device, x)
        started = time.perf_counter()
        for _ in range(args.n):
            t0 = time.perf_counter()
            main_fn(argument)
            times.append(time.perf_counter() - t0)
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "calls": len(times),
                "contexts": contexts,
                "seconds": seconds,
                "ended_at": time.time(),
                "calls_per_s": len(times) / seconds,
                "p50_ms": statistics.median(times) * 1e3,
                "p95_ms": sorted(times)[int(len(times) * 0.95)] * 1e3,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
