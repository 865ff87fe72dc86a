"""Per-dispatch GPU times of one module by two clocks: the profile pass in a run, and a capture's replay.

The profile pass (`gputop run --profile`) reads IREE's device timestamps around
every dispatch of many back-to-back calls in the running process (warm caches,
the clock the run brought the GPU to). `gputop capture-info` replays a RenderDoc
capture of one call of the same module and reads RenderDoc's GPU duration
counter (two timestamps around each dispatch, one replay of the whole captured
frame after its buffers are restored, median over passes). This joins the two
by dispatch name, checks that the workgroup counts agree (the same dispatches,
seen by two tools), and writes one JSON file and a Markdown table.

Usage: python bench/replay_vs_profile.py PROFILE_RUN.json CAPTURE_INFO.json OUT.json [--extra NAME=FILE ...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        return {"error": f"{path}: {exc}"}
    return data if isinstance(data, dict) else {"error": f"{path}: not an object"}


def compare(profile_run: dict[str, Any], capture: dict[str, Any]) -> list[dict[str, Any]]:
    kernels = {k["name"]: k for k in profile_run.get("kernels") or []}
    rows = []
    for dispatch in capture.get("dispatch_list") or []:
        kernel = kernels.get(dispatch["name"])
        replay_us = dispatch.get("gpu_duration_us")
        profile_us = kernel.get("avg_us") if kernel else None
        rows.append(
            {
                "name": dispatch["name"],
                "workgroups_capture": dispatch.get("workgroup_count"),
                "workgroups_profile": kernel.get("workgroup_count") if kernel else None,
                "workgroups_agree": bool(kernel) and kernel.get("workgroup_count") == dispatch.get("workgroup_count"),
                "profile_avg_us": profile_us,
                "profile_min_us": kernel.get("min_us") if kernel else None,
                "profile_calls": kernel.get("count") if kernel else None,
                "replay_median_us": replay_us,
                "replay_min_us": dispatch.get("gpu_duration_us_min"),
                "replay_over_profile": round(replay_us / profile_us, 3) if replay_us and profile_us else None,
            }
        )
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    def cell(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:.1f}"
        if isinstance(value, list):
            return "x".join(str(v) for v in value)
        return str(value)

    lines = [
        "| dispatch | workgroups (capture / profile) | profile avg µs | profile min µs | replay median µs "
        "| replay min µs | replay / profile |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        groups = f"{cell(row['workgroups_capture'])} / {cell(row['workgroups_profile'])}"
        lines.append(
            f"| {row['name']} | {groups} | {cell(row['profile_avg_us'])} | {cell(row['profile_min_us'])} "
            f"| {cell(row['replay_median_us'])} | {cell(row['replay_min_us'])} | {cell(row['replay_over_profile'])} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile_run", type=Path)
    parser.add_argument("capture_info", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--extra", action="append", default=[], help="NAME=FILE: a JSON or text file to bundle")
    args = parser.parse_args()
    profile_run, capture = _load(args.profile_run), _load(args.capture_info)
    rows = compare(profile_run, capture)
    bundle: dict[str, Any] = {
        "rows": rows,
        "table": markdown(rows),
        "replay": capture.get("replay"),
        "reader": capture.get("reader"),
        "reader_note": capture.get("reader_note"),
        "captured_on": capture.get("captured_on"),
        "capture": {k: capture.get(k) for k in ("path", "bytes", "dispatches", "actions")},
        "profile": {
            "device": (profile_run.get("device") or {}).get("name"),
            "calls": profile_run.get("calls"),
            "profile": {k: (profile_run.get("profile") or {}).get(k) for k in ("calls", "call_kernel_ms", "gap_ms")},
            "kernels": profile_run.get("kernels"),
            "error": profile_run.get("error"),
        },
        "capture_info": capture,
    }
    for extra in args.extra:
        name, _, file = extra.partition("=")
        path = Path(file)
        if path.suffix == ".json":
            bundle[name] = _load(path)
        else:
            bundle[name] = path.read_text(encoding="utf-8", errors="replace")[-4000:] if path.exists() else None
    args.out.write_text(json.dumps(bundle, indent=1) + "\n", encoding="utf-8")
    print(bundle["table"])


if __name__ == "__main__":
    main()
