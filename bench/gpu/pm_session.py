#!/usr/bin/env python3
"""The PM sampling strip beside gputop's other passes, in one live engine session on CUDA (issue 48 item 4).

Starts a session that calls until stopped, then: a profile pass (CUPTI's activity API in the same process as
PM sampling: do they run together?), a counters pass (ncu in a process of its own: the strip must let go of
the counters first and come back after), `g` off and on (the engine's request_pm_sampling), then stops. Every
change of the strip's state is printed with its time, with the Log's lines, the samples decoded between, and
the ending report's pm_sampling, profile and counters_pass blocks go to OUT.json.

Usage: python3 bench/gpu/pm_session.py VMFB FUNCTION OUT.json [--input @x.npy]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from gputop.core.session import RunConfig, Session
from gputop.core.snapshot import RunSnapshot


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vmfb")
    parser.add_argument("function")
    parser.add_argument("out")
    parser.add_argument("--input", action="append", default=[])
    args = parser.parse_args()
    config = RunConfig(
        target=args.vmfb, device="cuda", function=args.function, inputs=tuple(args.input), iterations=None
    )
    session = Session(config)
    started = time.perf_counter()
    timeline: list[dict[str, Any]] = []
    last: list[Any] = [None]

    def seen(snap: RunSnapshot) -> None:
        pm = snap.pm_sampling
        key = (pm.state, pm.reason) if pm else None
        if key != last[0]:
            last[0] = key
            entry = {"t": round(time.perf_counter() - started, 2), "state": key, "samples": pm.samples if pm else 0}
            timeline.append(entry)
            print(f"  {entry}", flush=True)

    session.subscribe(seen)
    session.start()

    def wait_for(what: str, ready: Any, limit: float = 120.0) -> None:
        began = time.perf_counter()
        while not ready(session.snapshot):
            if time.perf_counter() - began > limit or session.snapshot.state in ("error", "finished"):
                print(f"  gave up waiting for {what} ({session.snapshot.state}: {session.snapshot.error})")
                return
            time.sleep(0.1)
        print(f"{time.perf_counter() - started:6.2f} s  {what}", flush=True)

    wait_for("3 s of samples", lambda s: s.pm_sampling is not None and s.pm_sampling.samples >= 3000)
    before = session.snapshot.pm_sampling.samples if session.snapshot.pm_sampling else 0
    print("profile:", session.request_profile())
    wait_for("the profile pass", lambda s: s.profile is not None)
    wait_for("samples after the pass", lambda s: s.pm_sampling is not None and s.pm_sampling.samples > before + 500)
    print("counters:", session.request_counters())
    wait_for("the counters pass to start", lambda s: s.counting, 30)
    wait_for("the counters pass to end", lambda s: not s.counting, 300)
    wait_for("sampling again", lambda s: s.pm_sampling is not None and s.pm_sampling.state == "sampling", 30)
    print("g off:", session.request_pm_sampling(False))
    time.sleep(1.5)
    print("g on:", session.request_pm_sampling(True))
    wait_for("sampling again after g", lambda s: s.pm_sampling is not None and s.pm_sampling.state == "sampling", 30)
    time.sleep(1.5)
    session.stop()
    session.wait(60)
    report = session.report or session.current_report()
    log = [f"{e.level}: {e.message}" for e in session.snapshot.events]
    print("\n".join(log[-30:]))
    print("pm_sampling:", json.dumps({k: v for k, v in report["pm_sampling"].items() if k != "newest"})[:1500])
    print("profile:", json.dumps(report.get("profile"))[:600])
    print(
        "counters_pass:",
        json.dumps({k: v for k, v in (report.get("counters_pass") or {}).items() if k != "kernels"})[:800],
    )
    with open(args.out, "w") as handle:
        json.dump({"timeline": timeline, "log": log, "report": report}, handle, indent=1, default=str)


if __name__ == "__main__":
    main()
