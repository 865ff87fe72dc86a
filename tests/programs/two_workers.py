"""A user's program with two worker processes, each loading the module and calling it on its own.

Usage: python two_workers.py MODEL.vmfb PARAMS.irpa N [--style attr|from] [--start-method fork|spawn]
The parent imports iree.runtime but creates no device (a device does not survive a fork);
each worker loads, calls N times and sends back its timings. Prints one JSON line:
{"calls": 2N, "function": .., "workers": [{worker's own report}, ..]}.
"""

from __future__ import annotations

import json
import multiprocessing
import sys

import iree.runtime  # noqa: F401  (imported before the fork, as a program's top-level imports are)
from load_and_call import call_many, load, parse, report

__all__: list[str] = []


def worker(queue: multiprocessing.Queue, vmfb: str, irpa: str, n: int, style: str, device: str) -> None:
    loaded = load(vmfb, irpa, style, device)
    times = call_many(loaded, n)
    queue.put(report(loaded, times, style=style))


def main() -> None:
    method = "fork"
    if "--start-method" in sys.argv:
        at = sys.argv.index("--start-method")
        method = sys.argv[at + 1]
        del sys.argv[at : at + 2]
    args = parse(__doc__.splitlines()[0])
    context = multiprocessing.get_context(method)
    queue = context.Queue()
    workers = [
        context.Process(target=worker, args=(queue, args.vmfb, args.irpa, args.n, args.style, args.device))
        for _ in range(2)
    ]
    for process in workers:
        process.start()
    reports = sorted((queue.get(timeout=120) for _ in workers), key=lambda r: r["pid"])
    for process in workers:
        process.join()
    codes = [process.exitcode for process in workers]
    print(
        json.dumps(
            {
                "calls": sum(r["calls"] for r in reports),
                "function": reports[0]["function"],
                "start_method": method,
                "exit_codes": codes,
                "workers": reports,
            }
        ),
        flush=True,
    )
    sys.exit(0 if codes == [0, 0] else 1)


if __name__ == "__main__":
    main()
