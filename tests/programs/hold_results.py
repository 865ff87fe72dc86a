"""A user's program that keeps every result it gets: the device memory it holds grows call by call.

Usage: python hold_results.py MODEL.vmfb PARAMS.irpa N [--style from|attr] [--sleep-ms 2]
Prints {"calls": N, ..., "held": N, "held_bytes": ..} (the results' bytes: shape times item size).
"""

from __future__ import annotations

import json
import sys

import numpy as np
from load_and_call import call_many, load, report

__all__: list[str] = []


def main() -> None:
    sleep_ms = 2.0
    if "--sleep-ms" in sys.argv:
        at = sys.argv.index("--sleep-ms")
        sleep_ms = float(sys.argv[at + 1])
        del sys.argv[at : at + 2]
    if "--style" not in sys.argv:
        sys.argv += ["--style", "from"]  # the FunctionInvoker path: results come back as DeviceArrays
    from load_and_call import parse

    args = parse(__doc__.splitlines()[0])
    loaded = load(args.vmfb, args.irpa, args.style, args.device)
    kept: list[object] = []
    times = call_many(loaded, args.n, keep=kept, sleep_s=sleep_ms / 1e3)
    held_bytes = sum(int(np.prod(r.shape)) * np.dtype(r.dtype).itemsize for r in kept)
    print(json.dumps(report(loaded, times, style=args.style, held=len(kept), held_bytes=held_bytes)), flush=True)


if __name__ == "__main__":
    main()
