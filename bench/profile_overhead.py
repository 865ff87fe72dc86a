"""What a profile pass costs, part by part, and whether the pass's own figure says the same.

Issue 28: a pass explains the calls it made, so those calls must be the
user's calls. This measures, in alternating rounds of one run, the mean call
time with each part of what a pass turns on, against the same calls with
nothing on:
- IREE's tool passes (local-task, local-sync, Vulkan, HIP): `iree-benchmark-module`
  alone; with the call marks preloaded; with each `--device_profiling_mode`
  alone; with all of the pass's modes; and as the pass runs it (all modes and
  the marks). Every variant is its own tool run of `--calls` calls, in a
  new order each round, so drift is shared.
- CUDA: calls in this process with nothing on, with the pass's NVML clock watch
  reading beside them, with CUPTI kernel records only, kernels plus each of the
  breakdown's activity kinds alone, every kind (the calls a default pass's
  breakdown explains), and the pass's own `record_calls` (its kernel table's
  calls: kernel records alone, a CUPTI timestamp around each call).
Each variant's ratio is the median over rounds of its mean call against the
same round's unprofiled mean (the pass's own ratio is a ratio of means too).
Then the real pass runs `--passes` times (`profile_with_ireeprof`, or the CUPTI
pass against the run's newest calls) and its self-reported `profile.overhead`
is set beside the bench's figure for the same variant: the two must agree
within 2%. Prints a table and writes JSON.

Usage: python bench/profile_overhead.py [--demo mlp | --vmfb M --function F --input ...] --device D [--level full]
                                        [--rounds 7] [--calls 100] [--passes 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from gputop.core.module.device_discovery import resolve_device
from gputop.core.profiling.ireeprof.call_marks import marks_environment, marks_library
from gputop.core.profiling.ireeprof.tool_pass import CALL_PROFILING_MODES, profile_with_ireeprof
from gputop.core.profiling.ireeprof.tools import (
    PROFILING_MODES,
    benchmark_call_ms,
    profiled_calls_command,
    timed_repetitions,
)
from gputop.core.profiling.overhead import PROFILE_LEVELS
from gputop.core.records.devices import DeviceInfo

AGREE = 0.02  # the pass's own ratio and the bench's within this of each other
FULL_RUN = "pass (all modes + marks)"
EXPLAINED_RUN = "run without dispatch timestamps (+ marks)"


def tool_variants(backend: str) -> dict[str, tuple[str | None, bool]]:
    """name -> (profiling modes or None, call marks preloaded): each part alone, then the pass as it runs."""
    modes = PROFILING_MODES[backend]
    variants: dict[str, tuple[str | None, bool]] = {"off": (None, False), "marks": (None, True)}
    for mode in modes.split(","):
        variants[mode] = (mode, False)
    variants["all modes"] = (modes, False)
    variants[FULL_RUN] = (modes, True)
    if backend in CALL_PROFILING_MODES:  # the default pass's second run, where the first costs over 5%
        variants[EXPLAINED_RUN] = (CALL_PROFILING_MODES[backend], True)
    return variants


def tool_mean_ms(command: list[str], calls: int, modes: str | None, marks: bool, scratch: Path) -> float:
    """One tool run of `calls` calls with `modes` (None: no profiling) and the marks; its mean call in ms."""
    timings, bundle, marks_file = scratch / "calls.json", scratch / "round.ireeprof", scratch / "marks.txt"
    run = [arg for arg in command if not arg.startswith("--device_profiling_")]
    if modes is not None:
        run += [f"--device_profiling_mode={modes}", f"--device_profiling_output={bundle}"]
    env = None
    if marks:
        library, why_not = marks_library()
        if library is None:
            raise SystemExit(f"call marks unavailable: {why_not}")
        env = marks_environment(library, marks_file)
    subprocess.run([*run, *timed_repetitions(calls, timings)], check=True, capture_output=True, env=env)
    return statistics.fmean(benchmark_call_ms(timings))


def round_order(names: list[str], index: int) -> list[str]:
    """The variants in a new order each round (seeded): a rotation keeps each one after the same neighbour, and a
    tool run that has just written a profile (its bundle flushing) slowed whichever always came next."""
    return random.Random(index).sample(names, len(names))


def tool_rounds(
    device: DeviceInfo, vmfb: Path, function: str, inputs: list[str], calls: int, rounds: int, scratch: Path
) -> dict[str, list[float]]:
    """Each variant's mean call per round, the variants in a rotating order."""
    command = profiled_calls_command(vmfb, [device], function, inputs, scratch / "unused.ireeprof")
    variants = tool_variants(device.backend)
    means: dict[str, list[float]] = {name: [] for name in variants}
    tool_mean_ms(command, calls, None, False, scratch)  # the first tool run pays the page cache and the driver
    for index in range(rounds):
        for name in round_order(list(variants), index):
            modes, marks = variants[name]
            means[name].append(tool_mean_ms(command, calls, modes, marks, scratch))
    return means


