"""The GPU's own counters while a run goes on: CUPTI PM sampling in the engine's process (CUDA, NVIDIA).

NVML's "utilisation" is the share of time any kernel ran: 86% for a run whose
kernels used 0.9% and 3.6% of the SMs' throughput (issue 48). The counters
pass (`ncu`) is exact but stops to replay one call. CUPTI's PM sampling reads
the hardware's performance monitors at a fixed interval while the GPU works.
It sees the work of the process that samples and no other: on an H100, a
sampler in a process of its own (with a CUDA context or without) decoded no
samples at all while another process ran matmuls beside it, and the same
sampler on a thread of the calling process decoded 4601 1 ms samples whose
SM throughput read 7.9% inside the kernel (ncu: 7.64%) and 0 between
(`bench/gpu/pm_strip.sh`). So `Sampler` runs in the engine, beside IREE's
CUDA device, and `watch.pm_watch` drains it on a thread.

GH100 needs a single-pass metric set for `sm__throughput` (19 passes plain,
one under `TriageCompute`), so the picker tries each set the chip has and
keeps the one that covers the most of the strip's roles (ROLES). Library
loading follows PLATFORM.md: with a CUDA toolkit's older libcupti found first,
`cuptiPmSamplingSetConfig` fails; the nvidia-cuda-cupti wheel's `libcupti`,
`libnvperf_target` and `libnvperf_host` loaded first work. Each failure is a
`Refusal`: one line, of a kind (`libraries`, `driver`, `permission`,
`unsupported`, `busy`, `failed`).
"""

from __future__ import annotations

import ctypes
import re
import sys
import time
import weakref
from pathlib import Path
from typing import Any

__all__ = [
    "DECODES_OF_ROOM",
    "DECODE_EVERY_S",
    "INTERVAL_MS",
    "ROLES",
    "Refusal",
    "Sampler",
    "cuda_ordinal",
    "cupti_call",
    "cupti_version",
    "library_folder",
    "load_libraries",
]

# Decoding costs about 180 us of CPU a sample and 3.6 ms a decode on an H100 (CUPTI's decode and evaluation;
# bench/gpu/pm_pattern.py --sample-inside): at 1 ms and ten decodes a second that is 28% of a core, at 10 ms and
# five a second 3.6%. The strip's points are 0.25 s and a call's figure is the overlap-weighted mean of the samples
# over it, so 10 ms is the default; --pm-interval-ms 1 resolves more where a core can be spared.
INTERVAL_MS = 10.0
DECODE_EVERY_S = 0.2  # how often the hardware buffer is decoded: the strip's newest value is this old at most
# The counter data image's room, in decodes' worth of samples: a late decode decodes again (COUNTER_DATA_FULL)
# rather than lose samples, and the image, which is set up again after every decode, stays small.
DECODES_OF_ROOM = 3
HARDWARE_BUFFER = 64 << 20
LIBRARIES = ("libcupti.so.13", "libnvperf_target.so", "libnvperf_host.so")
# What each role of the strip reads, in order of preference: the first the chip has that still fits one pass.
ROLES: dict[str, tuple[str, ...]] = {
    "sm": ("sm__throughput.avg.pct_of_peak_sustained_elapsed",),
    "tensor": (
        "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
        "sm__pipe_tensor_op_hmma_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
        "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_elapsed",
    ),
    "dram": (
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__read_throughput.avg.pct_of_peak_sustained_elapsed",
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    ),
    "clock": (
        "gpc__cycles_elapsed.avg.per_second",
        "sm__cycles_elapsed.avg.per_second",
        "gr__cycles_elapsed.avg.per_second",
        "gpc__cycles_elapsed.max",
        "gr__cycles_elapsed.max",
    ),
}
PERMISSION = (
    "the GPU's performance counters are open to admin users only (ERR_NVGPUCTRPERM): run gputop as root, or load "
    "the nvidia module with NVreg_RestrictProfilingToAdminUsers=0 (https://developer.nvidia.com/ERR_NVGPUCTRPERM)"
)


