#!/usr/bin/env python3
"""CUPTI PM sampling probe for the GPU machine (issue 30, item 4): why did PM sampling answer
ERROR_INVALID_PARAMETER on the H100, and is a live SM/DRAM throughput strip possible?

There (driver 580.159.04, CUDA 13.0) cupti-python 13.4's Collector.enable() worked (GH100) but configure() and
ProfilerHost(...).initialize() failed for every metric; initialize() takes no metric, so the host object itself failed.
Suspects told apart here: (a) libcupti 13.4 dlopen()ing an older libnvperf_host.so by soname from the linker's path
(cupti-python's docs: the nvperf libraries beside libcupti must be on LD_LIBRARY_PATH); (b) CUPTI < 13.2 handed 13.4's
CUpti_Profiler_Host_Initialize_Params size, 56 bytes (13.0's header ends it at pHostObject, 48; the PM sampling structs
keep their sizes, which fits enable() working); (c) the NULL counter availability image cupti-python passes where
NVIDIA's C pm_sampling sample passes cuptiPmSamplingGetCounterAvailability's.
Then the chip's PM sampling metrics, the candidates that fit one pass, enable -> set config (1 ms) -> start -> GPU work
with a decode every 100 ms (the strip's loop) -> stop -> decode -> evaluate, and the wheel's Collector to compare.
Each step prints its outcome (a failure: the exception's full repr); later steps run where they still mean something.

Usage (GPU machine, after `source bench/gpu/setup.sh`; run it once more with --no-preload to compare):
  python3 bench/gpu/pm_sampling_probe.py [--vmfb .device/perturb/mm2_cuda.vmfb --function mm2 --input
      .device/perturb/mm2_in0.npy ...] [--metrics a,b] [--no-preload] [--seconds 1] [--interval-ns 1000000]
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import os
import subprocess
import sys
import time
import weakref
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

CANDIDATES = [  # the strip's metrics first, then NVIDIA's C sample defaults, the Python sample's, fallbacks
    "gr__cycles_elapsed.max",
    "gr__cycles_active.avg",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__cycles_active.avg",
    "gpu__time_duration.sum",
    "sm__inst_executed_realtime.avg.per_cycle_active",
    "sm__cycles_elapsed.sum",
    "dram__read_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum",
    "pcie__read_bytes.sum",
    "pcie__write_bytes.sum",
    "sm__inst_executed.sum",
]
KEYS = ("sm__throughput", "dram__throughput", "gr__cycles")
cc: Any = None  # cupti.cupti, once imported


def step(name: str, fn: Callable[[], Any]) -> tuple[bool, Any]:
    """Run one step, print its outcome (any exception's full repr and CUPTI result name) and never raise."""
    try:
        value = fn()
    except Exception as error:  # a probe: every failure is a finding
        status = getattr(error, "status", None)
        extra = f" [{cc.Result(status).name}]" if cc is not None and status in set(cc.Result) else ""
        print(f"[FAIL] {name}: {error!r}{extra}", flush=True)
        return False, None
    long = isinstance(value, (list, np.ndarray)) and len(value) > 16
    print(f"[ ok ] {name}: {f'<{type(value).__name__} of {len(value)}>' if long else value}", flush=True)
    return True, value


def cupti_call(name: str, call: bool = True, **fields: Any) -> Any:
    """The engine's own `pm_sampler.cupti_call` on `cupti.cupti` (imported in main)."""
    from gputop.core.profiling.cupti.pm_sampler import cupti_call as engine_call

    return engine_call(cc, name, call, **fields)


def mapped_libs() -> list[str]:
    paths = {line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines() if "/" in line}
    return sorted(p for p in paths if Path(p).name.startswith(("libcupti", "libnvperf", "libcuda.so")))


def environment() -> dict[str, Any]:
    report: dict[str, Any] = {"python": sys.version.split()[0], "LD_LIBRARY_PATH": os.environ.get("LD_LIBRARY_PATH")}
    for module, dist in (
        ("cuda.pathfinder", "cuda-pathfinder"),
        ("cuda.bindings", "cuda-bindings"),
        ("cupti", "cupti-python"),
        ("nvidia", "nvidia-cuda-cupti"),
        ("iree.runtime", "iree-base-runtime"),
    ):
        report[dist] = []
        for get in (
            lambda d=dist: version(d),
            lambda m=module: getattr(importlib.util.find_spec(m), "origin", None),
        ):
            try:
                report[dist].append(get())
            except Exception as error:
                report[dist].append(repr(error))
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=20).stdout.splitlines()
        report["ldconfig"] = [line.strip() for line in out if "cupti" in line or "nvperf" in line]
    except Exception as error:
        report["ldconfig"] = repr(error)
    return report


