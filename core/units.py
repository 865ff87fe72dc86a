"""Every number a person reads, written one way: bytes, times, rates, % of bound and the limits.

gputop has several faces: the Textual panes and the roofline render snapshot
dataclasses, `gputop report` and `gputop run`'s printout render the report's
JSON dictionaries, and the web view shows the TUI. When each face kept its
own formatters they drifted apart: the TUI and `gputop report` could show a
different % of peak for the same kernel, the same bytes as `1.5 GiB` and
`1.50 GiB`, a call's p95 as `152.5 ms` and `152.455 ms`. This module is the
one place where a number becomes text, so the faces cannot disagree: each of
them passes values (never its own dataclasses or dictionaries, except the
limits, which take the JSON form both faces have) and prints what comes back.

It is engine code, usable by every face: no Textual, no Rich, and nothing of
a live run or the session store. The rules every formatter keeps: an unknown
value (None) is `-`; a value that rounds to zero never reads `-0` (rounding
noise such as -0.0004 is shown as zero); units are SI (decimal) for rates and
work, binary (KiB, MiB) for sizes in memory.

Table columns pick one unit for the whole column (`column`): a column that
reads `19.57 ms` above `4691.2 µs` makes the eye compare digits that do not
compare, so each numeric column takes the unit its largest value reads best
in (three significant digits, under 1000), names it in the header (`avg
ms`), and writes every cell as a bare number in it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "ABOVE_ESTIMATE",
    "BYTES",
    "ESTIMATE_NOTE",
    "NAME_MARK",
    "NAME_NOTE",
    "RATE",
    "TIME_US",
    "check_tolerances",
    "clocks_text",
    "column",
    "dram_bytes",
    "estimate_ratio",
    "estimated_work",
    "fixed",
    "flop_per_byte",
    "gbps",
    "host_load_text",
    "human_bytes",
    "in_unit",
    "limits_line",
    "limits_lines",
    "mhz",
    "ms",
    "ms_fixed",
    "name_marked",
    "neighbours_lines",
    "neighbours_text",
    "pct_of_bound",
    "peaks_text",
    "percent",
    "pick_unit",
    "seconds",
    "share_of_ceiling",
    "si",
    "unchecked_outputs",
    "unknown_work",
    "watts",
    "work_lines",
]

TIME_US = ((1.0, "µs"), (1e3, "ms"), (1e6, "s"))  # value given in µs
RATE = ((1.0, ""), (1e3, "k"), (1e6, "M"), (1e9, "G"), (1e12, "T"), (1e15, "P"))
BYTES = ((1, "B"), (1024, "KiB"), (1024**2, "MiB"), (1024**3, "GiB"), (1024**4, "TiB"))


def fixed(value: float | None, decimals: int = 1) -> str:
    """`value` with `decimals` places (`-` when unknown); what rounds to zero reads `0.0`, never `-0.0`."""
    if value is None:
        return "-"
    text = f"{value:.{decimals}f}"
    if text.startswith("-") and float(text) == 0:
        text = text[1:]
    return text


def _three_digits(scaled: float) -> str:
    """About three significant digits, up to 999: `123`, `12.3`, `1.23`, `0.123`.

    A small value keeps its digits (`0.000488`), but a negative one under 0.0005 is rounding noise
    (two clock readings subtracted; no time, size or rate here is negative) and reads `0`.
    """
    if -0.0005 < scaled <= 0:
        return "0"
    if abs(scaled) >= 99.95:
        return fixed(scaled, 0)
    if abs(scaled) >= 9.995:
        return fixed(scaled, 1)
    if abs(scaled) >= 0.9995:
        return fixed(scaled, 2)
    return f"{scaled:.3g}"


# Bytes


def human_bytes(value: float | None, decimals: int = 1) -> str:
    """A size in binary units: `512 B`, `7.5 MiB`, `23.5 GiB`, `2.0 TiB` (`-` when unknown).

    One decimal reads well beside other figures; `decimals=2` is for sentences that set two close
    sizes side by side (a parameter that cannot be placed, and the room there is), where one decimal
    could print the same number twice, and for the log's line of what a parameter load moved.
    """
    if value is None:
        return "-"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{fixed(size, 0)} {unit}" if unit == "B" else f"{fixed(size, decimals)} {unit}"
        size /= 1024
    raise AssertionError("unreachable: TiB takes every size left")


# Times


def seconds(value: float | None) -> str:
    """A duration given in seconds, in the unit it reads best in: `350 µs`, `46.4 ms`, `1.25 s`; `0 s` for
    none (a phase that took no time, such as a compile the cache answered: a bare `0` names no unit)."""
    if value is None:
        return "-"
    if round(value * 1e6) == 0:
        return "0 s"
    if abs(value) < 1e-3:
        return f"{value * 1e6:.0f} µs"
    return f"{value * 1e3:.1f} ms" if abs(value) < 1 else f"{value:.2f} s"


def ms(value: float | None) -> str:
    """A call's time given in ms, to the microsecond below 10 ms and to 0.1 ms above: `9.301 ms`, `152.5 ms`."""
    if value is None:
        return "-"
    return f"{fixed(value, 3)} ms" if abs(value) < 10 else f"{fixed(value, 1)} ms"