_profiler_initialized = False


class Refusal(Exception):
    """Why PM sampling cannot run here, in one line, and of which kind."""

    def __init__(self, kind: str, line: str) -> None:
        super().__init__(line)
        self.kind = kind
        self.line = line


def library_folder(paths: list[str]) -> tuple[Path | None, list[str]]:
    """The first `nvidia/cu13/lib` under `paths` holding all of LIBRARIES, and every folder looked in."""
    looked: list[str] = []
    for entry in paths:
        folder = Path(entry or ".") / "nvidia" / "cu13" / "lib"
        looked.append(str(folder))
        if all((folder / name).exists() for name in LIBRARIES):
            return folder.resolve(), looked
    return None, looked


def load_libraries() -> str:
    folder, looked = library_folder(list(sys.path))
    if folder is None:
        shown = ", ".join(dict.fromkeys(looked[:4])) + (f" and {len(looked) - 4} more" if len(looked) > 4 else "")
        raise Refusal(
            "libraries",
            f"PM sampling needs the nvidia-cuda-cupti wheel's {', '.join(LIBRARIES)} (pip install 'gputop[cuda]'); "
            f"looked in {shown}",
        )
    for name in LIBRARIES:
        try:
            ctypes.CDLL(str(folder / name), mode=ctypes.RTLD_GLOBAL)
        except OSError as exc:
            raise Refusal("libraries", f"PM sampling cannot load {folder / name}: {exc}") from exc
    try:
        import cupti.cupti
        import cupti.profiler_host  # noqa: F401
    except ImportError as exc:
        raise Refusal("libraries", f"PM sampling needs cupti-python (pip install 'gputop[cuda]'): {exc}") from exc
    return str(folder)


def _uuid_hex(uuid: str) -> str:
    return re.sub(r"[^0-9a-f]", "", uuid.lower().removeprefix("gpu-"))


