"""Measured against estimated, per kernel: the tables of `gputop run --profile --counters --json` reports.

One Markdown table per report, its rows the kernels by total time: the profile
pass's average time beside ncu's, the FLOPs the counters measured against the
estimate (from the IR or the dispatch name) and their ratio, the bytes DRAM
served against the estimated bytes, L2 bytes, SM and DRAM throughput, achieved
occupancy and ncu's verdict. Above each table: what the counters pass cost
(its wall time and calls) and the run's own calls meanwhile. These are the
tables BENCHMARKS.md's issue #30 section holds.

Usage: python bench/counters_table.py REPORT.json [...] [--markdown OUT] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def estimate_of(kernel: dict[str, Any]) -> tuple[float | None, float | None, str | None]:
    if kernel.get("work_source") == "counters":
        return kernel.get("estimate_flops"), kernel.get("estimate_bytes"), kernel.get("estimate_source")
    return kernel.get("flops"), kernel.get("bytes"), kernel.get("work_source")


def ratio(measured: float | None, estimate: float | None) -> float | None:
    return measured / estimate if measured is not None and estimate else None


def rows_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for kernel in report.get("kernels") or []:
        c = kernel.get("counters")
        if not c:
            continue
        flops, size, source = estimate_of(kernel)
        dram = None
        if c.get("dram_read_bytes") is not None and c.get("dram_write_bytes") is not None:
            dram = c["dram_read_bytes"] + c["dram_write_bytes"]
        rows.append(
            {
                "kernel": kernel["name"],
                "avg_us": kernel.get("avg_us"),
                "ncu_us": c.get("time_us"),
                "launches": c.get("launches"),
                "flops": c.get("flops"),
                "estimate_flops": flops,
                "flops_ratio": ratio(c.get("flops"), flops),
                "estimate_source": source,
                "tensor_ops": c.get("tensor_ops"),
                "dram_bytes": dram,
                "estimate_bytes": size,
                "bytes_ratio": ratio(dram, size),
                "l2_bytes": c.get("l2_bytes"),
                "sm_pct": c.get("sm_pct"),
                "dram_pct": c.get("dram_pct"),
                "occupancy_pct": c.get("occupancy_pct"),
                "sm_mhz": c.get("sm_mhz"),
                "verdict": c.get("verdict"),
                "absent": c.get("absent"),
            }
        )
    return rows


def cell(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def markdown(path: Path, report: dict[str, Any]) -> str:
    counters = report.get("counters_pass") or {}
    head = [f"### {path.stem}: {report.get('target')} on {(report.get('device') or {}).get('name')}", ""]
    if counters.get("error"):
        return "\n".join([*head, f"counters pass: none ({counters['error']})", ""])
    head.append(
        f"counters pass: {counters.get('source')}, {counters.get('calls')} call in {cell(counters.get('wall_s'))} s "
        f"wall; the run made {counters.get('live_calls')} calls meanwhile"
    )
    head += ["", "| kernel | avg µs | ncu µs | FLOPs | est. | meas/est | DRAM B | est. B | meas/est | L2 B | SM % "
             "| DRAM % | occ. % | verdict |", "|" + " --- |" * 14]  # fmt: skip
    for row in rows_of(report):
        head.append(
            "| "
            + " | ".join(
                [
                    row["kernel"],
                    cell(row["avg_us"]),
                    cell(row["ncu_us"]),
                    cell(row["flops"]),
                    f"{cell(row['estimate_flops'])} ({row['estimate_source'] or '-'})",
                    cell(row["flops_ratio"]),
                    cell(row["dram_bytes"]),
                    cell(row["estimate_bytes"]),
                    cell(row["bytes_ratio"]),
                    cell(row["l2_bytes"]),
                    cell(row["sm_pct"]),
                    cell(row["dram_pct"]),
                    cell(row["occupancy_pct"]),
                    row["verdict"] or "-",
                ]
            )
            + " |"
        )
    return "\n".join([*head, ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    tables, data = [], {}
    for path in args.reports:
        try:
            report = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            tables.append(f"### {path.stem}\n\nunreadable report: {exc}\n")
            continue
        tables.append(markdown(path, report))
        data[path.stem] = {"counters_pass": report.get("counters_pass"), "kernels": rows_of(report)}
    text = "\n".join(tables)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    if args.json:
        args.json.write_text(json.dumps(data, indent=2) + "\n")


if __name__ == "__main__":
    main()
