"""ONNX conformance sweep: the onnx package's own test cases through `gputop run --check`, classified.

Why: a user's first contact with gputop is often an ONNX model, and a wrong
answer or an unexplained failure hurts more than a crash. This sweep runs a
stratified sample of the onnx package's cases as a user would
(`gputop run MODEL --input @input_i.pb --check output_j.pb`) and puts each in
one class:

- passed: the outputs match the reference;
- check failed: exit 6, IREE computed other numbers;
- clear error: exit 2 or 3 with one line that names the ONNX node, op or type;
- bad: a traceback, a hang, a runtime failure, or an error that names nothing.

Cases: the node cases that `onnx.backend.test.case.node` generates (the wheel
ships the generators, not their data: each case's model and first data set are
written out here), plus the `pytorch-converted`, `pytorch-operator` and `simple`
folders of `onnx/backend/test/data`. The sample takes every op type (one case
each, more where `--per-stratum` says) so rare ops weigh as much as common ones.

Each failure also gets onnxruntime's verdict on the same model and data, run in
a separate environment (`bench/.venv-ort`, made by `--make-ort-env`): onnxruntime
is never a gputop dependency.

    .venv/bin/python bench/onnx_conformance.py --make-ort-env        # once
    .venv/bin/python bench/onnx_conformance.py --device cpu --per-stratum 1
    .venv/bin/python bench/onnx_conformance.py --device vulkan --limit 40

Results: bench/results/onnx_conformance-<device>.json and a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import time
import warnings
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
ORT_ENV = ROOT / "bench" / ".venv-ort"
DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
FOLDERS = ("pytorch-converted", "pytorch-operator", "simple")
CLASSES = ("passed", "check failed", "clear error", "bad")

# Run in onnxruntime's own environment: one process for all failures, one JSON line per case.
ORT_VERDICT = r"""
import json, sys
from pathlib import Path
import numpy as np, onnx
from onnx import numpy_helper
import onnxruntime as ort
for folder in sys.argv[1:]:
    folder = Path(folder)
    try:
        session = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        feeds = {n: numpy_helper.to_array(onnx.load_tensor(str(p)))
                 for n, p in zip(names, sorted(folder.glob("input_*.pb"), key=lambda p: int(p.stem[6:])))}
        got = session.run(None, feeds)
        want = [numpy_helper.to_array(onnx.load_tensor(str(p)))
                for p in sorted(folder.glob("output_*.pb"), key=lambda p: int(p.stem[7:]))]
        ok = all(np.allclose(np.asarray(g).astype(np.float64), np.asarray(w).astype(np.float64),
                             rtol=1e-3, atol=1e-4, equal_nan=True) for g, w in zip(got, want))
        verdict = "onnxruntime matches" if ok else "onnxruntime differs too"
    except Exception as exc:
        verdict = "onnxruntime fails: " + " ".join(str(exc).split())[:140]
    print(json.dumps({"case": folder.name, "verdict": verdict}), flush=True)
"""


def write_case(folder: Path, model: onnx.ModelProto, inputs: list[Any], outputs: list[Any]) -> bool:
    """Write a case as a folder like the onnx package's data: False when a value is not a tensor.

    Values are arrays, or TensorProtos where NumPy has no such type (the float8/float4 casts).
    """
    if not all(isinstance(v, np.ndarray | onnx.TensorProto) for v in [*inputs, *outputs]):
        return False
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(folder / "model.onnx"))
    for prefix, values in (("input", inputs), ("output", outputs)):
        for index, value in enumerate(values):
            tensor = value if isinstance(value, onnx.TensorProto) else numpy_helper.from_array(value)
            onnx.save_tensor(tensor, str(folder / f"{prefix}_{index}.pb"))
    return True


def node_cases(work: Path) -> list[dict[str, Any]]:
    """The onnx package's generated node cases with their first data set."""
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        generated = node.collect_testcases(None)
    cases = []
    for case in generated:
        if not case.data_sets:
            continue
        inputs, outputs = case.data_sets[0]
        folder = work / case.name
        if write_case(folder, case.model, list(inputs), list(outputs)):
            op = case.model.graph.node[0].op_type if case.model.graph.node else "?"
            cases.append({"case": case.name, "source": "node", "op": op, "folder": str(folder)})
    return cases


def data_cases(work: Path) -> list[dict[str, Any]]:
    """The shipped pytorch-converted, pytorch-operator and simple cases, copied as flat folders."""
    cases = []
    for source in FOLDERS:
        for model_path in sorted((DATA / source).glob("*/model.onnx")):
            data_set = model_path.parent / "test_data_set_0"
            if not data_set.is_dir():
                continue
            model = onnx.load(str(model_path))
            inputs = [numpy_helper.to_array(onnx.load_tensor(str(p))) for p in sorted(data_set.glob("input_*.pb"))]
            outputs = [numpy_helper.to_array(onnx.load_tensor(str(p))) for p in sorted(data_set.glob("output_*.pb"))]
            folder = work / f"{source}-{model_path.parent.name}"
            if write_case(folder, model, inputs, outputs):
                ops = sorted({n.op_type for n in model.graph.node})
                cases.append({"case": folder.name, "source": source, "op": "+".join(ops[:3]), "folder": str(folder)})
    return cases


def stratified(cases: list[dict[str, Any]], per_stratum: int, seed: int) -> list[dict[str, Any]]:
    """Up to `per_stratum` cases of each (source, op type), chosen with a fixed seed."""
    strata: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for case in cases:
        strata[(case["source"], case["op"])].append(case)
    rng = random.Random(seed)
    chosen = []
    for key in sorted(strata):
        group = strata[key]
        chosen += rng.sample(group, min(per_stratum, len(group)))
    return chosen


