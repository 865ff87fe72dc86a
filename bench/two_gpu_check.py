"""Check the affinity corpus on two real devices: outputs, observed copies, `gputop run` and `gputop affinity`.

The runtime half of issue 35, for a machine with two GPUs and no compiler
(`bench/gpu/two_gpu_check.sh`): every plan that `bench/prepare_two_gpu_bundle.py` made
here is run on the two devices its backend names, through the product's own
code where there is one:

- `run`: one call by IREE's `iree-run-module` with every output compared to
  the two-local-task reference (max abs error, NaN count: IREE 3.13's
  two-device Vulkan NaN would show here); one call profiled by
  `iree-benchmark-module` (gputop's `profiled_calls_command`) whose copies
  are matched with the plan by gputop's `match_copies` (CUDA: tried once, to
  show what IREE says); and `gputop run VMFB --devices ... --check` (exit
  code, check, each device's memory row).
- `affinity` (once the compiler is there): `gputop affinity` on the source,
  the whole analysis and observation on the GPUs, compared with the corpus's
  hand-read tables (`tests/test_affinity_corpus.py`).

Writes one JSON line per plan to DIR/PART.jsonl as each finishes (a call
that runs out of device time keeps what ran) and prints them; jobs run in
parallel.

Usage: python bench/two_gpu_check.py MANIFEST --part run|affinity --out DIR [--jobs 8]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from gputop.core.errors import UsageError
from gputop.core.module.check import compare_outputs
from gputop.core.module.device_discovery import resolve_device
from gputop.core.multidevice.affinity import FunctionAffinity
from gputop.core.multidevice.transfer_check import match_copies
from gputop.core.processes import first_line, last_line
from gputop.core.profiling.ireeprof.queue_events import load_queue_log
from gputop.core.profiling.ireeprof.tools import device_uri, profiled_calls_command, runtime_tool
from gputop.core.records.base import to_json

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from test_affinity_corpus import CASES, CORPUS  # noqa: E402

GPUTOP = [sys.executable, "-m", "gputop.tui"]
TIMEOUT_S = 60  # a call that has not returned by then never will (CUDA on two H100s): the next step is skipped


def run(command: list[str], log: Path) -> tuple[int, str]:
    started = time.monotonic()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=ROOT, check=False)
        code, text = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, text = 124, f"timed out after {TIMEOUT_S} s: {exc}"
    log.write_text(f"$ {' '.join(command)}\n# {time.monotonic() - started:.1f} s, exit {code}\n{text}")
    return code, text


def error_line(text: str) -> str:
    """IREE's status line (`...: INTERNAL; ...`) or the last line: what the summary quotes."""
    for line in text.splitlines():
        if "; " in line and any(w in line for w in ("INTERNAL", "UNAVAILABLE", "INVALID", "ABORTED", "RESOURCE")):
            return line.strip()[:240]
    return (last_line(text) or "")[:240]


def specs(plan: dict[str, Any]) -> list[str]:
    return list(plan["devices"].values())


def check_outputs(plan: dict[str, Any], outputs: list[Path]) -> dict[str, Any]:
    """IREE's outputs against the two-local-task reference, by gputop's own check (within 1e-4 of the
    largest reference value; NaN only where the reference has NaN), with the NaNs counted apart."""
    if not all(path.exists() for path in outputs):
        return {"outputs": "missing"}
    got = [np.load(path) for path in outputs]
    for path in outputs:
        path.unlink()
    try:
        check = compare_outputs(got, [np.load(ROOT / ref) for ref in plan["expected"]], rtol=1e-4, atol=0.0,
                                reference="the two-local-task run")  # fmt: skip
    except UsageError as exc:  # a shape that differs
        return {"outputs": exc.message}
    nans = sum(int(np.isnan(array).sum()) for array in got if array.dtype.kind == "f")
    return {"outputs": "match" if check.passed else "DIFFER", "max_abs_err": check.max_abs_err, "nan": nans}


