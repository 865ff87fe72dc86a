"""Where a synced call's time goes on the host, measured in-process: the invoke (submissions and the
wait for the results' fence) apart from the release of the results, call by call.

The call breakdown reads IREE's profile records, which cannot see a call's host work before its first
queue operation nor after the completion the host saw; this times those ends from the outside, in
gputop's own way of calling (`IreeModuleRun.steady_call`), as a second source for BENCHMARKS.md.

Usage: python bench/call_anatomy.py MODULE.vmfb --device vulkan --function mlp [--calls 200] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from gputop.core.module.device_discovery import resolve_device
from gputop.core.module.inputs import make_inputs
from gputop.core.runners.iree_runner import IreeModuleRun


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vmfb", type=Path)
    parser.add_argument("--device", default="local-task")
    parser.add_argument("--function")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    runner = IreeModuleRun([resolve_device(args.device)])
    runner.open_devices()
    runner.load_module(args.vmfb)
    signature = runner.create_context(args.function)
    runner.upload(make_inputs(signature, []))
    rt = runner._rt
    invoke, release, whole = [], [], []
    for _ in range(args.calls + 10):
        results = rt.VmVariantList(max(1, len(signature.outputs)))
        t0 = time.perf_counter()
        runner.context.invoke(runner._vm_function, runner._arg_list, results)
        t1 = time.perf_counter()
        del results
        t2 = time.perf_counter()
        invoke.append(t1 - t0)
        release.append(t2 - t1)
        whole.append(t2 - t0)
    parts = (("invoke", invoke), ("release", release), ("call", whole))
    median = {name: statistics.median(v[10:]) * 1e3 for name, v in parts}
    result = {"device": args.device, "vmfb": str(args.vmfb), "calls": args.calls, "median_ms": median}
    print(json.dumps(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    runner.close()


if __name__ == "__main__":
    main()
