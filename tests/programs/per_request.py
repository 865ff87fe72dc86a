"""A serving loop that makes a context for every request: the mistake gputop must count and name.

Not gputop code: iree.runtime, numpy and the standard library. The instance, the
device, the parameters and the module are loaded once; then every request makes a
new `VmContext` over them, calls `main` once and drops the context, as a handler
written per request does. Prints one JSON line at the end, from its own timers:
{"requests": N, "calls": N, "contexts": N, "context_p50_ms": .., "call_p50_ms": .., "seconds": .., "pid": ..}.

Usage: python per_request.py MODEL.vmfb PARAMS.irpa N [--device local-task]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import iree.runtime as rt
from load_and_call import SCOPE, device_argument


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vmfb")
    parser.add_argument("irpa")
    parser.add_argument("n", type=int)
    parser.add_argument("--device", default="local-task")
    args = parser.parse_args()
    instance = rt.VmInstance()
    device = rt.get_device(args.device)
    hal = rt.create_hal_module(instance, device)
    index = rt.ParameterIndex()
    index.load(args.irpa)
    params = rt.create_io_parameters_module(instance, index.create_provider(scope=SCOPE))
    module = rt.VmModule.mmap(instance, args.vmfb)
    function = module.lookup_function("main")
    argument = device_argument(device)
    contexts, calls = [], []
    started = time.perf_counter()
    for _ in range(args.n):
        made = time.perf_counter()
        context = rt.VmContext(instance, modules=[hal, params, module])  # the mistake: one per request
        called = time.perf_counter()
        inputs = rt.VmVariantList(1)
        inputs.push_ref(argument)
        outputs = rt.VmVariantList(1)
        context.invoke(function, inputs, outputs)
        done = time.perf_counter()
        contexts.append(called - made)
        calls.append(done - called)
        del context, outputs
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "requests": args.n,
                "calls": len(calls),
                "contexts": len(contexts),
                "context_p50_ms": statistics.median(contexts) * 1e3,
                "call_p50_ms": statistics.median(calls) * 1e3,
                "seconds": seconds,
                "ended_at": time.time(),
                "pid": os.getpid(),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
