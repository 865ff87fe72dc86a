"""A user's program that fails: some calls, its timings, then an uncaught ValueError (exit code 1).

Usage: python raise_error.py MODEL.vmfb PARAMS.irpa N [--style attr|from]
"""

from __future__ import annotations

import json

from load_and_call import call_many, load, parse, report

__all__: list[str] = []


def main() -> None:
    args = parse(__doc__.splitlines()[0])
    loaded = load(args.vmfb, args.irpa, args.style, args.device)
    times = call_many(loaded, args.n)
    print(json.dumps(report(loaded, times, style=args.style)), flush=True)
    raise ValueError(f"the program gave up after {args.n} calls")


if __name__ == "__main__":
    main()