def run_part(plan_path: str, out: Path, try_cuda_profile: bool) -> dict[str, Any]:
    plan = json.loads((ROOT / plan_path).read_text())
    label = Path(plan_path).name.removesuffix("_plan.json")
    devices = [resolve_device(spec) for spec in specs(plan)]
    row: dict[str, Any] = {"label": label, "case": plan["case"], "backend": plan["backend"],
                           "devices": [d.id for d in devices], "names": [d.name for d in devices]}  # fmt: skip
    vmfb = ROOT / plan["vmfb"]
    outputs = [out / f"{label}_out{i}.npy" for i in range(len(plan["expected"]))]
    code, text = run(
        [runtime_tool("iree-run-module"), f"--module={vmfb}", *[f"--device={device_uri(d)}" for d in devices],
         f"--function={plan['function']}", *[f"--input={a}" for a in plan["input_args"]],
         *[f"--output=@{p}" for p in outputs]],
        out / f"{label}_run.log",
    )  # fmt: skip
    checked = check_outputs(plan, outputs) if code == 0 else {"error": error_line(text)}
    row["iree_run_module"] = {"exit": code, **checked}
    if code == 124:
        return row  # a hung call: the profiled call and gputop run would hang the same way
    if plan["backend"] != "cuda" or try_cuda_profile:
        bundle = out / f"{label}.ireeprof"
        if plan["backend"] == "cuda":  # gputop does not ask (IREE 3.13 has no HAL-native CUDA profiling): show it
            command = [runtime_tool("iree-benchmark-module"), f"--module={vmfb}",
                       *[f"--device={device_uri(d)}" for d in devices], f"--function={plan['function']}",
                       *[f"--input={a}" for a in plan["input_args"]], "--device_profiling_mode=queue-events",
                       f"--device_profiling_output={bundle}", "--benchmark_min_time=1x"]  # fmt: skip
        else:
            command = profiled_calls_command(vmfb, devices, plan["function"], plan["input_args"], bundle)
        code, text = run(command, out / f"{label}_profile.log")
        observed: dict[str, Any] = {"exit": code}
        if code == 0 and bundle.exists():
            copies = load_queue_log(bundle, runtime_tool("iree-profile")).copies()
            matched, unexplained = match_copies(FunctionAffinity.from_plan(plan), copies)
            observed |= {
                "copies_seen": to_json(list(copies)),
                "unexplained": len(unexplained),
                "observed_bytes": [t.observed_bytes for t in matched.transfers],
                "records_observed": [r.observed_transfer_bytes for r in matched.records],
            }
            bundle.unlink()
        else:
            observed["error"] = error_line(text)
        row["profiled_call"] = observed
    report = out / f"{label}_gputop_run.json"
    given = [f"--input={a}" for a in plan["input_args"]] + [f"--check={ROOT / e}" for e in plan["expected"]]
    code, text = run(
        [*GPUTOP, "run", str(vmfb), "--devices", ",".join(specs(plan)), "-f", plan["function"], "-n", "3",
         *given, "--json", str(report), "--quiet"],
        out / f"{label}_gputop_run.log",
    )  # fmt: skip
    gputop_run: dict[str, Any] = {"exit": code}
    if report.exists():
        data = json.loads(report.read_text())
        gputop_run |= {
            "check": (data.get("check") or {}).get("passed"),
            "memory": [(d["device_id"], d.get("peak_live_bytes"), d.get("device_used_bytes"), d.get("source"),
                        [p["memory_type"] for p in d.get("pools", []) if p.get("peak_bytes")])
                       for d in (data.get("memory") or {}).get("devices", [])],
        }  # fmt: skip
    if code != 0:
        gputop_run["error"] = first_line(text.strip().splitlines()[-1] if text.strip() else "")
    row["gputop_run"] = gputop_run
    return row


def affinity_part(plan_path: str, out: Path) -> dict[str, Any]:
    plan = json.loads((ROOT / plan_path).read_text())
    label = Path(plan_path).name.removesuffix("_plan.json")
    case = CASES[plan["case"]]
    target = case.target if case.target.startswith("demo:") else str(CORPUS / case.target)
    report = out / f"{label}_affinity.json"
    code, text = run(
        [*GPUTOP, "affinity", target, "--devices", ",".join(specs(plan)), *[f"--input={v}" for v in case.inputs],
         "--json", str(report)],
        out / f"{label}_affinity.log",
    )  # fmt: skip
    row: dict[str, Any] = {"label": label, "case": plan["case"], "backend": plan["backend"], "exit": code}
    if code != 0 or not report.exists():
        row["error"] = error_line(text)
        return row
    data = json.loads(report.read_text())
    fields = ("kind", "index", "declared", "export_affinity", "producer_affinity", "transfer_bytes", "flag")
    got = [tuple(r[f] for f in fields) for r in data["exports"]]
    row["records_as_corpus"] = got == [tuple(r[:7]) for r in case.records]
    moves = [(t["source"], t["target"], t["bytes"], t["op"]) for t in data["transfers"]]
    row["transfers_as_corpus"] = moves == [tuple(m[:4]) for m in case.transfers]
    row["producers"] = [f"{r['kind'][0]}{r['index']}:{r['producer_affinity']}->{r['export_affinity']}"
                        for r in data["exports"]]  # fmt: skip
    row["transfers"] = [
        f"{t['source']}->{t['target']} {t['bytes']} {t['op'].split('.')[-1]}" for t in data["transfers"]
    ]
    row["observed_bytes"] = [t["observed_bytes"] for t in data["transfers"]]
    row["observed_as_corpus"] = row["observed_bytes"] == [m[4] for m in case.transfers]
    row["observation"] = data["observation"].get("notes", [])[:2]
    row["unexplained"] = data["observation"].get("unexplained_copies", [])
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("manifest", type=Path)
    parser.add_argument("--part", choices=("run", "affinity"), required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    plans = json.loads(args.manifest.read_text())
    started = time.monotonic()
    first_cuda = next((p for p in plans if "_cuda2_" in p), None)
    lock = threading.Lock()
    results = args.out / f"{args.part}.jsonl"

    def one(plan: str) -> None:
        try:
            row = run_part(plan, args.out, plan == first_cuda) if args.part == "run" else affinity_part(plan, args.out)
        except Exception as exc:  # one plan's failure is a row, not the end of the others
            row = {"label": Path(plan).name, "failed": f"{type(exc).__name__}: {exc}"}
        with lock, results.open("a") as out:
            out.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)

    with ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(one, plans))
    print(f"# {args.part}: {len(plans)} plans in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