def tool_passes(
    device: DeviceInfo,
    vmfb: Path,
    function: str,
    inputs: list[str],
    calls: int,
    passes: int,
    scratch: Path,
    level: str,
) -> tuple[list[float], list[float]]:
    """The real pass's self-reported ratio (its explained calls'), `passes` times, and the ratios of the runs
    its kernel times came from where those were another run (a default pass whose full run cost over 5%)."""
    ratios, kernel_ratios = [], []
    for index in range(passes):
        folder = scratch / f"pass{index}"
        folder.mkdir()
        summary, _, _ = profile_with_ireeprof(vmfb, [device], function, inputs, calls, folder, level=level)
        assert summary.overhead is not None
        ratios.append(summary.overhead.ratio)
        if summary.kernels_overhead is not None:
            kernel_ratios.append(summary.kernels_overhead.ratio)
    return ratios, kernel_ratios


def cuda_rounds(
    device: DeviceInfo, vmfb: Path, function: str, inputs: list[str], calls: int, rounds: int, passes: int
) -> tuple[dict[str, list[float]], list[float]]:
    """CUDA in this process: each CUPTI part's mean call per round, then the pass's own ratio `passes` times."""
    from gputop.core.module.inputs import parse_input
    from gputop.core.profiling.cupti.activity import BREAKDOWN_KINDS, record_calls, record_kernels
    from gputop.core.profiling.overhead import measure_overhead, run_window
    from gputop.core.runners.iree_runner import IreeModuleRun
    from gputop.core.watch.clock_watch import ClockWatch, gpu_clock_for

    runner = IreeModuleRun([device])
    runner.open_devices()
    runner.load_module(vmfb)
    runner.create_context(function)
    runner.upload([parse_input(i) for i in inputs])

    def timed() -> list[float]:
        return runner.timed_calls(calls)

    def recorded(kinds: tuple[str, ...]) -> Callable[[], list[float]]:
        return lambda: record_kernels(timed, kinds)[1]

    def pass_walls() -> list[float]:  # the default pass: its kernel table's calls (kernel records alone)
        return record_calls(runner.steady_call, calls, apart=True).kernel_walls_s

    def breakdown_walls() -> list[float]:  # the calls its breakdown explains (every kind on)
        return record_calls(runner.steady_call, calls).breakdown_walls_s

    def clock_watched() -> list[float]:  # nothing recorded, the pass's NVML clock watch (50 ms) reading beside
        watch = ClockWatch(gpu_clock_for(device)[0])
        watch.start()
        try:
            return timed()
        finally:
            watch.stop()

    variants: dict[str, Callable[[], list[float]]] = {"off": timed, "clock watch": clock_watched}
    variants["kernels"] = recorded(())
    for kind in BREAKDOWN_KINDS:
        variants[f"kernels + {kind}"] = recorded((kind,))
    variants["all kinds (the breakdown's calls)"] = breakdown_walls
    variants["pass (record_calls)"] = pass_walls
    means: dict[str, list[float]] = {name: [] for name in variants}
    timed()  # warm up
    for index in range(rounds):
        for name in round_order(list(variants), index):
            means[name].append(statistics.fmean(variants[name]()) * 1e3)
    ratios = []
    for _ in range(passes):  # as the pass does it: the run's newest calls, then the recorded ones
        unprofiled = [s * 1e3 for s in runner.timed_calls(run_window(calls))]
        overhead = measure_overhead([s * 1e3 for s in pass_walls()], unprofiled, "bench")
        assert overhead is not None
        ratios.append(overhead.ratio)
    runner.close()
    return means, ratios