def cuda_ordinal(uuid: str | None) -> tuple[int, str]:
    """cuInit, then the CUDA ordinal of the GPU with `uuid` (NVML's or IREE's form) and its name; 0 without one."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")  # IREE's CUDA device has loaded it (and called cuInit) already
    except OSError as exc:
        raise Refusal("driver", f"PM sampling needs the NVIDIA driver's libcuda.so.1: {exc}") from exc
    if cuda.cuInit(0) != 0:
        raise Refusal("driver", "PM sampling: cuInit failed (no usable NVIDIA GPU for CUDA)")
    count = ctypes.c_int()
    cuda.cuDeviceGetCount(ctypes.byref(count))
    wanted = _uuid_hex(uuid) if uuid else ""
    for ordinal in range(count.value):
        device, raw, name = ctypes.c_int(), (ctypes.c_ubyte * 16)(), ctypes.create_string_buffer(256)
        cuda.cuDeviceGet(ctypes.byref(device), ordinal)
        cuda.cuDeviceGetName(name, 256, device)
        if not wanted or (cuda.cuDeviceGetUuid_v2(raw, device) == 0 and bytes(raw).hex() == wanted):
            return ordinal, name.value.decode(errors="replace")
    raise Refusal("driver", f"PM sampling: CUDA sees no GPU with UUID {uuid} ({count.value} GPUs)")


def cupti_call(cc: Any, name: str, call: bool = True, **fields: Any) -> Any:
    """cc.<snake_name>(p.ptr) on p = cc.<Name>Params with its struct size and `fields` (cc: `cupti.cupti`); p is
    returned, so its outputs can be read and what it points to is held as long as the caller holds it."""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
    p = getattr(cc, f"{name}Params")()
    p.struct_size = getattr(cc, f"{snake.upper()}_PARAMS_STRUCT_SIZE")
    for key, value in fields.items():
        setattr(p, key, value)
    if call:
        getattr(cc, snake)(p.ptr)
    return p


def cupti_version() -> str:
    value = ctypes.c_uint32()
    for line in Path("/proc/self/maps").read_text().splitlines():
        if "libcupti.so" in line:
            ctypes.CDLL(line.split()[-1]).cuptiGetVersion(ctypes.byref(value))
            break
    major, rest = divmod(value.value, 10000)
    minor, update = divmod(rest, 100)
    return f"{major}.{minor}.{update}" if value.value else "unknown"


class Sampler:
    """One device's PM sampling session through cupti-python's low-level calls (as NVIDIA's C sample)."""

    def __init__(self, ordinal: int, interval_ms: float, max_samples: int | None = None) -> None:
        import cupti.cupti as cc
        import cupti.profiler_host as ph

        self.cc, self.ph = cc, ph
        self.ordinal = ordinal
        self.interval_ns = int(interval_ms * 1e6)
        self.max_samples = max_samples or max(32, round(DECODES_OF_ROOM * DECODE_EVERY_S * 1e3 / interval_ms))
        self.costs: dict[str, float] = {"decode": 0.0, "info": 0.0, "samples": 0.0, "reset": 0.0, "drains": 0.0}
        self.obj: Any = None
        self.config: Any = None
        self.image: Any = None
        self.metrics: list[str] = []
        self.roles: dict[str, str] = {}
        self.set_name: str | None = None
        self._host: Any = None
        self._names: Any = None
        self._availability: Any = None
        self.chip = ""

    # -- CUPTI calls ----------------------------------------------------------------
    def _call(self, name: str, call: bool = True, **fields: Any) -> Any:
        return cupti_call(self.cc, name, call, **fields)

    def _refusal(self, exc: Exception, doing: str) -> Refusal:
        """A CUPTI error as the strip's one-line refusal."""
        status = getattr(exc, "status", None)
        result = self.cc.Result
        name = result(status).name if status in set(result) else type(exc).__name__
        if name == "ERROR_INSUFFICIENT_PRIVILEGES" or isinstance(exc, PermissionError):
            return Refusal("permission", PERMISSION)
        if name in {"ERROR_NOT_SUPPORTED", "ERROR_NOT_COMPATIBLE", "ERROR_LEGACY_PROFILER_NOT_SUPPORTED"}:
            return Refusal("unsupported", f"this GPU or driver has no CUPTI PM sampling ({doing}: {name})")
        if name in {"ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED", "ERROR_NOT_READY", "ERROR_INVALID_OPERATION"}:
            return Refusal(
                "busy", f"the GPU's counters are held by another profiler (ncu, nsys, another gputop): {name}"
            )
        return Refusal("failed", f"PM sampling failed to {doing}: {name} ({exc})")

    def open(self, wanted: list[str] | None) -> None:
        """Initialise, pick the metrics (those asked for, else one per role that fits one pass), enable, start."""
        cc, ph = self.cc, self.ph
        global _profiler_initialized
        try:
            if not _profiler_initialized:  # once a process: ending it is left to the process's own end
                self._call("ProfilerInitialize")
                _profiler_initialized = True
            self.chip = self._call("DeviceGetChipName", device_index=self.ordinal).p_chip_name
        except Exception as exc:
            raise self._refusal(exc, "initialise the profiler") from exc
        if self.chip not in ph.get_supported_chips():
            raise Refusal("unsupported", f"CUPTI has no PM sampling for the {self.chip} chip")
        try:
            import numpy as np

            p = self._call(
                "PmSamplingGetCounterAvailability", device_index=self.ordinal, p_counter_availability_image=0
            )
            self._availability = np.zeros(p.counter_availability_image_size, dtype=np.uint8)
            p.p_counter_availability_image = self._availability.ctypes.data
            cc.pm_sampling_get_counter_availability(p.ptr)
        except Exception as exc:
            raise self._refusal(exc, "read the counters' availability") from exc
        self.set_name, self.metrics, self.roles = self._pick(wanted)
        try:
            self._host = self._new_host(self.set_name)  # makes the config image, then evaluates the samples
        except Exception as exc:
            raise self._refusal(exc, "initialise the metrics host") from exc
        try:
            self.obj = self._call("PmSamplingEnable", device_index=self.ordinal).p_pm_sampling_object
        except Exception as exc:
            raise self._refusal(exc, "enable PM sampling") from exc
        try:
            self.config = self._host.create_config_image(self.metrics)  # CUPTI keeps its pointer: held to the end
            self._call(
                "PmSamplingSetConfig",
                p_pm_sampling_object=self.obj,
                config_size=len(self.config),
                p_config=self.config.ctypes.data,
                hardware_buffer_size=HARDWARE_BUFFER,
                sampling_interval=self.interval_ns,
                trigger_mode=int(cc.PmSamplingTriggerMode.GPU_TIME_INTERVAL),
                hw_buffer_append_mode=int(cc.PmSamplingHardwareBufferAppendMode.KEEP_OLDEST),
            )
            from cupti.utils import metrics_to_c_array

            self._names = metrics_to_c_array(self.metrics)
            size = self._call(
                "PmSamplingGetCounterDataSize",
                p_pm_sampling_object=self.obj,
                p_metric_names=self._names[1],
                num_metrics=len(self.metrics),
                max_samples=self.max_samples,
            ).counter_data_size
            self.image = np.zeros(size, dtype=np.uint8)
            self._reset_image()
            self._call("PmSamplingStart", p_pm_sampling_object=self.obj)
        except Refusal:
            raise
        except Exception as exc:
            raise self._refusal(exc, "configure and start PM sampling") from exc

    def _new_host(self, set_name: str | None = None) -> Any:
        """A PM sampling host object given the device's counter availability (cupti-python's passes none) and,
        where given, a single-pass metric set: on GH100 `sm__throughput` alone takes 19 passes without one."""
        cc, ph = self.cc, self.ph
        sampler = self

        class Host(ph.ProfilerHost):  # type: ignore[name-defined]
            def initialize(self) -> None:
                p = sampler._call(
                    "ProfilerHostInitialize",
                    False,
                    profiler_type=self._profiler_type,
                    p_chip_name=sampler.chip,
                    p_counter_availability_image=sampler._availability.ctypes.data,
                )
                if set_name:
                    p.p_single_pass_metric_set_name = set_name
                cc.profiler_host_initialize(p.ptr)
                self._p_host_object = p.p_host_object
                self._finalizer = weakref.finalize(self, ph._profiler_host_deinitialize, self._p_host_object)

        host = Host(self.chip, ph.ProfilerType.PM_SAMPLING)
        host.initialize()
        return host

    def passes(self, metrics: list[str], set_name: str | None = None) -> tuple[int, str | None]:
        """How many passes `metrics` take (a fresh host each time: a host keeps the metrics added to it), and
        the error where they cannot be configured at all."""
        try:
            host = self._new_host(set_name)
        except Exception as exc:
            return 0, f"host: {exc!r}"
        try:
            return int(self.ph.get_num_of_passes(host.create_config_image(metrics))), None
        except Exception as exc:  # a metric the chip lacks under PM sampling
            return 0, repr(exc)
        finally:
            host.deinitialize()

    def single_pass_sets(self) -> list[str]:
        try:
            return list(self.ph.get_single_pass_sets(self.chip))
        except Exception:  # an older CUPTI: none
            return []

    def _pick(self, wanted: list[str] | None) -> tuple[str | None, list[str], dict[str, str]]:
        """The single-pass set (or None), the metrics to sample and each one's role: `wanted` as given where
        they fit one pass, else per ROLES the first candidate (plain, or under a set's prefix) that keeps the
        whole one pass; the set that covers most roles wins, no set on a tie."""
        sets: list[str | None] = [None, *self.single_pass_sets()]
        if wanted:
            for set_name in sets:
                if self.passes(wanted, set_name)[0] == 1:
                    return set_name, wanted, {metric: _role_of(metric) for metric in wanted}
            raise Refusal("unsupported", f"PM sampling cannot read {', '.join(wanted)} on {self.chip} in one pass")
        best: tuple[str | None, list[str], dict[str, str]] = (None, [], {})
        for set_name in sets:
            chosen: list[str] = []
            roles: dict[str, str] = {}
            for role, candidates in ROLES.items():
                names = [*candidates, *(f"{set_name}.{c}" for c in candidates if set_name)]
                for metric in names:
                    if self.passes([*chosen, metric], set_name)[0] == 1:
                        chosen.append(metric)
                        roles[metric] = role
                        break
            if len(chosen) > len(best[1]):
                best = (set_name, chosen, roles)
            if len(chosen) == len(ROLES):
                break
        if not best[1]:
            raise Refusal("unsupported", f"none of the strip's metrics can be PM sampled on {self.chip}")
        return best

    def _reset_image(self) -> None:
        self._call(
            "PmSamplingCounterDataImageInitialize",
            p_pm_sampling_object=self.obj,
            counter_data_size=len(self.image),
            p_counter_data=self.image.ctypes.data,
        )

    def drain(self) -> tuple[list[list[float]], bool]:
        """Decode the hardware buffer: each completed sample as [start_s, end_s, values...] on CLOCK_MONOTONIC."""
        where = {"p_counter_data_image": self.image.ctypes.data, "counter_data_image_size": len(self.image)}
        rows: list[list[float]] = []
        overflow = False
        costs, clock = self.costs, time.thread_time
        costs["drains"] += 1
        while True:
            began = clock()
            p = self._call("PmSamplingDecodeData", p_pm_sampling_object=self.obj, **where)
            overflow = overflow or bool(p.overflow)
            decoded = clock()
            info = self._call("PmSamplingGetCounterDataInfo", **where)
            offset = _clock_offset_ns(self.cc)
            counted = clock()
            for index in range(info.num_completed_samples):
                s = self._call(
                    "PmSamplingCounterDataGetSampleInfo", p_pm_sampling_object=self.obj, sample_index=index, **where
                )
                if not s.start_timestamp or s.end_timestamp <= s.start_timestamp:
                    continue  # the first sample of a session can come with no start: no window to place it in
                values = self._host.evaluate_metric_values(self.image, self.metrics, index)
                rows.append(
                    [
                        round((s.start_timestamp + offset) / 1e9, 9),
                        round((s.end_timestamp + offset) / 1e9, 9),
                        *(float(v) for v in values),
                    ]
                )
            evaluated = clock()
            self._reset_image()
            costs["decode"] += decoded - began
            costs["info"] += counted - decoded
            costs["samples"] += evaluated - counted
            costs["reset"] += clock() - evaluated
            full = self.cc.PmSamplingDecodeStopReason(p.decode_stop_reason).name == "COUNTER_DATA_FULL"
            if not full:
                return rows, overflow

    def close(self) -> tuple[list[list[float]], bool]:
        """Stop, the last decode (as `drain` gives it), disable: the counters are free for another profiler after."""
        if self.obj is None:
            return [], False
        try:
            self._call("PmSamplingStop", p_pm_sampling_object=self.obj)
            return self.drain()
        finally:
            self._call("PmSamplingDisable", p_pm_sampling_object=self.obj)
            self.obj = None


def _role_of(metric: str) -> str:
    """The strip's role of a metric, under a single-pass set's prefix or not."""
    for role, names in ROLES.items():
        if any(metric == name or metric.endswith(f".{name}") for name in names):
            return role
    return "other"


def _clock_offset_ns(cc: Any) -> float:
    """CLOCK_MONOTONIC minus CUPTI's clock (the one its sample timestamps use), from a pair read back to back."""
    before = time.perf_counter_ns()
    cupti_now = cc.get_timestamp()
    after = time.perf_counter_ns()
    return (before + after) / 2 - float(cupti_now)