def ms_fixed(value: float | None, decimals: int = 3) -> str:
    """Milliseconds with fixed places, for parts that add up (kernels + gap = the call): `48.022 ms`."""
    return "-" if value is None else f"{fixed(value, decimals)} ms"


# Rates, work and the device's limits


def si(value: float, unit: str = "") -> str:
    """1.87e12 with a unit: `1.87 TFLOP/s` (SI step, three digits); without one, an axis tick: `100G`."""
    for factor, prefix in reversed(RATE):
        if abs(value) >= factor or factor == 1.0:
            scaled = value / factor
            if not unit:
                return f"{scaled:g}{prefix}"
            size = abs(scaled)
            digits = fixed(scaled, 0 if size >= 99.95 else 1 if size >= 9.995 else 2)
            return f"{digits} {prefix}{unit}"
    raise AssertionError("unreachable: the first step takes every value left")


def gbps(value: float | None) -> str:
    """A transfer's rate in decimal GB/s, always in GB/s so a progress line never changes unit: `25.3 GB/s`."""
    return "-" if value is None else f"{fixed(value, 1)} GB/s"


def flop_per_byte(value: float | None) -> str:
    """Arithmetic intensity: `85.2 FLOP/B`."""
    return "-" if value is None else f"{value:.3g} FLOP/B"


def mhz(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f} MHz"


def watts(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f} W"


# Shares


def percent(value: float | None, decimals: int = 1) -> str:
    """A share given in percent: `4.9%` (`-` when unknown, `0.0%` for -0.0004)."""
    return "-" if value is None else f"{fixed(value, decimals)}%"


def estimate_ratio(measured: float | None, estimate: float | None) -> str:
    """A measurement over its estimate: `1.00x`, `0.02x` (`-` where either is unknown or the estimate is 0)."""
    if measured is None or not estimate:
        return "-"
    return f"{_three_digits(measured / estimate)}x"


ABOVE_ESTIMATE = ">100%*"  # a share above an estimated ceiling: the ceiling, not the kernel, is off
ESTIMATE_NOTE = "*estimates: a kernel may beat them"


def share_of_ceiling(pct: float | None, estimate: bool) -> str:
    """A kernel's share of its ceiling: `59.3%`; above 100% of an estimated ceiling, `>100%*`.

    A CPU's peaks are estimates (cores x lanes x FMA x a clock that may not be the turbo one; a copy's
    bandwidth, which cache-resident work beats). A kernel above one shows the ceiling is low, not that
    the kernel did the impossible: it is shown clamped, its `*` pointing at the note that the peaks
    are estimates, never as `103%`. The JSON keeps the computed share and `peaks.estimate`.
    """
    if pct is not None and estimate and pct > 100.0:
        return ABOVE_ESTIMATE
    return percent(pct)