def demo_module(demo: str, device_spec: str, scratch: Path) -> tuple[Path, str, list[str]]:
    """The demo compiled for the device by a real one-call run, and its inputs as .npy files."""
    from gputop.core.run import RunConfig, Session

    session = Session(RunConfig(target=f"demo:{demo}", device=device_spec, iterations=1, session_dir=scratch / "s"))
    session.start()
    session.wait()
    compiled = session.outcome.compiled
    if compiled is None or session.snapshot.function is None:
        raise SystemExit(f"demo:{demo} did not run on {device_spec}: {session.snapshot.error}")
    inputs = []
    for index, array in enumerate(session.outcome.inputs):
        path = scratch / f"in{index}.npy"
        np.save(path, array)
        inputs.append(f"@{path}")
    return Path(compiled.vmfb_path), session.snapshot.function, inputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vmfb", type=Path)
    parser.add_argument("--demo", default="mlp")
    parser.add_argument("--device", default="local-task")
    parser.add_argument("--function")
    parser.add_argument("--input", action="append", default=[])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--level", choices=PROFILE_LEVELS, default="default", help="the real passes' level")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    device = resolve_device(args.device)
    with tempfile.TemporaryDirectory(prefix="gputop-overhead-") as tmp:
        scratch = Path(tmp)
        if args.vmfb is None:
            vmfb, function, inputs = demo_module(args.demo, args.device, scratch)
        else:
            vmfb, function, inputs = args.vmfb, args.function or "main", list(args.input)
        if device.backend == "cuda":
            means, pass_ratios = cuda_rounds(device, vmfb, function, inputs, args.calls, args.rounds, args.passes)
            kernel_ratios = []
            bench_pass = "pass (record_calls)"
            method = "in-process calls; CUPTI activity kinds on vs off, alternating rounds"
        else:
            means = tool_rounds(device, vmfb, function, inputs, args.calls, args.rounds, scratch)
            pass_ratios, kernel_ratios = tool_passes(
                device, vmfb, function, inputs, args.calls, args.passes, scratch, args.level
            )
            # The pass's own figure is its explained calls': the second run's where most passes ran one.
            bench_pass = EXPLAINED_RUN if len(kernel_ratios) * 2 > len(pass_ratios) else FULL_RUN
            method = "iree-benchmark-module runs, one per variant, alternating rounds"
    off = means["off"]
    rows: list[dict[str, Any]] = []
    for name, values in means.items():
        ratio = statistics.median(v / o for v, o in zip(values, off, strict=True))
        rows.append({"part": name, "mean_ms": statistics.median(values), "ratio": ratio})
    bench_ratio = next(float(row["ratio"]) for row in rows if row["part"] == bench_pass)
    pass_ratio = statistics.median(pass_ratios)
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"),
        "device": device.id,
        "device_name": device.name,
        "target": str(args.vmfb or f"demo:{args.demo}"),
        "method": method,
        "rounds": args.rounds,
        "calls_per_round": args.calls,
        "parts": rows,
        "rounds_ms": means,
        "level": args.level,
        "pass_self_reported_ratios": pass_ratios,
        "kernel_run_ratios": kernel_ratios,  # default passes that explained a second run: their first run's cost
        "bench_pass": bench_pass,
        "pass_self_reported_ratio": pass_ratio,
        "bench_pass_ratio": bench_ratio,
        "agree": abs(pass_ratio - bench_ratio) <= AGREE,
    }
    print(f"{device.id} ({device.name}), {result['target']}: {method}, {args.rounds} rounds of {args.calls} calls")
    print(f"  {'part':34s} {'mean ms':>9s} {'ratio':>7s}")
    for row in rows:
        print(f"  {row['part']:34s} {row['mean_ms']:9.3f} {row['ratio']:7.3f}")
    print(
        f"  the pass's own ratio: median {pass_ratio:.3f} of {len(pass_ratios)} passes "
        f"({', '.join(f'{r:.3f}' for r in pass_ratios)}); the bench's: {bench_ratio:.3f}; "
        + ("agree" if result["agree"] else "DISAGREE")
        + f" within {AGREE:.0%}"
        + (f" (against {bench_pass!r})" if bench_pass == EXPLAINED_RUN else "")
    )
    if kernel_ratios:
        print(
            f"  {len(kernel_ratios)} passes took their kernel times from a run at "
            f"{statistics.median(kernel_ratios):.3f}"
        )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