def preload() -> str:
    """Map the wheel's libcupti and nvperf libraries (nvidia/cu13/lib on sys.path, /tmp/site with setup.sh) first:
    later dlopen()s by soname, cupti-python's and CUPTI's own, then get these copies."""
    dirs = [Path(entry or ".") / "nvidia" / "cu13" / "lib" for entry in sys.path]
    directory = next((d.resolve() for d in dirs if (d / "libcupti.so.13").exists()), None)
    if directory is None:
        raise FileNotFoundError("no nvidia/cu13/lib/libcupti.so.13 under any sys.path entry")
    for name in ("libcupti.so.13", "libnvperf_target.so", "libnvperf_host.so"):
        ctypes.CDLL(str(directory / name), mode=ctypes.RTLD_GLOBAL)
    return str(directory)


def cuda_init() -> str:
    lib, driver = ctypes.CDLL("libcuda.so.1"), ctypes.c_int()
    rcs = lib.cuInit(0), lib.cuDriverGetVersion(ctypes.byref(driver))
    return f"cuInit, cuDriverGetVersion rc {rcs}: driver CUDA {driver.value}"


def make_work(args: argparse.Namespace, rt: Any, device: Any) -> Callable[[], None]:
    """One unit of GPU work, run once here: a call of the module's function, else a 64 MiB copy there and back."""
    if not args.vmfb:
        host = np.ones(16 << 20, dtype=np.float32)

        def copy() -> None:
            rt.asdevicearray(device, host).to_host()

        copy()
        return copy
    config = rt.Config(device=device)
    context = rt.SystemContext(config=config)
    module = rt.VmModule.mmap(config.vm_instance, str(args.vmfb))
    context.add_vm_module(module)
    function = context.modules[module.name][args.function]
    inputs = [rt.asdevicearray(device, np.load(p.lstrip("@"))) for p in args.input]

    def call() -> None:
        out = function(*inputs)
        (out[0] if isinstance(out, (tuple, list)) else out).to_host()  # waits for the call

    call()
    return call


def host_class(ph: Any, chip: str) -> type:
    class PmHost(ph.ProfilerHost):
        """A ProfilerHost whose initialize() can pass a counter availability image and a struct size
        (cupti-python's passes NULL and 13.4's size)."""

        def __init__(self, image: np.ndarray | None, size: int | None, kind: Any = ph.ProfilerType.PM_SAMPLING) -> None:
            super().__init__(chip, kind)
            self._image, self._size = image, size

        def initialize(self) -> None:
            p = cupti_call(
                "ProfilerHostInitialize",
                False,
                profiler_type=self._profiler_type,
                p_chip_name=chip,
                p_counter_availability_image=0 if self._image is None else self._image.ctypes.data,
            )
            p.struct_size = self._size or p.struct_size
            cc.profiler_host_initialize(p.ptr)
            self._p_host_object = p.p_host_object
            self._finalizer = weakref.finalize(self, ph._profiler_host_deinitialize, self._p_host_object)

    return PmHost


