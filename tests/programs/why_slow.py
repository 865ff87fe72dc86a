"""A user's loop over one function, written with one of the mistakes that make IREE programs slow, or none.

Not gputop code: iree.runtime, numpy and the standard library. Loads a module
whose `main` takes one argument, then calls it N times through the
FunctionInvoker a `SystemContext` hands out, timing each call itself
(perf_counter around `main(x)`), and prints one JSON line at the end:
{"calls": N, "p50_ms": .., "mean_ms": .., "p95_ms": .., "argument_bytes": .., "reads": .., "mistake": ..}.

Mistakes (`--mistake`):
- upload: the same numpy array passed on every call (IREE uploads it every time);
- to_host: every result read back to the host (np.asarray), though the loop keeps only the last;
- none: the argument made a device array once (`asdevicearray`), the last result alone read back.

Usage: python why_slow.py MODULE.vmfb N --shape 1024x4096 [--mistake upload|to_host|none] [--device local-task]
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
    parser.add_argument("--shape", default="1024x4096")
    parser.add_argument("--mistake", choices=("upload", "to_host", "none"), default="upload")
    parser.add_argument("--device", default="local-task")
    parser.add_argument("--sleep-ms", type=float, default=0.0, help="the program's own work between calls")
    args = parser.parse_args()
    shape = tuple(int(n) for n in args.shape.split("x"))
    config = rt.Config(device=rt.get_device(args.device))
    module = rt.VmModule.mmap(config.vm_instance, args.vmfb)
    bound = rt.load_vm_modules(module, config=config)
    main_fn = bound[-1].main
    x = (np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) % 5) - 2
    argument = rt.asdevicearray(config.device, x) if args.mistake != "upload" else x
    times, reads, result = [], 0, None
    for _ in range(args.n):
        started = time.perf_counter()
        result = main_fn(argument)
        times.append(time.perf_counter() - started)
        if args.mistake == "to_host":
            np.asarray(result)
            reads += 1
        if args.sleep_ms:
            time.sleep(args.sleep_ms / 1e3)
    last = np.asarray(result)
    print(
        json.dumps(
            {
                "calls": len(times),
                "p50_ms": statistics.median(times) * 1e3,
                "mean_ms": statistics.fmean(times) * 1e3,
                "p95_ms": sorted(times)[int(len(times) * 0.95)] * 1e3,
                "argument_bytes": x.nbytes if args.mistake == "upload" else 0,
                "result_bytes": last.nbytes,
                "reads": reads + 1,
                "checksum": float(last.sum()),
                "mistake": args.mistake,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
