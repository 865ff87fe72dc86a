"""Where gputop's own share of a call's tail comes from: the run with its watchers, without, and IREE's tool.

Issue 47 item 5: `gputop run`'s p95 came out 0.994x and 1.076x of `iree-benchmark-module`'s minutes apart on an
H200. This sets, in alternating rounds of one process run, gputop's calls with the engine's watchers sampling at
their default interval (memory, clocks, neighbours, every 0.1 s) against the same calls with the watchers all but
idle (`sample_interval_s` 60 s: one sample at the start), each with Python's garbage collector on and off, and
all against the tool, so what the watchers and the collector cost the tail is measured apart from the harnesses'
difference.

With --bare a third side joins each round: the same calls from a bare Python loop (iree.runtime alone, no
thread beside it), the floor under any Python harness of IREE's bindings.

Usage: python bench/own_share_parts.py --vmfb M.vmfb --device cuda --function F --input @x.npy
           [--iterations 2000] [--rounds 5] [--variants NAME,...] [--bare] [--json out.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/run_overhead.py beside it

from run_overhead import benchmark_tool_p50, gputop_p50

from gputop.core.run.run_host import tune_interpreter_for_calls
from gputop.core.session import RunConfig

# name: (sample interval, what Python's garbage collector does meanwhile)
VARIANTS = {
    "watchers at 0.1 s": (0.1, "on"),
    "watchers idle (60 s)": (60.0, "on"),
    "watchers idle, gc off": (60.0, "off"),
    "watchers at 0.1 s, gc off": (0.1, "off"),
}


def bare_loop_p50(vmfb: str, device: str, function: str, inputs: list[str], iterations: int) -> dict[str, Any]:
    """The same calls from a bare Python loop: iree.runtime alone, no gputop and no thread beside it, each call
    made as gputop's steady call makes it (`context.invoke` with the packed inputs, results released) and timed
    as it times it. What any Python harness of IREE's bindings pays over the tool, the floor under gputop."""
    import time

    import iree.runtime as rt
    import numpy as np

    dev = rt.get_device(device)
    config = rt.Config(device=dev)
    context = rt.SystemContext(config=config)
    module = rt.VmModule.mmap(config.vm_instance, vmfb)
    context.add_vm_module(module)
    vm_function = module.lookup_function(function)
    arrays = [rt.asdevicearray(dev, np.load(path.lstrip("@"))) for path in inputs]
    args = rt.VmVariantList(len(arrays))
    for array in arrays:
        args.push_ref(array._buffer_view)
    vm_context = context.vm_context

    def call() -> float:
        started = time.perf_counter()
        results = rt.VmVariantList(1)  # a capacity: the list grows to the results
        vm_context.invoke(vm_function, args, results)
        del results
        return time.perf_counter() - started

    for _ in range(20):
        call()
    times = np.array([call() for _ in range(iterations)]) * 1e3
    return {"count": len(times), "p50_ms": float(np.median(times)), "p95_ms": float(np.percentile(times, 95))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vmfb", required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--function", required=True)
    parser.add_argument("--input", action="append", default=[])
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--variants", help="comma-separated names of VARIANTS to run (default: all)")
    parser.add_argument("--bare", action="store_true", help="also the same calls from a bare Python loop")
    args = parser.parse_args()
    tune_interpreter_for_calls()  # as `gputop run` does
    variants = {name: VARIANTS[name] for name in args.variants.split(",")} if args.variants else VARIANTS
    names = (*variants, *(("bare Python loop",) if args.bare else ()), "iree-benchmark-module")
    rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for _ in range(args.rounds):
        for name, (interval, collector) in variants.items():
            if collector == "off":
                gc.collect()
                gc.disable()
            config = RunConfig(
                target=args.vmfb, device=args.device, iterations=args.iterations, function=args.function,
                inputs=tuple(args.input), sample_interval_s=interval,
            )  # fmt: skip
            result = gputop_p50(config)
            gc.enable()
            result.pop("inputs", None)
            rounds[name].append(result)
        if args.bare:
            rounds["bare Python loop"].append(
                bare_loop_p50(args.vmfb, args.device, args.function, list(args.input), args.iterations)
            )
        # The same module, function and input files (`@x.npy`, as gputop took them).
        rounds["iree-benchmark-module"].append(
            benchmark_tool_p50(args.vmfb, args.device, args.function, list(args.input), args.iterations)
        )
    tool_p50 = [r["p50_ms"] for r in rounds["iree-benchmark-module"]]
    tool_p95 = [r["p95_ms"] for r in rounds["iree-benchmark-module"]]
    print(
        f"{'':26}{'p50 ms':>9}{'p95 ms':>9}{'p50 / tool':>12}{'p95 / tool':>12}   (medians over {args.rounds} rounds)"
    )
    table = {}
    for name, results in rounds.items():
        p50 = [r["p50_ms"] for r in results]
        p95 = [r["p95_ms"] for r in results]
        r50 = statistics.median(a / b for a, b in zip(p50, tool_p50, strict=True))
        r95 = statistics.median(a / b for a, b in zip(p95, tool_p95, strict=True))
        table[name] = {"p50_ms": p50, "p95_ms": p95, "p50_ratio": r50, "p95_ratio": r95}
        print(f"{name:26}{statistics.median(p50):9.3f}{statistics.median(p95):9.3f}{r50:12.3f}{r95:12.3f}")
    if args.json:
        args.json.write_text(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