def main() -> int:
    global cc
    parser = argparse.ArgumentParser(description="CUPTI PM sampling probe (issue 30 item 4)")
    parser.add_argument("--vmfb", type=Path)
    parser.add_argument("--function", default="main")
    parser.add_argument("--input", nargs="*", default=[], help="NPY files (a leading @ is dropped)")
    parser.add_argument("--metrics", help="comma-separated metrics to sample instead of the one-pass pick")
    parser.add_argument("--no-preload", action="store_true", help="let cupti-python and CUPTI find their libraries")
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--interval-ns", type=int, default=1_000_000)
    parser.add_argument("--device-index", type=int, default=0)
    args = parser.parse_args()
    dev = args.device_index
    step("environment", environment)
    if not args.no_preload:
        step("preload the wheel's libcupti, libnvperf_target, libnvperf_host", preload)
    step("cuInit (ctypes)", cuda_init)
    ok, rt = step("import iree.runtime", lambda: __import__("iree.runtime", fromlist=["runtime"]))
    ok, device = step("IREE cuda device (retains the primary context)", lambda: rt.get_device("cuda")) if ok else (0, 0)
    work = step("GPU work set-up, one call", lambda: make_work(args, rt, device))[1] if ok else None
    if not step("import cupti", lambda: __import__("cupti"))[0]:
        return 1
    import cupti.cupti
    import cupti.profiler_host as ph
    from cupti import pm_sampling
    from cupti.utils import metrics_to_c_array

    cc = cupti.cupti

    def cupti_version() -> str:
        cc.get_timestamp()  # makes cupti-python load libcupti
        path, value = next(p for p in mapped_libs() if "libcupti.so" in p), ctypes.c_uint32()
        ctypes.CDLL(path).cuptiGetVersion(ctypes.byref(value))
        return f"{value.value} (130000 = 13.0, 130401 = 13.4 update 1) from {path}"

    step("cuptiGetVersion", cupti_version)
    step("cuptiProfilerInitialize", lambda: (cupti_call("ProfilerInitialize"), "done")[1])
    step("mapped libraries after the profiler's initialisation", mapped_libs)
    ok, chip = step(
        "cuptiDeviceGetChipName (after cuptiProfilerInitialize)",
        lambda: cupti_call("DeviceGetChipName", device_index=dev).p_chip_name,
    )
    chip = chip if ok else "GH100"
    step(f"{chip!r} among nvperf_host's supported chips", lambda: chip in ph.get_supported_chips())

    def availability() -> np.ndarray:
        p = cupti_call("PmSamplingGetCounterAvailability", device_index=dev, p_counter_availability_image=0)
        image = np.zeros(p.counter_availability_image_size, dtype=np.uint8)  # the first call gave the size
        p.p_counter_availability_image = image.ctypes.data
        cc.pm_sampling_get_counter_availability(p.ptr)
        return image

    avail: np.ndarray | None = step("cuptiPmSamplingGetCounterAvailability (before enable)", availability)[1]
    pm_host = host_class(ph, chip)

    def host(image: np.ndarray | None, size: int | None, kind: Any = ph.ProfilerType.PM_SAMPLING) -> Any:
        made = pm_host(image, size, kind)
        made.initialize()
        return made

    full = cc.PROFILER_HOST_INITIALIZE_PARAMS_STRUCT_SIZE  # 56; 48 before CUPTI 13.2 (no pSinglePassMetricSetName)
    chosen: tuple[np.ndarray | None, int | None] | None = None
    for image, size, label in [
        (avail, None, f"availability image, size {full}"),
        (None, None, "NULL image, as cupti-python"),
        (avail, full - 8, "availability image, pre-13.2 size"),
        (None, full - 8, "NULL image, pre-13.2 size"),
    ]:
        if avail is None and label.startswith("availability"):
            continue
        ok, made = step(f"cuptiProfilerHostInitialize PM_SAMPLING, {label}", lambda i=image, s=size: host(i, s))
        if ok:
            made.deinitialize()
            chosen = chosen or (image, size)
    step(
        "cuptiProfilerHostInitialize RANGE_PROFILER, NULL image (control)",
        lambda: host(None, None, ph.ProfilerType.RANGE_PROFILER).deinitialize(),
    )
    if chosen is None:
        return 1

    def catalogue() -> str:
        made, types = host(*chosen), (ph.MetricType.COUNTER, ph.MetricType.RATIO, ph.MetricType.THROUGHPUT)
        by_type = {t: made.get_base_metrics(t) for t in types}
        names = [n for found in by_type.values() for n in found]
        print(f"  first 40: {names[:40]}\n  matching {KEYS}: {[n for n in names if any(k in n for k in KEYS)]}")
        for t, found in by_type.items():
            for base in set(found) & {"sm__throughput", "dram__throughput", "gr__cycles_active"}:
                print(f"  sub-metrics of {base} ({t.name}): {made.get_sub_metrics(base, t)[:24]}")
        for name in ph.get_single_pass_sets(chip)[:4]:
            print(f"  single-pass set {name}: {ph.get_metrics_in_single_pass_set(chip, name)[:16]}")
        made.deinitialize()
        return f"{len(names)} base metrics ({', '.join(f'{t.name} {len(f)}' for t, f in by_type.items())})"

    step("the chip's PM sampling base metrics and single-pass sets", catalogue)

    def passes(metrics: list[str]) -> int:
        made = host(*chosen)
        try:
            return ph.get_num_of_passes(made.create_config_image(metrics))
        finally:
            made.deinitialize()

    metrics = [m.strip() for m in (args.metrics or "").split(",") if m.strip()]
    if not metrics:  # greedy: each candidate that fits one pass alone, kept while the set still fits one pass
        for m in [m for m in CANDIDATES if step(f"passes for {m}", lambda m=m: passes([m]))[1] == 1]:
            if step(f"passes for {[*metrics, m]}", lambda m=m: passes([*metrics, m]))[1] == 1:
                metrics.append(m)
    print(f"metrics to sample: {metrics}", flush=True)
    ok, obj = step(
        "cuptiPmSamplingEnable", lambda: cupti_call("PmSamplingEnable", device_index=dev).p_pm_sampling_object
    )
    # One host object makes the config image and evaluates the samples, as NVIDIA's C sample does; CUPTI keeps
    # pConfig, so the config array must outlive the session.
    ok2, evaluator = step("host object for config and evaluation", lambda: host(*chosen)) if ok else (0, 0)
    ok3, config = step("config image", lambda: evaluator.create_config_image(metrics)) if ok2 and metrics else (0, 0)
    if not ok3:
        return 1

    def set_config(mode: Any) -> str:
        cupti_call(
            "PmSamplingSetConfig",
            p_pm_sampling_object=obj,
            config_size=len(config),
            p_config=config.ctypes.data,
            hardware_buffer_size=64 << 20,
            sampling_interval=args.interval_ns,
            trigger_mode=int(mode),
            hw_buffer_append_mode=int(cc.PmSamplingHardwareBufferAppendMode.KEEP_OLDEST),
        )
        return f"{mode.name}, interval {args.interval_ns}, hardware buffer 64 MiB"

    if not step("cuptiPmSamplingSetConfig", lambda: set_config(cc.PmSamplingTriggerMode.GPU_TIME_INTERVAL))[0]:
        step("cuptiPmSamplingSetConfig, SYSCLK", lambda: set_config(cc.PmSamplingTriggerMode.GPU_SYSCLK_INTERVAL))
    keep, names_ptr = metrics_to_c_array(metrics)
    ok, size = step(
        "cuptiPmSamplingGetCounterDataSize (4000 samples)",
        lambda: (
            cupti_call(
                "PmSamplingGetCounterDataSize",
                p_pm_sampling_object=obj,
                p_metric_names=names_ptr,
                num_metrics=len(metrics),
                max_samples=4000,
            ).counter_data_size
        ),
    )
    image = np.zeros(size if ok else 1, dtype=np.uint8)
    where = {"p_counter_data_image": image.ctypes.data, "counter_data_image_size": len(image)}

    def reinit() -> str:
        cupti_call(
            "PmSamplingCounterDataImageInitialize",
            p_pm_sampling_object=obj,
            counter_data_size=len(image),
            p_counter_data=image.ctypes.data,
        )
        return f"{len(image)} bytes"

    step("cuptiPmSamplingCounterDataImageInitialize", reinit)
    rows: list[tuple[float, ...]] = []

    def drain() -> str:  # as NVIDIA's sample: decode, info, each completed sample's times and values, re-initialise
        p = cupti_call("PmSamplingDecodeData", p_pm_sampling_object=obj, **where)
        info = cupti_call("PmSamplingGetCounterDataInfo", **where)
        for index in range(info.num_completed_samples):
            s = cupti_call("PmSamplingCounterDataGetSampleInfo", p_pm_sampling_object=obj, sample_index=index, **where)
            rows.append((s.start_timestamp, s.end_timestamp, *evaluator.evaluate_metric_values(image, metrics, index)))
        reinit()
        return (
            f"{info.num_completed_samples} completed of {info.num_populated_samples} populated, stop reason "
            f"{cc.PmSamplingDecodeStopReason(p.decode_stop_reason).name}, overflow {p.overflow}"
        )

    if step("cuptiPmSamplingStart", lambda: (cupti_call("PmSamplingStart", p_pm_sampling_object=obj), "on")[1])[0]:
        calls, drains, started = 0, [], time.perf_counter()
        while (now := time.perf_counter()) - started < args.seconds:
            try:
                if work is not None:
                    work()
                    calls += 1
            except Exception as error:  # reported once; the loop then only decodes
                print(f"[FAIL] work call: {error!r}", flush=True)
                work = None
            if now - started >= 0.1 * (len(drains) + 1) or work is None:
                step(f"live decode at {now - started:.2f} s", drain)
                drains.append(round((time.perf_counter() - now) * 1000, 1))
                time.sleep(0.1 if work is None else 0)
        print(f"{calls} work calls in {time.perf_counter() - started:.2f} s; live decode+evaluate ms: {drains}")
        step("cuptiPmSamplingStop", lambda: (cupti_call("PmSamplingStop", p_pm_sampling_object=obj), "off")[1])
        step("final decode", drain)
    print(f"{len(rows)} samples; columns: start_ns, end_ns, {metrics}", flush=True)
    for row in rows[:8]:
        print("  ", [round(v, 4) if isinstance(v, float) else v for v in row])
    if rows:
        table = np.array(rows, dtype=np.float64)
        print(f"  sample length median {np.median(table[:, 1] - table[:, 0]):.0f} ns")
        for i, m in enumerate(metrics):
            column = table[:, 2 + i]
            print(f"  {m}: min {column.min():.4g} mean {column.mean():.4g} max {column.max():.4g}")
    step("cuptiPmSamplingDisable", lambda: (cupti_call("PmSamplingDisable", p_pm_sampling_object=obj), "off")[1])
    evaluator.deinitialize()
    del keep  # `config` lives to the end of main, past disable: CUPTI kept its pointer
    # The wheel's own path last. Its disable() (or enable()'s roll-back) ends the profiler, and a second
    # cuptiProfilerDeInitialize crashes, so this script never calls it itself: the process ends next anyway.
    collector = pm_sampling.Collector(device_index=dev)
    if step("pm_sampling.Collector.enable()", collector.enable)[0]:
        step(
            "Collector.configure() with the same metrics",
            lambda: collector.configure(
                metrics=metrics, hardware_buffer_size=64 << 20, sampling_interval=args.interval_ns
            ),
        )
        step("Collector.disable() (ends the profiler too)", collector.disable)
    return 0


if __name__ == "__main__":
    sys.exit(main())
