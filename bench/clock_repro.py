"""Two profile passes, one right after idle and one after a warm-up: do their times differ as their clocks say?

The H200 measured the same matmul at 46.9 µs and 237 µs in back-to-back passes:
the SM clock was 1980 MHz in one and 345 MHz in the other. `bench/gpu/roofline.sh`
makes that happen on purpose (an idle GPU, a pass with `--warmup 0`; then a pass
with a warm-up) and this reads the two reports: each pass's SM clock, its
warning, and the kernels' times against the clock ratio. Expected: only the
cold pass flagged, and (for kernels bound by the SM clock) time ratio close
to the inverse clock ratio.

Usage: python bench/clock_repro.py COLD.json WARM.json [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any


def pass_of(report: dict[str, Any]) -> dict[str, Any]:
    profile = report.get("profile") or {}
    clocks = profile.get("clocks") or {}
    return {
        "mean_sm_mhz": clocks.get("mean_sm_mhz"),
        "start_sm_mhz": (clocks.get("start") or {}).get("sm_mhz"),
        "end_sm_mhz": (clocks.get("end") or {}).get("sm_mhz"),
        "min_sm_mhz": clocks.get("min_sm_mhz"),
        "max_sm_mhz": clocks.get("max_sm_mhz"),
        "warning": clocks.get("warning"),
        "warmup": clocks.get("warmup"),
        "clocks_reason": profile.get("clocks_reason"),
        "kernels": {k["name"]: k["avg_us"] for k in report.get("kernels", [])},
        "call_wall_ms": report.get("call_wall_ms"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cold", type=Path)
    parser.add_argument("warm", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    cold, warm = (pass_of(json.loads(p.read_text())) for p in (args.cold, args.warm))
    for label, one in (("cold", cold), ("warm", warm)):
        print(
            f"{label}: SM {one['start_sm_mhz']} -> {one['end_sm_mhz']} MHz (mean {one['mean_sm_mhz']}), "
            f"call {one['call_wall_ms']} ms, warning: {one['warning'] or 'none'}"
        )
        print(f"      {one['warmup'] or one['clocks_reason']}")
    clock_ratio = warm["mean_sm_mhz"] / cold["mean_sm_mhz"] if cold["mean_sm_mhz"] and warm["mean_sm_mhz"] else None
    rows = []
    for name, cold_us in cold["kernels"].items():
        warm_us = warm["kernels"].get(name)
        ratio = cold_us / warm_us if warm_us else None
        rows.append({"kernel": name, "cold_us": cold_us, "warm_us": warm_us, "time_ratio": ratio})
        shown = f"x{ratio:.2f}" if ratio else "-"
        print(f"  {name}: {cold_us:.1f} µs cold, {warm_us or 0:.1f} µs warm, {shown}")
    print(f"clock ratio (warm / cold mean SM clock): {f'x{clock_ratio:.2f}' if clock_ratio else 'unknown (no clocks)'}")
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "cold": cold,
        "warm": warm,
        "clock_ratio": clock_ratio,
        "kernels": rows,
        "only_cold_flagged": bool(cold["warning"]) and not warm["warning"],
    }
    print(f"only the cold pass flagged: {result['only_cold_flagged']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
