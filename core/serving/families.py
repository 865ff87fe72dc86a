"""The exporter's contract (`METRICS`) and the metric families one snapshot makes, each with the run's labels.

Every family carries the run's labels (`labels.run_labels`: run, target, device,
Hostname, program) and the per-GPU ones dcgm-exporter's labels besides
(`labels.GPU_LABELS`), so one Prometheus holds many hosts' runs apart and joins
them to the GPUs' own series. Label values that could grow without end are
bounded: at most `MAX_LABEL_VALUES` functions and layers a run, the rest summed
as `other`. Nothing here keeps state but the functions a run has shown, so a
function's histogram never moves into `other` and back (a counter that jumps).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
)

from gputop.core.records.calls import CALL_BUCKETS_MS
from gputop.core.records.program import FunctionCalls
from gputop.core.serving.labels import Labels
from gputop.core.snapshot import RunSnapshot
from gputop.core.watch.clock_watch import THROTTLE_REASONS

__all__ = [
    "DCGM_FIELDS",
    "MAX_LABEL_VALUES",
    "METRICS",
    "OTHER",
    "PARTS",
    "PHASES",
    "STATES",
    "KeptFunctions",
    "Scrape",
]

PHASES = ("import", "compile", "load", "parameters", "context", "first_call", "teardown")
STATES = ("idle", "importing", "compiling", "loading", "running", "paused", "finished", "stopped", "error")
PARTS = ("arguments", "invoke", "results", "to_host")  # a watched call's parts (records.program.CallParts)
MAX_LABEL_VALUES = 20  # functions and layers a run exports by name; the rest are summed as OTHER
OTHER = "other"
# The DCGM field nearest to each PM sampling role (CUPTI's metric is named in the `metric` label; DCGM's profiling
# fields are ratios 0-1 where gputop's are % of peak, so divide by 100 to set them side by side).
DCGM_FIELDS = {
    "sm": "DCGM_FI_PROF_SM_ACTIVE",
    "tensor": "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "dram": "DCGM_FI_PROF_DRAM_ACTIVE",
    "clock": "DCGM_FI_DEV_SM_CLOCK",
}

_PM_HELP = (
    "Each PM sampled metric's newest value: % of the GPU's peak (SM, tensor, DRAM) or the SM clock in MHz; "
    "dcgm_field names the nearest DCGM field: "
    + ", ".join(f"role {role} ~ {field}" for role, field in DCGM_FIELDS.items())
    + " (DCGM's PROF fields are 0-1 ratios)"
)

# (name, help, kind): the exporter's whole contract, printed by `gputop serve --list-metrics` and listed in
# docs/prometheus-and-web.md. Every family has the run's labels; see the docs for the rest.
METRICS = (
    ("gputop_info", "What runs: target, function, device, the GPU's dcgm labels and versions (value 1)", "info"),
    ("gputop_run_state", "1 for the run's current state, 0 for the others", "gauge"),
    ("gputop_phase_seconds", "Seconds spent in each run phase (compile, load, ...)", "gauge"),
    (
        "gputop_call_duration_seconds",
        "Synchronised wall time of each call, per function (histogram, 10 us to 10 s in 1-2-5 steps)",
        "histogram",
    ),
    ("gputop_calls_total", "Calls made since the run started, per function", "counter"),
    ("gputop_kernel_seconds_total", "Device time of each kernel over all profile passes", "counter"),
    ("gputop_kernel_dispatches_total", "Dispatches of each kernel over all profile passes", "counter"),
    ("gputop_kernel_avg_seconds", "Average device time of one dispatch of each kernel", "gauge"),
    ("gputop_kernel_max_seconds", "Longest dispatch of each kernel", "gauge"),
    ("gputop_memory_live_bytes", "Bytes the runtime's allocator holds now, per device and memory type", "gauge"),
    ("gputop_memory_peak_bytes", "Most bytes the runtime's allocator held, per device and memory type", "gauge"),
    ("gputop_device_memory_used_bytes", "Device memory in use (NVML for NVIDIA GPUs, host RAM for CPUs)", "gauge"),
    ("gputop_device_memory_total_bytes", "Device memory in all", "gauge"),
    ("gputop_host_rss_bytes", "Resident memory of the gputop process", "gauge"),
    ("gputop_captures_total", "RenderDoc captures taken and verified", "counter"),
    ("gputop_errors_total", "Errors the run met (compile, device, call, check)", "counter"),
    ("gputop_device_other_processes", "Other processes NVML lists on the run's GPU (not this run's)", "gauge"),
    ("gputop_host_other_cores", "CPU cores other processes used over the last few seconds", "gauge"),
    ("gputop_gpu_sm_clock_hertz", "The run's GPU's SM clock at the newest reading (NVML, NVIDIA GPUs only)", "gauge"),
    ("gputop_gpu_memory_clock_hertz", "The run's GPU's memory clock at the newest reading", "gauge"),
    ("gputop_gpu_power_watts", "The run's GPU's power draw at the newest reading", "gauge"),
    ("gputop_gpu_temperature_celsius", "The run's GPU's core temperature at the newest reading", "gauge"),
    ("gputop_gpu_clock_throttle_active", "1 for each NVML clock event reason active at the newest reading", "gauge"),
    ("gputop_pm_sampling_active", "1 while PM sampling reads the GPU's own counters (CUDA), else 0", "gauge"),
    ("gputop_pm_value", _PM_HELP, "gauge"),
    (
        "gputop_call_part_seconds",
        "Median seconds of each part of a call: a watched program's arguments, invoke, results and to_host; "
        "a gputop run's whole call (part call)",
        "gauge",
    ),
    (
        "gputop_call_breakdown_seconds",
        "Mean seconds per call of each part of the newest profile pass's call breakdown (host, queue, alloc, "
        "device_busy, device_idle, return_wait, unaccounted)",
        "gauge",
    ),
    (
        "gputop_layer_kernel_seconds_per_call",
        "Kernel time per call of each layer (source op group) of the newest profile, the top 20 (the rest: other)",
        "gauge",
    ),
    ("gputop_memory_growth_bytes_per_call", "Bytes memory grows per call while calls are steady (when found)", "gauge"),
    (
        "gputop_hint_active",
        "1 for each finding standing now (a watched program's diagnoses, the clocks' warning)",
        "gauge",
    ),
    ("gputop_hints_active", "Findings standing now (0 when none)", "gauge"),
)
HELP = {name: text for name, text, _ in METRICS}


class KeptFunctions:
    """The functions a run exports by name: the first MAX_LABEL_VALUES seen (busiest first), kept for the run."""

    def __init__(self) -> None:
        self._run: str | None = None
        self._names: list[str] = []

    def kept(self, run: str, names: Sequence[str]) -> list[str]:
        if run != self._run:
            self._run, self._names = run, []
        for name in names:
            if len(self._names) >= MAX_LABEL_VALUES:
                break
            if name not in self._names:
                self._names.append(name)
        return list(self._names)


class _Family:
    """One family whose every sample carries `base` (a value overridden per sample where a row says otherwise)."""

    def __init__(self, cls: Any, name: str, base: Labels, extra: Sequence[str] = ()) -> None:
        self.base = base
        self.family = cls(
            name, HELP[name if cls is not CounterMetricFamily else name + "_total"], labels=[*base, *extra]
        )

    def add(self, extra: Sequence[str], value: float, **override: str) -> None:
        self.family.add_metric([*(override.get(k, v) for k, v in self.base.items()), *extra], value)


class Scrape:
    """The families of one snapshot: `run` labels on all of them, `gpu` labels on the per-GPU ones."""

    def __init__(self, snap: RunSnapshot, run: Labels, gpu: Labels, kept: KeptFunctions) -> None:
        self.snap, self.run, self.gpu, self.kept = snap, run, gpu, kept
        self.per_gpu = {**run, **gpu}

    def gauge(self, name: str, extra: Sequence[str] = (), gpu: bool = False) -> _Family:
        return _Family(GaugeMetricFamily, name, self.per_gpu if gpu else self.run, extra)

    def counter(self, name: str, extra: Sequence[str] = ()) -> _Family:
        return _Family(CounterMetricFamily, name.removesuffix("_total"), self.run, extra)

    def families(self, versions: dict[str, str | None]) -> list[Any]:
        snap = self.snap
        info = InfoMetricFamily("gputop", HELP["gputop_info"])
        info.add_metric(
            [],
            {
                **self.per_gpu,
                "function": snap.function or "",
                "device_name": snap.device.name if snap.device else "",
                **{k: v or "" for k, v in versions.items()},
            },
        )
        state = self.gauge("gputop_run_state", ["state"])
        for name in STATES:
            state.add([name], 1.0 if snap.state == name else 0.0)
        phases = self.gauge("gputop_phase_seconds", ["phase"])
        for name in PHASES:
            value = getattr(snap.phases, f"{name}_s")
            if value is not None:
                phases.add([name], value)
        captures, errors = self.counter("gputop_captures_total"), self.counter("gputop_errors_total")
        captures.add([], float(len(snap.captures)))
        errors.add([], float(snap.errors))
        found = [info, state.family, phases.family, *self._calls(), *self._kernels(), *self._memory()]
        found += [captures.family, errors.family, *self._neighbours(), *self._clocks(), *self._pm(), *self._hints()]
        return found

    # -- calls --------------------------------------------------------------------------------
    def _calls(self) -> list[Any]:
        """Per function: the histogram, the count and the parts' medians; a gputop run's one function's, a watched
        program's each (the first MAX_LABEL_VALUES by name, the rest summed as `other`)."""
        snap = self.snap
        histogram = _Family(HistogramMetricFamily, "gputop_call_duration_seconds", self.run, ["function"])
        total = self.counter("gputop_calls_total", ["function"])
        parts = self.gauge("gputop_call_part_seconds", ["function", "part"])
        breakdown = self.gauge("gputop_call_breakdown_seconds", ["part"])
        if snap.program is None:
            function = snap.function or ""
            _add_histogram(histogram, function, snap.calls.buckets, snap.calls.sum_ms)
            total.add([function], float(snap.calls.count))
            if snap.calls.p50_ms is not None:
                parts.add([function, "call"], snap.calls.p50_ms / 1e3)
        else:
            self._program_calls(snap.program.functions, histogram, total, parts)
        call_breakdown = snap.profile.call_breakdown if snap.profile else None
        if call_breakdown is not None:
            totals = call_breakdown.totals
            for name in ("host", "queue", "alloc", "device_busy", "device_idle", "return_wait", "unaccounted"):
                breakdown.add([name], getattr(totals, f"{name}_ms") / 1e3)
        return [histogram.family, total.family, parts.family, breakdown.family]

    def _program_calls(
        self, rows: tuple[FunctionCalls, ...], histogram: _Family, total: _Family, parts: _Family
    ) -> None:
        named = {(f"{row.module}.{row.name}" if row.module else row.name): row for row in rows}
        kept = self.kept.kept(self.run["run"], list(named))
        others = [row for name, row in named.items() if name not in kept]
        for name in kept:
            row = named.get(name)
            if row is None:
                continue
            _add_histogram(histogram, name, row.buckets, row.sum_ms)
            total.add([name], float(row.count))
            for part_name in PARTS:
                part = getattr(row.parts, part_name) if row.parts is not None else None
                if part is not None and part.seen and part.p50_ms is not None:
                    parts.add([name, part_name], part.p50_ms / 1e3)
        if others:
            width = len(CALL_BUCKETS_MS) + 1
            summed = [sum(row.buckets[i] for row in others if len(row.buckets) == width) for i in range(width)]
            _add_histogram(histogram, OTHER, tuple(summed), sum(row.sum_ms for row in others))
            total.add([OTHER], float(sum(row.count for row in others)))

    # -- kernels and layers -------------------------------------------------------------------
    def _kernels(self) -> list[Any]:
        """Each profiled kernel's time, dispatches, average and longest dispatch; the top layers' time per call."""
        kernel_seconds = self.counter("gputop_kernel_seconds_total", ["kernel"])
        dispatches = self.counter("gputop_kernel_dispatches_total", ["kernel"])
        average = self.gauge("gputop_kernel_avg_seconds", ["kernel"])
        longest = self.gauge("gputop_kernel_max_seconds", ["kernel"])
        layers = self.gauge("gputop_layer_kernel_seconds_per_call", ["layer"])
        profile = self.snap.profile
        for kernel in profile.kernels if profile else ():
            kernel_seconds.add([kernel.name], kernel.total_us / 1e6)
            dispatches.add([kernel.name], float(kernel.count))
            average.add([kernel.name], kernel.avg_us / 1e6)
            longest.add([kernel.name], kernel.max_us / 1e6)
        ranked = sorted(profile.layers if profile else (), key=lambda layer: -layer.ms_per_call)
        for layer in ranked[:MAX_LABEL_VALUES]:
            layers.add([layer.name], layer.ms_per_call / 1e3)
        if len(ranked) > MAX_LABEL_VALUES:
            layers.add([OTHER], sum(layer.ms_per_call for layer in ranked[MAX_LABEL_VALUES:]) / 1e3)
        return [kernel_seconds.family, dispatches.family, average.family, longest.family, layers.family]

    # -- memory -------------------------------------------------------------------------------
    def _memory(self) -> list[Any]:
        """The pools' live and peak bytes, the device's used and total memory, the host's RSS, the growth."""
        snap = self.snap
        live = self.gauge("gputop_memory_live_bytes", ["memory_type"])
        peak = self.gauge("gputop_memory_peak_bytes", ["memory_type"])
        used = self.gauge("gputop_device_memory_used_bytes", ["source"], gpu=True)
        capacity = self.gauge("gputop_device_memory_total_bytes", ["source"], gpu=True)
        rss = self.gauge("gputop_host_rss_bytes")
        growth = self.gauge("gputop_memory_growth_bytes_per_call")
        if snap.memory is not None:
            for dev in snap.memory.devices:
                row = self._device_override(dev.device_id)
                for pool in dev.pools:
                    live.add([pool.memory_type], float(pool.live_bytes), device=dev.device_id)
                    peak.add([pool.memory_type], float(pool.peak_bytes), device=dev.device_id)
                if dev.device_used_bytes is not None:
                    used.add([dev.source or ""], float(dev.device_used_bytes), **row)
                if dev.device_total_bytes is not None:
                    capacity.add([dev.source or ""], float(dev.device_total_bytes), **row)
            rss.add([], float(snap.memory.host_rss_bytes))
        if snap.program is not None and snap.program.growth is not None:
            growth.add([], float(snap.program.growth.bytes_per_call))
        return [live.family, peak.family, used.family, capacity.family, rss.family, growth.family]

    def _device_override(self, device_id: str) -> Labels:
        """A row of another device than the run's: its id, and no GPU labels of the run's GPU (empty values)."""
        if device_id == self.run["device"]:
            return {}
        return {"device": device_id, **dict.fromkeys(self.gpu, "")}

    # -- the machine beside the run -----------------------------------------------------------
    def _neighbours(self) -> list[Any]:
        others = self.gauge("gputop_device_other_processes", gpu=True)
        host_others = self.gauge("gputop_host_other_cores")
        neighbours = self.snap.neighbours
        if neighbours is not None:
            if neighbours.gpu is not None:  # a CPU device has no GPU processes to count, not zero of them
                others.add([], float(neighbours.others), **self._device_override(neighbours.device_id or ""))
            if neighbours.host is not None:
                host_others.add([], neighbours.host.other_cores)
        return [others.family, host_others.family]

    def _clocks(self) -> list[Any]:
        """The newest clock reading of the run's GPU (empty families where there is none: a CPU device)."""
        sm_clock = self.gauge("gputop_gpu_sm_clock_hertz", gpu=True)
        mem_clock = self.gauge("gputop_gpu_memory_clock_hertz", gpu=True)
        power = self.gauge("gputop_gpu_power_watts", gpu=True)
        temperature = self.gauge("gputop_gpu_temperature_celsius", gpu=True)
        throttle = self.gauge("gputop_gpu_clock_throttle_active", ["reason"], gpu=True)
        reading = self.snap.clock_now
        if reading is not None:
            sm_clock.add([], reading.sm_mhz * 1e6)
            mem_clock.add([], reading.mem_mhz * 1e6)
            if reading.power_w is not None:
                power.add([], reading.power_w)
            if reading.temperature_c is not None:
                temperature.add([], float(reading.temperature_c))
            for reason in THROTTLE_REASONS.values():  # every reason, 0 or 1: an alert needs the series before it fires
                throttle.add([reason], 1.0 if reason in reading.throttle_reasons else 0.0)
        return [sm_clock.family, mem_clock.family, power.family, temperature.family, throttle.family]

    def _pm(self) -> list[Any]:
        """The GPU's own counters, newest values (CUPTI PM sampling): empty families where the run has no PM state
        (an engine that has not decided yet), `active` 0 and no values while it is paused, off or refused."""
        active = self.gauge("gputop_pm_sampling_active", gpu=True)
        value = self.gauge("gputop_pm_value", ["role", "metric", "unit", "dcgm_field"], gpu=True)
        pm = self.snap.pm_sampling
        if pm is not None:
            active.add([], 1.0 if pm.sampling else 0.0)
            for metric, newest in zip(pm.metrics, pm.newest, strict=False):
                if newest is not None:  # a metric the newest decode had no sample of: no value, not a zero
                    value.add([metric.role, metric.name, metric.unit, DCGM_FIELDS.get(metric.role, "")], newest)
        return [active.family, value.family]

    def _hints(self) -> list[Any]:
        """The findings standing now: a watched program's diagnoses by subject, and the calls' clock warning."""
        snap = self.snap
        subjects = list(snap.program.hint_subjects) if snap.program is not None else []
        if snap.call_clocks is not None and snap.call_clocks.warning:
            subjects.append("clocks")
        each = self.gauge("gputop_hint_active", ["subject"])
        for subject in subjects:
            each.add([subject], 1.0)
        count = self.gauge("gputop_hints_active")
        count.add([], float(len(subjects)))
        return [each.family, count.family]


def _add_histogram(histogram: _Family, function: str, counts: tuple[int, ...], sum_ms: float) -> None:
    """Cumulative buckets over CALL_BUCKETS_MS from per-bucket counts; nothing before a call (or counts of other
    bounds: a replayed session's older histogram)."""
    if len(counts) != len(CALL_BUCKETS_MS) + 1:
        return
    cumulative, buckets = 0, []
    for bound, count in zip((*CALL_BUCKETS_MS, float("inf")), counts, strict=True):
        cumulative += count
        buckets.append(("+Inf" if bound == float("inf") else repr(bound / 1e3), float(cumulative)))
    histogram.family.add_metric([*histogram.base.values(), function], buckets, sum_ms / 1e3)
