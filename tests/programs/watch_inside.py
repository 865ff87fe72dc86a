"""A user's program that asks to be watched from inside: `import gputop; gputop.watch()`, then its own work.

Runs in an environment where gputop is installed (it imports it), unlike the
other test programs. Prints its own figures as load_and_call does, plus the
session folder gputop.watch() returned.

Usage: python watch_inside.py MODEL.vmfb PARAMS.irpa N
"""

from __future__ import annotations

import json

from load_and_call import call_many, load, parse, report

import gputop

__all__: list[str] = []


def main() -> None:
    session = gputop.watch()  # the one line
    args = parse(__doc__.splitlines()[0])
    loaded = load(args.vmfb, args.irpa, args.style, args.device)
    times = call_many(loaded, args.n)
    print(json.dumps(report(loaded, times, style=args.style, session=str(session))), flush=True)


if __name__ == "__main__":
    main()