def run_case(case: dict[str, Any], device: str, timeout: float) -> dict[str, Any]:
    folder = Path(case["folder"])
    command = [str(ROOT / ".venv" / "bin" / "gputop"), "run", str(folder / "model.onnx"), "--device", device, "-n", "0"]
    for path in sorted(folder.glob("input_*.pb"), key=lambda p: int(p.stem[6:])):
        command += ["--input", f"@{path}"]
    for path in sorted(folder.glob("output_*.pb"), key=lambda p: int(p.stem[7:])):
        command += ["--check", str(path)]
    started = time.perf_counter()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {**case, "class": "bad", "why": f"hang: no end in {timeout:.0f} s", "seconds": timeout, "exit": None}
    seconds = time.perf_counter() - started
    verdict, why = classify(proc.returncode, proc.stderr)
    return {**case, "class": verdict, "why": why, "seconds": round(seconds, 2), "exit": proc.returncode}


def classify(returncode: int, stderr: str) -> tuple[str, str]:
    """(class, the line that decided it) for one finished run."""
    errors = [line.removeprefix("gputop: error: ") for line in stderr.splitlines() if line.startswith("gputop: error:")]
    line = errors[-1].split(" (full log:")[0] if errors else ""
    if "Traceback" in stderr:
        return "bad", "traceback"
    if returncode == 0:
        return "passed", ""
    if returncode == 6:
        said = [ln.removeprefix("gputop: ") for ln in stderr.splitlines() if "DO NOT match" in ln or "random" in ln]
        return "check failed", "; ".join(said) or line
    if len(errors) != 1:
        return "bad", f"exit {returncode} without one error line"
    names_it = any(
        marker in line for marker in ("ONNX node '", "ONNX nodes of op types", "ONNX graph '", "element type")
    )
    if returncode == 2 or (returncode == 3 and names_it):
        return "clear error", line
    return "bad", f"exit {returncode}, names no node: {line}"


def ort_verdicts(results: list[dict[str, Any]]) -> None:
    """onnxruntime's verdict on each failed case, from its own environment (in place)."""
    failed = [r for r in results if r["class"] != "passed"]
    python = ORT_ENV / "bin" / "python"
    if not failed or not python.exists():
        return
    proc = subprocess.run(
        [str(python), "-c", ORT_VERDICT, *(r["folder"] for r in failed)],
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    verdicts = {}
    for raw in proc.stdout.splitlines():
        row = json.loads(raw)
        verdicts[row["case"]] = row["verdict"]
    for result in failed:
        result["onnxruntime"] = verdicts.get(Path(result["folder"]).name, "onnxruntime: no verdict")


def make_ort_env() -> None:
    """bench/.venv-ort with onnxruntime, onnx and numpy: the reference runtime, never gputop's dependency."""
    subprocess.run([sys.executable, "-m", "venv", str(ORT_ENV)], check=True)
    subprocess.run([str(ORT_ENV / "bin" / "pip"), "install", "-q", "onnxruntime", "onnx", "numpy"], check=True)


def table(results: list[dict[str, Any]], device: str) -> str:
    counts = Counter(r["class"] for r in results)
    total = len(results)
    lines = [
        f"| {device} | cases | " + " | ".join(CLASSES) + " |",
        "|---|---:|" + "---:|" * len(CLASSES),
        f"| all | {total} | "
        + " | ".join(f"{counts[c]} ({100 * counts[c] / total:.0f}%)" if total else "0" for c in CLASSES)
        + " |",
    ]
    for source in ("node", *FOLDERS):
        rows = [r for r in results if r["source"] == source]
        if rows:
            by = Counter(r["class"] for r in rows)
            lines.append(f"| {source} | {len(rows)} | " + " | ".join(str(by[c]) for c in CLASSES) + " |")
    lines += ["", "| case | class | gputop says | onnxruntime |", "|---|---|---|---|"]
    for r in sorted(results, key=lambda r: (CLASSES.index(r["class"]), r["case"])):
        if r["class"] != "passed":
            why = r["why"].replace("|", "\\|")[:150]
            lines.append(f"| {r['case']} | {r['class']} | {why} | {r.get('onnxruntime', '')} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--per-stratum", type=int, default=1, help="cases per (source, op type)")
    parser.add_argument("--limit", type=int, help="at most this many cases after stratifying")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--also", metavar="REGEX", help="add every case whose name matches (e.g. 'double|bfloat16')")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--work", type=Path, default=Path("/tmp/gputop-onnx-conformance"))
    parser.add_argument("--make-ort-env", action="store_true", help="create bench/.venv-ort and exit")
    args = parser.parse_args()
    if args.make_ort_env:
        make_ort_env()
        return 0
    cases = node_cases(args.work / "node") + data_cases(args.work / "data")
    sample = stratified(cases, args.per_stratum, args.seed)
    if args.limit is not None and len(sample) > args.limit:
        sample = sorted(random.Random(args.seed).sample(sample, args.limit), key=lambda c: c["case"])
    if args.also:
        chosen = {c["case"] for c in sample}
        sample += [c for c in cases if re.search(args.also, c["case"]) and c["case"] not in chosen]
    print(f"{len(cases)} cases, {len(sample)} in the sample, on {args.device}", file=sys.stderr)
    started = time.perf_counter()
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda c: run_case(c, args.device, args.timeout), sample))
    ort_verdicts(results)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"onnx_conformance-{args.device.replace(':', '_')}.json"
    summary = {
        "device": args.device,
        "cases_generated": len(cases),
        "sample": len(sample),
        "per_stratum": args.per_stratum,
        "seed": args.seed,
        "also": args.also,
        "seconds": round(time.perf_counter() - started, 1),
        "counts": dict(Counter(r["class"] for r in results)),
        "results": results,
    }
    out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(table(results, args.device))
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
