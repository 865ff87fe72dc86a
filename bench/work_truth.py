"""gputop's FLOPs and bytes per dispatch against Nsight Compute's counters for the same kernels.

gputop counts a dispatch's work from its IR (`core/profiling/work/ir_count.py`); Nsight Compute
counts what the GPU executed and moved. FLOPs: `2 x FFMA + FADD + FMUL`
thread instructions (`smsp__sass_thread_inst_executed_op_{ffma,fadd,fmul}_pred_on.sum`),
target within 1% for the matmuls. Bytes: `dram__bytes_read.sum +
dram__bytes_write.sum` with `--cache-control all` (caches flushed before each
kernel, so its inputs come from DRAM), target within 20%. Make the CSV with

    ncu --metrics <the five metrics> --cache-control all --print-units base --csv \
        iree-run-module --device=cuda --module=X.vmfb --function=F --input=... > F.csv

Usage: python bench/work_truth.py NCU.csv --work X.work.json [--json OUT]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from gputop.core.profiling.work.dispatch_work import read_work

METRICS = {
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": "ffma",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": "fadd",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": "fmul",
    "dram__bytes_read.sum": "dram_read",
    "dram__bytes_write.sum": "dram_write",
}
BYTE_UNITS = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9}
FLOPS_TOLERANCE = 0.01
BYTES_TOLERANCE = 0.20


def ncu_counters(text: str) -> dict[str, list[dict[str, float]]]:
    """Per kernel name, one dict of counters per launch (ncu's CSV, one row per metric)."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    launches: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        key = METRICS.get(row.get("Metric Name", ""))
        if key is None:
            continue
        value = float(row["Metric Value"].replace(",", "") or 0)
        value *= BYTE_UNITS.get(row.get("Metric Unit", ""), 1)
        launches[(row["Kernel Name"], row["ID"])][key] = value
    kernels: dict[str, list[dict[str, float]]] = defaultdict(list)
    for (name, _), counters in launches.items():
        kernels[name].append(counters)
    return kernels


def compare(kernels: dict[str, list[dict[str, float]]], work_path: Path) -> list[dict[str, Any]]:
    work = read_work(work_path)
    rows = []
    for name, launches in kernels.items():
        ours = work.lookup(name)
        first = launches[0]  # every launch of a dispatch does the same work; ncu's first is as cold as the rest
        ncu_flops = 2 * first.get("ffma", 0) + first.get("fadd", 0) + first.get("fmul", 0)
        ncu_bytes = first.get("dram_read", 0) + first.get("dram_write", 0)
        flops_ratio = ours.flops / ncu_flops if ours and ours.flops and ncu_flops else None
        bytes_ratio = ours.bytes / ncu_bytes if ours and ours.bytes and ncu_bytes else None
        rows.append(
            {
                "kernel": name,
                "launches": len(launches),
                "work": ours.label if ours else "not in the work file",
                "gputop_flops": ours.flops if ours else None,
                "ncu_flops": ncu_flops,
                "ncu_ffma": first.get("ffma"),
                "ncu_fadd": first.get("fadd"),
                "ncu_fmul": first.get("fmul"),
                "flops_ratio": flops_ratio,
                "flops_within_1pct": flops_ratio is not None and abs(flops_ratio - 1) <= FLOPS_TOLERANCE,
                "gputop_bytes": ours.bytes if ours else None,
                "ncu_dram_bytes": ncu_bytes,
                "bytes_ratio": bytes_ratio,
                "bytes_within_20pct": bytes_ratio is not None and abs(bytes_ratio - 1) <= BYTES_TOLERANCE,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", type=Path)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = compare(ncu_counters(args.csv.read_text(errors="replace")), args.work)
    if not rows:
        raise SystemExit(f"{args.csv}: no kernels with the five metrics (did ncu run?)")
    width = max(len(r["kernel"]) for r in rows)
    header = f"{'gputop FLOP':>14}  {'ncu FLOP':>14}  ratio   {'gputop B':>11}  {'ncu DRAM B':>11}  ratio"
    print(f"{'kernel'.ljust(width)}  {header}")
    for r in rows:
        flops_ratio = f"{r['flops_ratio']:.4f}" if r["flops_ratio"] else "-"
        bytes_ratio = f"{r['bytes_ratio']:.3f}" if r["bytes_ratio"] else "-"
        print(
            f"{r['kernel'].ljust(width)}  {r['gputop_flops'] or 0:>14}  {r['ncu_flops']:>14.0f}  {flops_ratio:>6}  "
            f"{r['gputop_bytes'] or 0:>11}  {r['ncu_dram_bytes']:>11.0f}  {bytes_ratio}"
        )
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "csv": str(args.csv),
        "work": str(args.work),
        "rows": rows,
        "flops_all_within_1pct": all(r["flops_within_1pct"] for r in rows if "matmul" in r["work"]),
        "bytes_all_within_20pct": all(r["bytes_within_20pct"] for r in rows),
    }
    flops_ok, bytes_ok = result["flops_all_within_1pct"], result["bytes_all_within_20pct"]
    print(f"matmul FLOPs within 1%: {flops_ok}  bytes within 20%: {bytes_ok}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
