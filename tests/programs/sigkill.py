"""A user's program that dies hard: some calls, its timings, then SIGKILL to itself (no atexit, no bye).

Usage: python sigkill.py MODEL.vmfb PARAMS.irpa N [--style attr|from]
"""

from __future__ import annotations

import json
import os
import signal
import time

from load_and_call import call_many, load, parse, report

__all__: list[str] = []


def main() -> None:
    args = parse(__doc__.splitlines()[0])
    loaded = load(args.vmfb, args.irpa, args.style, args.device)
    times = call_many(loaded, args.n)
    print(json.dumps(report(loaded, times, style=args.style)), flush=True)
    time.sleep(0.3)  # a serving loop that idles a moment before it dies: what it did so far has been reported
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    main()