def pct_of_bound(bound: str | None, pct_compute: float | None, pct_bandwidth: float | None) -> float | None:
    """A kernel's share of the ceiling that bounds it, in percent; when a peak is missing, the share of the other.

    The roof over a kernel is the lower of the compute peak and bandwidth times its intensity, so
    its share of that roof is the larger of its two shares (`pct_compute` of the compute peak,
    `pct_bandwidth` of the memory bandwidth); `bound` names it. When one peak is unknown (no
    datasheet bandwidth, or no compute peak for the kernel's element type) the bound is unknown
    too, and the share of the one peak known is shown: a missing roof can only lower the one over
    the kernel, so this share is a floor of the true one, never an overstatement. Showing nothing
    would hide a true figure, and taking only the compute side (as `gputop report` once did) hid
    the share of memory-bound kernels of types without a compute peak. Both shares unknown: None.
    """
    if bound == "memory" and pct_bandwidth is not None:
        return pct_bandwidth
    if bound == "compute" and pct_compute is not None:
        return pct_compute
    known = [value for value in (pct_compute, pct_bandwidth) if value is not None]
    return max(known) if known else None


# Table columns


def pick_unit(values: Sequence[float | None], steps: Sequence[tuple[float, str]]) -> tuple[float, str]:
    """The step (factor, name) in which the largest of `values` is below 1000 (the first if none is known)."""
    known = [abs(v) for v in values if v is not None]
    top = max(known, default=0.0)
    chosen = steps[0]
    for factor, name in steps:
        if top >= factor * 0.9995 or factor == steps[0][0]:
            chosen = (factor, name)
    return chosen


def in_unit(value: float | None, factor: float) -> str:
    """`value` in the column's unit, three significant digits (`-` when unknown)."""
    if value is None:
        return "-"
    return _three_digits(value / factor)


def column(
    name: str, values: Sequence[float | None], steps: Sequence[tuple[float, str]], suffix: str = ""
) -> tuple[str, list[str]]:
    """The header (`avg ms`, `FLOP/s G`) and the cells of one numeric column."""
    factor, unit = pick_unit(values, steps)
    label = f"{name} {unit}{suffix}".rstrip()
    return label, [in_unit(v, factor) for v in values]


# The limits a profile pass ran under (the JSON form of a `ProfileSummary`: a report's `profile`)


def clocks_text(clocks: Mapping[str, Any], *, over_pass: bool = False) -> str:
    """The pass's GPU clocks: `SM 1410/1980 MHz, mem 2619 MHz, P0, 300 W` (mean / the maximum it can reach).

    `over_pass` says more, for the report: the SM clock at the pass's start and end, its mean and maximum.
    """
    start, end = clocks["start"], clocks["end"]
    state = f"{end.get('pstate') or '?'}" + (f", {watts(end['power_w'])}" if end.get("power_w") is not None else "")
    if over_pass:
        return (
            f"SM {start['sm_mhz']} -> {mhz(end['sm_mhz'])} (mean {clocks['mean_sm_mhz']:.0f}, "
            f"max {end.get('max_sm_mhz') or '?'}), memory {mhz(clocks['mean_mem_mhz'])}, {state}"
        )
    top = f"/{end['max_sm_mhz']}" if end.get("max_sm_mhz") else ""
    return f"SM {clocks['mean_sm_mhz']:.0f}{top} MHz, mem {mhz(clocks['mean_mem_mhz'])}, {state}"


def peaks_text(peaks: Mapping[str, Any]) -> str:
    """The device's peaks at the pass's clocks (what the % of bound is against): `333 GFLOP/s f32, 9.92 GB/s`."""
    f32, bandwidth = peaks.get("f32_tflops"), peaks.get("bandwidth_gbps")
    compute = si(f32 * peaks.get("compute_scale", 1.0) * 1e12, "FLOP/s f32") if f32 else "f32 unknown"
    memory = si(bandwidth * peaks.get("bandwidth_scale", 1.0) * 1e9, "B/s") if bandwidth else "bandwidth unknown"
    return f"{compute}, {memory}"


