"""The roofline table of `gputop run --profile --json` reports: per kernel its work, rate and bound.

One Markdown table per report (model, device, the pass's clocks and the
device's peaks above it), its rows the kernels by total time: FLOPs and bytes
per dispatch (from the dispatch's IR), average time, achieved TFLOP/s and
GB/s, the share of the roof that bounds it and which roof that is. The rows
are what BENCHMARKS.md's issue #19 section holds.

Usage: python bench/roofline_table.py REPORT.json [...] [--top 10] [--json OUT] [--markdown OUT]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def clocks_line(profile: dict[str, Any]) -> str:
    clocks = profile.get("clocks")
    if not clocks:
        return f"clocks: none ({profile.get('clocks_reason') or 'not recorded'})"
    start, end = clocks["start"], clocks["end"]
    line = (
        f"clocks: SM {start['sm_mhz']} -> {end['sm_mhz']} MHz (mean {clocks['mean_sm_mhz']:.0f} of "
        f"{end.get('max_sm_mhz')}), memory {clocks['mean_mem_mhz']:.0f} MHz, {end.get('pstate')}, "
        f"{end.get('power_w') or 0:.0f} W"
    )
    if clocks.get("warning"):
        line += f"; WARNING {clocks['warning']}"
    return line


def peaks_line(profile: dict[str, Any]) -> str:
    peaks = profile.get("peaks")
    if not peaks:
        return f"peaks: none ({profile.get('peaks_reason')})"
    return (
        f"peaks: {peaks['part']}, f32 {peaks['f32_tflops']:.3g} TFLOP/s, {peaks['bandwidth_gbps']:.4g} GB/s "
        f"(x{peaks.get('compute_scale', 1):.2f} compute, x{peaks.get('bandwidth_scale', 1):.2f} memory at the "
        f"pass's clocks; {peaks['source']})"
    )


def rows(report: dict[str, Any], top: int) -> list[dict[str, Any]]:
    function = report.get("function") or ""
    kept = []
    for kernel in report["kernels"][:top]:
        name = kernel["name"].removeprefix(f"{function}$async_").removeprefix(f"{function}_")
        pct = kernel["pct_peak_bandwidth"] if kernel.get("bound") == "memory" else kernel.get("pct_peak_compute")
        kept.append(
            {
                "kernel": name,
                "per_call": kernel["per_call"],
                "flops": kernel.get("flops"),
                "bytes": kernel.get("bytes"),
                "avg_us": kernel["avg_us"],
                "achieved_tflops": kernel.get("achieved_tflops"),
                "achieved_gbps": kernel.get("achieved_gbps"),
                "pct_of_roof": pct,
                "bound": kernel.get("bound"),
            }
        )
    return kept


def _cell(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def markdown(path: Path, report: dict[str, Any], top: int) -> str:
    profile = report.get("profile") or {}
    device = (report.get("device") or {}).get("id", "?")
    lines = [
        f"**{Path(report['target']).stem} on {device}** ({profile.get('source')}, {profile.get('calls')} calls; "
        f"`{path.name}`)  ",
        clocks_line(profile) + "  ",
        peaks_line(profile),
        "",
        "| kernel | per call | FLOPs | bytes | avg | achieved | GB/s | % of roof | bound |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows(report, top):
        lines.append(
            f"| {row['kernel']} | {row['per_call']:g} | {_cell(row['flops'], ',')} | {_cell(row['bytes'], ',')} | "
            f"{row['avg_us']:.1f} µs | {_cell(row['achieved_tflops'], '.3f')} TFLOP/s | "
            f"{_cell(row['achieved_gbps'], '.1f')} | {_cell(row['pct_of_roof'], '.1f')}% | {row['bound'] or '-'} |"
        )
    if len(report["kernels"]) > top:
        lines.append(f"| ... {len(report['kernels']) - top} more kernels | | | | | | | | |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", type=Path, nargs="+")
    parser.add_argument("--top", type=int, default=10, help="kernels per table, by total time (default 10)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    tables, data = [], []
    for path in args.reports:
        report = json.loads(path.read_text())
        if not report.get("kernels"):
            tables.append(f"**{path.name}**: no kernels ({report.get('error') or 'no profile'})\n")
            continue
        tables.append(markdown(path, report, args.top))
        profile = report.get("profile") or {}
        data.append(
            {
                "report": str(path),
                "target": report["target"],
                "device": report.get("device"),
                "clocks": profile.get("clocks"),
                "peaks": profile.get("peaks"),
                "call_wall_ms": report.get("call_wall_ms"),
                "call_kernel_ms": report.get("call_kernel_ms"),
                "kernels": rows(report, len(report["kernels"])),
            }
        )
    text = "\n".join(tables)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    if args.json:
        args.json.write_text(json.dumps(data, indent=2))


if __name__ == "__main__":
    main()
