"""Compile the affinity corpus for two GPUs here, with analysis and references, for `bench/gpu/two_gpu_check.sh`.

The GPU machines have IREE's runtime but no compiler, so everything the
compiler makes is made on this machine: for every two-device case of
`tests/test_affinity_corpus.py` (the 11 two-device modules of
`tests/data/affinity` and the two demos) and each backend, the `.vmfb`
compiled for `BACKEND:0,BACKEND:1` and one plan per exported function (the
records, transfers and planned copies of `gputop affinity`'s analysis, with
dynamic sizes already given the call's shapes): what the profiled call on the
GPUs is matched against. The inputs are the ones `gputop affinity` would use
(the corpus's given values, else random with seed 0), and the reference
outputs come from the same module compiled for two local-task devices and run
here by `iree-run-module`: a GPU result that differs (IREE 3.13's Vulkan NaN
on two H200s) shows as an error against an independent run.

Writes OUT_DIR/manifest.json (one entry per case, backend and function) and the
files it names, all relative to the repository root.

Usage: python bench/prepare_two_gpu_bundle.py .device/two_gpu [--backends cuda,vulkan] [--cases pipeline,...]
(`--backends local` makes the same files for a dry run on two local-task devices here.)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from gputop.core.module.compile import compile_module
from gputop.core.module.demos import DEMOS
from gputop.core.module.inputs import make_inputs, tool_input_args
from gputop.core.module.signature import signature_of
from gputop.core.module.targets import CUDA_FLAGS, LOCAL_FLAGS, VULKAN_NVIDIA_FLAGS, device_names
from gputop.core.multidevice.affinity import affinity_flags, analyse_module
from gputop.core.multidevice.transfer_check import input_shapes
from gputop.core.profiling.ireeprof.tools import runtime_tool

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from test_affinity_corpus import CASES, CORPUS  # noqa: E402  (the ground truth: read by hand from the stream IR)

BACKENDS = {
    "cuda": ("cuda", CUDA_FLAGS),
    "vulkan": ("vulkan", VULKAN_NVIDIA_FLAGS),  # ampere: runs on H100 and H200
    "local": ("local", LOCAL_FLAGS),
}


def source_of(target: str) -> tuple[Path, bytes]:
    if target.startswith("demo:"):
        demo = DEMOS[target.removeprefix("demo:")]
        return Path(f"{demo.name}.mlir"), demo.source()
    path = CORPUS / target
    return path, path.read_bytes()


def reference_outputs(
    source: Path, data: bytes, function: str, args: list[str], count: int, out: Path, stem: str
) -> list[str]:
    """The function's outputs on two local-task devices (the module compiled for local:0,local:1), as .npy files."""
    flags = affinity_flags(["local:0", "local:1"], [LOCAL_FLAGS, LOCAL_FLAGS])
    vmfb = compile_module(source, flags, source_bytes=data).vmfb_path
    names = [f"{stem}_expected{i}.npy" for i in range(count)]
    command = [runtime_tool("iree-run-module"), "--device=local-task", "--device=local-task", f"--module={vmfb}",
               f"--function={function}", *(f"--input={a}" for a in args),
               *(f"--output=@{out / n}" for n in names)]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{stem}: the local reference run failed: {proc.stderr.strip()[-400:]}")
    return [str((out / n).relative_to(ROOT)) for n in names]


def main() -> None:
    import iree.runtime as rt

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--backends", default="cuda,vulkan")
    parser.add_argument("--cases", default=",".join(n for n, c in CASES.items() if c.devices == 2))
    args = parser.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    manifest = []
    references: dict[str, list[str]] = {}
    for name in args.cases.split(","):
        case = CASES[name]
        source, data = source_of(case.target)
        stem = name.replace("demo:", "demo_").replace("-", "_")
        for backend in args.backends.split(","):
            kind, target_flags = BACKENDS[backend]
            specs = [f"{kind}:{i}" for i in range(case.devices)]
            flags = affinity_flags(specs, [target_flags] * case.devices)
            with tempfile.TemporaryDirectory() as stream_dir:  # the stream IR stays here, not in the bundle
                analysis = analyse_module(source, flags, Path(stream_dir), source_bytes=data)
            label = f"{stem}_{backend}{case.devices}"
            vmfb = out / f"{label}.vmfb"
            vmfb.write_bytes(compile_module(source, flags, source_bytes=data).vmfb_path.read_bytes())
            module = rt.VmModule.mmap(rt.VmInstance(), str(vmfb))
            for affinity in analysis.functions:
                signature = signature_of(module.lookup_function(affinity.function))
                arrays = make_inputs(signature, list(case.inputs))
                folder = out / f"{stem}_{affinity.function}_inputs"
                input_args = [a.replace(f"@{ROOT}/", "@") for a in tool_input_args(signature, arrays, folder)]
                key = f"{stem}/{affinity.function}"
                if key not in references:
                    references[key] = reference_outputs(
                        source, data, affinity.function, input_args, len(signature.outputs), out, key.replace("/", "_")
                    )
                shaped = affinity.with_shapes(input_shapes(signature, arrays))
                plan = {
                    "case": name,
                    **shaped.to_plan(),
                    "backend": kind,
                    "devices": dict(zip(device_names(case.devices), specs, strict=True)),
                    "flags": list(flags),
                    "input_args": input_args,
                    "expected": references[key],
                    "vmfb": str(vmfb.relative_to(ROOT)),
                }
                plan_path = out / f"{label}_{affinity.function}_plan.json"
                plan_path.write_text(json.dumps(plan, indent=2) + "\n")
                manifest.append(str(plan_path.relative_to(ROOT)))
                print(f"{label} {affinity.function}: {len(shaped.transfers)} transfers, {len(shaped.copies)} copies")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main()