def limits_line(profile: Mapping[str, Any], kernels: Sequence[Mapping[str, Any]] = ()) -> str:
    """The pass's clock and the device's peaks at it, in one line (or why they are unknown): the Kernels pane's."""
    parts = []
    clocks, peaks = profile.get("clocks"), profile.get("peaks")
    if clocks:
        parts.append(clocks_text(clocks))
    if peaks:
        parts.append(f"peak {peaks_text(peaks)}" + (f" ({ESTIMATE_NOTE})" if peaks.get("estimate") else ""))
    elif profile.get("peaks_reason"):
        parts.append(str(profile["peaks_reason"]))
    if not clocks and profile.get("clocks_reason") and not peaks:
        parts.append(str(profile["clocks_reason"]))
    if kernels and all(k.get("flops") is None for k in kernels):
        reasons = list(dict.fromkeys(why for k in kernels if (why := unknown_work(k))))
        if not reasons and profile.get("work_source"):
            reasons = [str(profile["work_source"])]
        if reasons:
            more = f" (and {len(reasons) - 1} other reasons)" if len(reasons) > 1 else ""
            parts.append(f"FLOPs unknown: {reasons[0]}{more}")
    return "; ".join(parts)


# A kernel whose FLOPs and bytes were read from its dispatch name carries this mark beside its name.
NAME_MARK = "*"
NAME_NOTE = "work read from the dispatch name: its op and loop sizes (work fused beside that op is not seen)"


def name_marked(kernel: Mapping[str, Any]) -> bool:
    """Whether the kernel's numbers come from its name (`work_source: "name"`), not from its IR."""
    return kernel.get("work_source") == "name" and kernel.get("flops") is not None


def estimated_work(kernel: Mapping[str, Any]) -> tuple[float | None, float | None, str | None]:
    """A kernel's estimated FLOPs, bytes and their source (`ir`, `name`): set aside once a counters pass
    measured it (`work_source: "counters"`), else its own."""
    if kernel.get("work_source") == "counters":
        return kernel.get("estimate_flops"), kernel.get("estimate_bytes"), kernel.get("estimate_source")
    return kernel.get("flops"), kernel.get("bytes"), kernel.get("work_source")


def dram_bytes(counters: Mapping[str, Any] | None) -> int | None:
    """The bytes DRAM served one launch (read and written), as a counters pass measured them; None if unknown."""
    if not counters or counters.get("dram_read_bytes") is None or counters.get("dram_write_bytes") is None:
        return None
    return int(counters["dram_read_bytes"]) + int(counters["dram_write_bytes"])


def unknown_work(kernel: Mapping[str, Any]) -> str | None:
    """Why the kernel's FLOPs are unknown (its `work`, `unknown: why`); None where they are known."""
    if kernel.get("flops") is not None:
        return None
    work = str(kernel.get("work") or "")
    return work.removeprefix("unknown: ") or None


def work_lines(kernels: Sequence[Mapping[str, Any]]) -> list[str]:
    """Below the report's kernel table: what the name mark means, and why each unknown is unknown
    (kernels with the same reason share a line)."""
    lines = []
    if any(name_marked(k) for k in kernels):
        lines.append(f"work      {NAME_MARK} {NAME_NOTE}")
    reasons: dict[str, list[str]] = {}
    for kernel in kernels:
        why = unknown_work(kernel)
        if why:
            reasons.setdefault(why, []).append(str(kernel["name"]))
    for why, names in reasons.items():
        who = names[0] if len(names) == 1 else f"{len(names)} kernels"
        lines.append(f"unknown   {who}: {why}")
    return lines


def limits_lines(profile: Mapping[str, Any]) -> list[str]:
    """The pass's clocks and the device's peaks (or why they are unknown), and a clock warning: the report's."""
    lines = []
    clocks = profile.get("clocks")
    if clocks:
        lines.append(f"clocks    {clocks['gpu']}: {clocks_text(clocks, over_pass=True)}")
        start, end = clocks["start"], clocks["end"]
        reasons = sorted(set(start.get("throttle_reasons") or ()) | set(end.get("throttle_reasons") or ()))
        if reasons:
            lines.append(f"          clock event reasons: {', '.join(reasons)}")
        if clocks.get("warmup"):
            lines.append(f"          {clocks['warmup']}")
        if clocks.get("warning"):
            lines.append(f"WARNING   {clocks['warning']}")
    elif profile.get("clocks_reason"):
        lines.append(f"clocks    none: {profile['clocks_reason']}")
    peaks = profile.get("peaks")
    if peaks:
        at = ""
        if peaks.get("sm_mhz") and peaks.get("compute_scale", 1.0) < 0.999:
            at = f", at {mhz(peaks['sm_mhz'])}: x{peaks['compute_scale']:.2f} of the datasheet's"
        lines.append(f"peaks     {peaks['part']}: {peaks_text(peaks)}{at} ({peaks['source']})")
    elif profile.get("peaks_reason"):
        lines.append(f"peaks     none: {profile['peaks_reason']}")
    if profile.get("work_source"):
        lines.append(f"work      {profile['work_source']}")
    return lines


