"""gputop's kernel times against an independent reference, from the same run.

- `--against iree-profile`: the `.ireeprof` of a `gputop run --profile` report is
  read again with `iree-profile dispatch`; counts and times must be equal.
- `--against ncu --ncu-csv F`: CUDA kernel times from CUPTI (gputop) against
  Nsight Compute's `gpu__time_duration.sum` for the same kernels (target:
  within 10%). Make F with
  `ncu --metrics gpu__time_duration.sum --csv --clock-control none ... > F`.

It also prints the profiling overhead the report measured (a profiled call's
synced time over the steady p50 of the same run). Prints a table, writes JSON.

Usage: python bench/kernel_truth.py REPORT.json --against iree-profile|ncu [--ncu-csv F] [--json OUT]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import subprocess
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

UNITS_TO_US = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}


def iree_profile_rows(bundle: str) -> dict[str, dict[str, Any]]:
    from gputop.core.profiling.ireeprof.tools import runtime_tool

    proc = subprocess.run(
        [runtime_tool("iree-profile"), "dispatch", "--format=jsonl", bundle], capture_output=True, text=True, check=True
    )
    rows = {}
    for line in proc.stdout.splitlines():
        row = json.loads(line)
        if row["type"] in ("dispatch_group", "host_dispatch_group"):
            rows[row["key"]] = {
                "count": row["count"],
                "avg_us": row["avg_ns"] / 1e3,
                "min_us": row["min_ns"] / 1e3,
                "max_us": row["max_ns"] / 1e3,
                "total_us": row["total_ns"] / 1e3,
            }
    return rows


def ncu_rows(text: str) -> dict[str, dict[str, Any]]:
    lines = [line for line in text.splitlines() if line.startswith('"')]
    samples: dict[str, list[float]] = defaultdict(list)
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        samples[row["Kernel Name"]].append(value * UNITS_TO_US.get(row.get("Metric Unit", "nsecond"), 1e-3))
    return {name: {"count": len(v), "avg_us": sum(v) / len(v)} for name, v in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--against", choices=("iree-profile", "ncu"), required=True)
    parser.add_argument("--ncu-csv", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    report = json.loads(args.report.read_text())
    ours = {k["name"]: k for k in report["kernels"]}
    if args.against == "iree-profile":
        theirs = iree_profile_rows(report["profile"]["profile_path"])
    else:
        if args.ncu_csv is None:
            raise SystemExit("--against ncu needs --ncu-csv")
        theirs = ncu_rows(args.ncu_csv.read_text())
    rows = []
    for name, kernel in ours.items():
        ref = theirs.get(name)
        ratio = kernel["avg_us"] / ref["avg_us"] if ref else None
        rows.append(
            {
                "kernel": name,
                "gputop_count": kernel["count"],
                "gputop_avg_us": kernel["avg_us"],
                "reference_count": ref["count"] if ref else None,
                "reference_avg_us": ref["avg_us"] if ref else None,
                "ratio": ratio,
                "equal": bool(ref) and ref["count"] == kernel["count"] and abs(ref["avg_us"] - kernel["avg_us"]) < 1e-3,
            }
        )
    width = max(len(r["kernel"]) for r in rows)
    print(f"{'kernel'.ljust(width)}  {'gputop avg us':>14}  {args.against + ' avg us':>18}  ratio")
    for r in rows:
        ref = f"{r['reference_avg_us']:.3f}" if r["reference_avg_us"] is not None else "missing"
        ratio = f"{r['ratio']:.4f}" if r["ratio"] is not None else "-"
        print(f"{r['kernel'].ljust(width)}  {r['gputop_avg_us']:>14.3f}  {ref:>18}  {ratio}")
    overhead = (report.get("profile") or {}).get("overhead_ratio")
    if overhead:
        print(
            f"profiling overhead: profiled call {report['call_wall_ms']:.3f} ms vs steady p50 "
            f"{report['calls']['p50_ms']:.3f} ms = {overhead:.3f}x"
        )
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "device": (report.get("device") or {}).get("name"),
        "against": args.against,
        "rows": rows,
        "all_equal": all(r["equal"] for r in rows),
        "max_deviation": max((abs(r["ratio"] - 1) for r in rows if r["ratio"]), default=None),
        "profiling_overhead": overhead,
    }
    print(f"all equal: {result['all_equal']}  max deviation: {result['max_deviation']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
