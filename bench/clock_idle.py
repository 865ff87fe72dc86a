"""The clock warning as a user meets it: a live run paused until the GPU idles, resumed and profiled at once.

Two fresh `gputop run` processes never showed a cold pass on the H200 (creating
the device and loading the module woke the GPU to 1980 MHz before the pass
began). A TUI user meets the slow clock another way: the run stays open, is
paused (or the module waits on host work) long enough for the GPU to drop to
its idle clock, and the next profile pass starts at once. This drives that
with the engine's own Session, as the TUI does: calls for a few seconds, pause
until NVML reads the SM clock under half its maximum, resume and take a pass
(no warm-up), let calls run, and take a second pass (no warm-up either). Both
passes' clocks, warnings and kernel times go to the JSON. A pass is flagged when
the clock while its calls ran was low or moving; on Vulkan (a pass is IREE's
benchmark tool, another process) the readings of the tool's start-up, with the
GPU idle, are left out (`window` says which readings count). Expected: kernel
times within a few % of each other unless a pass is flagged.

With `--warmup-s 2` (gputop's default) each pass first makes calls until the
clock is steady: expected then, neither pass flagged.

Usage: python bench/clock_idle.py MODULE.vmfb --device vulkan [--idle-timeout 60] [--warmup-s 0] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from gputop.core.module.device_discovery import resolve_device
from gputop.core.records.base import to_json
from gputop.core.records.profile import ProfileSummary
from gputop.core.session import RunConfig, Session
from gputop.core.snapshot import RunSnapshot
from gputop.core.watch.clock_watch import gpu_clock_for


def wait_for(session: Session, done: Any, timeout: float, what: str) -> RunSnapshot:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        snapshot = session.snapshot
        if done(snapshot):
            return snapshot
        if session.done:
            raise SystemExit(f"the run ended ({snapshot.state}) while waiting for {what}")
        time.sleep(0.02)
    raise SystemExit(f"timed out after {timeout:g} s waiting for {what}")


def profile_now(session: Session, previous: ProfileSummary | None, timeout: float) -> ProfileSummary:
    refusal = session.request_profile()
    if refusal:
        raise SystemExit(f"profile refused: {refusal}")
    snapshot = wait_for(
        session, lambda s: s.profile is not None and s.profile is not previous and not s.profiling, timeout, "a pass"
    )
    assert snapshot.profile is not None
    return snapshot.profile


def pass_of(profile: ProfileSummary, clock_before: int | None) -> dict[str, Any]:
    clocks = profile.clocks
    return {
        "sm_mhz_just_before": clock_before,
        "clocks": to_json(clocks) if clocks is not None else None,
        "clocks_reason": profile.clocks_reason,
        "warning": clocks.warning if clocks is not None else None,
        "window": clocks.window if clocks is not None else None,
        "kernels_us": {k.name: k.avg_us for k in profile.kernels},
        "call_wall_ms": profile.call_wall_ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("module", type=Path)
    parser.add_argument("--device", default="vulkan")
    parser.add_argument("--idle-timeout", type=float, default=60.0, help="longest wait for the clock to fall")
    parser.add_argument("--profile-calls", type=int, default=5)
    parser.add_argument(
        "--warmup-s", type=float, default=0.0,
        help="warm-up before each pass (the product's default is 2.0; 0 meets the idle clock head on)",
    )  # fmt: skip
    parser.add_argument("--json", type=Path)
    parser.add_argument("--dry-run", action="store_true", help="no GPU clock (lavapipe): check the steps only")
    args = parser.parse_args()

    clock, reason = gpu_clock_for(resolve_device(args.device))
    if clock is None and not args.dry_run:
        raise SystemExit(f"no GPU clock to watch: {reason} (--dry-run pauses --idle-timeout seconds instead)")
    config = RunConfig(
        target=str(args.module),
        device=args.device,
        iterations=None,
        warmup_s=args.warmup_s,
        profile_calls=args.profile_calls,
        renderdoc="off",
        check=False,
    )
    session = Session(config)
    session.start()
    result: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "device": args.device, "gpu": clock and clock.label}
    read_mhz = (lambda: (clock.read().sm_mhz, clock.read().max_sm_mhz)) if clock else (lambda: (0, None))
    try:
        wait_for(session, lambda s: s.state == "running" and s.calls.count > 20, 120, "calls")
        time.sleep(2.0)
        session.pause()
        idle: list[tuple[float, int]] = []
        paused_at = time.monotonic()
        while time.monotonic() - paused_at < args.idle_timeout:
            sm_mhz, max_mhz = read_mhz()
            idle.append((round(time.monotonic() - paused_at, 2), sm_mhz))
            if max_mhz and sm_mhz < 0.5 * max_mhz:
                break
            time.sleep(0.5)
        result["idle"] = {"seconds": idle[-1][0], "readings": idle}
        print(f"paused {idle[-1][0]:.1f} s: SM clock {idle[0][1]} -> {idle[-1][1]} MHz", flush=True)
        before = read_mhz()[0]
        session.resume()
        cold = profile_now(session, session.snapshot.profile, 120)
        result["cold"] = pass_of(cold, before)
        time.sleep(3.0)
        before = read_mhz()[0]
        warm = profile_now(session, cold, 120)
        result["warm"] = pass_of(warm, before)
    finally:
        session.stop()
        session.wait(60)
    rows = []
    for name, cold_us in result["cold"]["kernels_us"].items():
        warm_us = result["warm"]["kernels_us"].get(name)
        rows.append(
            {"kernel": name, "cold_us": cold_us, "warm_us": warm_us, "ratio": cold_us / warm_us if warm_us else None}
        )
    cold_mhz = (result["cold"]["clocks"] or {}).get("mean_sm_mhz")
    warm_mhz = (result["warm"]["clocks"] or {}).get("mean_sm_mhz")
    result["kernels"] = rows
    result["clock_ratio"] = warm_mhz / cold_mhz if cold_mhz and warm_mhz else None
    result["flagged"] = {label: bool(result[label]["warning"]) for label in ("cold", "warm")}
    for label in ("cold", "warm"):
        one = result[label]
        print(f"{label}: SM {one['sm_mhz_just_before']} MHz just before; warning: {one['warning'] or 'none'}")
        if one["window"]:
            print(f"  {one['window']}")
    for row in rows:
        print(
            f"  {row['kernel']}: {row['cold_us']:.1f} µs cold, {row['warm_us'] or 0:.1f} µs warm, "
            f"x{row['ratio'] or 0:.2f}"
        )
    flagged = ", ".join(f"{label} {'yes' if on else 'no'}" for label, on in result["flagged"].items())
    print(f"clock ratio warm/cold: {result['clock_ratio']}; flagged: {flagged}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