def _gpu_process_text(process: Mapping[str, Any]) -> str:
    parts = [str(process.get("name") or f"pid {process.get('pid')} (not visible here)")]
    if process.get("used_memory_bytes") is not None:
        parts.append(human_bytes(process["used_memory_bytes"]))
    if process.get("sm_percent") is not None:
        parts.append(f"{process['sm_percent']}% SM")
    return " ".join(parts)


def neighbours_text(neighbours: Mapping[str, Any]) -> str | None:
    """`2 other processes on cuda:0: python 20.1 GiB 35% SM, ...`; None when nobody else is on the GPU."""
    count = int(neighbours.get("others") or 0)
    if not count:
        return None
    others = [p for p in neighbours.get("processes") or () if not p.get("ours")]
    listed = ", ".join(_gpu_process_text(p) for p in others[:3]) + (", ..." if len(others) > 3 else "")
    where = neighbours.get("device_id") or "the GPU"
    return f"{count} other process{'es' if count != 1 else ''} on {where}" + (f": {listed}" if listed else "")


def host_load_text(host: Mapping[str, Any]) -> str:
    """`others used 0.91 of 2 cores (this run 1.02)`: the host's CPU time by who, in cores."""
    steal = f", {host['steal_cores']:.2f} stolen by the hypervisor" if (host.get("steal_cores") or 0) >= 0.01 else ""
    return f"others used {host['other_cores']:.2f} of {host['cores']} cores (this run {host['own_cores']:.2f}){steal}"


def neighbours_lines(neighbours: Mapping[str, Any] | None, label: str = "others") -> list[str]:
    """The report's lines: the host's load, the GPU's other processes, what could not be read, a warning."""
    if not neighbours:
        return []
    parts = []
    if neighbours.get("host"):
        parts.append(f"host: {host_load_text(neighbours['host'])}")
    if neighbours.get("gpu"):
        parts.append(neighbours_text(neighbours) or f"nobody else on {neighbours.get('device_id')}")
    over = f" over {seconds(neighbours['seconds'])}" if neighbours.get("seconds") else ""
    lines = [f"{label:<9s} " + "; ".join(parts) + over] if parts else []
    if neighbours.get("reason"):
        lines.append(f"          {neighbours['reason']}")
    if neighbours.get("warning"):
        lines.append(f"WARNING   {neighbours['warning']}")
    return lines


def check_tolerances(tolerances: Sequence[Mapping[str, Any]]) -> str:
    """The tolerances an output check applied, from its JSON form (`output`, `dtype`, `rtol`,
    `atol` each): `float32 tolerance (rtol 0.0001, atol 1e-05)`, one phrase per distinct one."""
    phrases: list[str] = []
    for tol in tolerances:
        dtype, rtol, atol = str(tol["dtype"]), float(tol["rtol"]), float(tol["atol"])
        if dtype != "given" and rtol == 0 and atol == 0:
            phrase = f"{dtype} exact"
        else:
            phrase = f"{dtype} tolerance (rtol {rtol:g}, atol {atol:g})"
        if phrase not in phrases:
            phrases.append(phrase)
    return ", ".join(phrases)


def unchecked_outputs(unchecked: Sequence[int], outputs: int) -> str:
    """`outputs 1, 2 of 3 not checked (no reference given)`; empty when every output was checked."""
    if not unchecked:
        return ""
    word = "output" if len(unchecked) == 1 else "outputs"
    return f"{word} {', '.join(map(str, unchecked))} of {outputs} not checked (no reference given)"
