"""Match a profiled call's copies with a plan made by `bench/prepare_issue16.py` (for machines without a compiler).

`gputop affinity` analyses and observes in one go, but its analysis needs the
compiler. On the GPU machines the plan (records, transfers, planned copies)
comes from this machine, and this script does the runtime half: it decodes
the `.ireeprof` bundle with `iree-profile` (through `gputop.core.profiling.queue_events`)
and fills in the observed bytes with the same `match_copies` gputop uses.

Usage: python3 bench/gpu_transfer_check.py PLAN.json BUNDLE.ireeprof > observed.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gputop.core.multidevice.affinity import FunctionAffinity
from gputop.core.multidevice.transfer_check import match_copies
from gputop.core.profiling.profiles import runtime_tool
from gputop.core.profiling.queue_events import load_queue_log
from gputop.core.snapshot import to_json


def main() -> None:
    plan = json.loads(Path(sys.argv[1]).read_text())
    affinity = FunctionAffinity.from_plan(plan)
    copies = load_queue_log(Path(sys.argv[2]), runtime_tool("iree-profile")).copies()
    observed, unexplained = match_copies(affinity, copies)
    print(
        json.dumps(
            {
                "function": plan["function"],
                "devices": plan["devices"],
                "records": to_json(list(observed.records)),
                "transfers": to_json(list(observed.transfers)),
                "copies_seen": to_json(list(copies)),
                "unexplained_copies": to_json(list(unexplained)),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
