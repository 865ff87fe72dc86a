"""The engine's own sentences: what a report, a pane and the log say about a run, said one way.

`units` writes a number; this writes what the numbers mean together: the
clocks and peaks a profile pass ran under (or why they are unknown), the
clocks the calls ran at, which
kernels' work was read from their names and why a kernel's FLOPs are unknown,
who else used the GPU and the host, and which tolerances an output check
applied. Every face (the Kernels pane and header, `gputop run`'s and `gputop
report`'s text, a comparison, the run's own events) takes its sentence from
here, from the JSON form both the report and a snapshot's `to_json` have, so
the TUI and the printout cannot word the same fact two ways.

Engine code like `units`: no Textual, no Rich, nothing of a live run or the
session store.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from gputop.core.units import ESTIMATE_NOTE, human_bytes, mhz, seconds, si, watts

__all__ = [
    "CHECK_FAILED",
    "NAME_MARK",
    "NAME_NOTE",
    "call_clocks_lines",
    "call_clocks_text",
    "check_tolerances",
    "clocks_text",
    "dram_bytes",
    "estimated_work",
    "exception_line",
    "host_load_text",
    "limits_line",
    "limits_lines",
    "mismatch_text",
    "module_bytes_text",
    "name_marked",
    "neighbours_lines",
    "neighbours_text",
    "peaks_text",
    "unchecked_outputs",
    "unknown_work",
    "weight_bytes",
    "work_lines",
]


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


# The GPU's clocks over the calls (the JSON form of a `CallClocks`: a report's `calls.clocks`)


def _span(low: float, high: float) -> str:
    return f"{low:.0f}" if round(low) == round(high) else f"{low:.0f}-{high:.0f}"


def call_clocks_text(clocks: Mapping[str, Any]) -> str:
    """`SM 345-1980 MHz (median 345), mem 3201 MHz, P0, 78-128 W, 41 °C`: the clocks the calls ran at."""
    low, high = clocks["sm_mhz_min"], clocks["sm_mhz_max"]
    median = f" (median {clocks['sm_mhz_median']})" if low != high else ""
    parts = [f"SM {_span(low, high)} MHz{median}", f"mem {_span(clocks['mem_mhz_min'], clocks['mem_mhz_max'])} MHz"]
    if clocks.get("pstates"):
        parts.append("/".join(clocks["pstates"]))
    if clocks.get("power_w_min") is not None:
        parts.append(f"{_span(clocks['power_w_min'], clocks['power_w_max'])} W")
    if clocks.get("temperature_c_max") is not None:
        parts.append(f"{clocks['temperature_c_max']} °C")
    return ", ".join(parts)


def call_clocks_lines(clocks: Mapping[str, Any] | None, device_kind: str | None) -> list[str]:
    """The report's lines: the clocks over the calls and their warning; where there are none, why, but only
    for a GPU (that a CPU device has no GPU clock is no news)."""
    if not clocks:
        return []
    if "sm_mhz_min" not in clocks:
        return [f"clocks    none: {clocks['reason']}"] if clocks.get("reason") and device_kind == "gpu" else []
    over = f" over {seconds(clocks['seconds'])}" if clocks.get("seconds") else ""
    lines = [f"clocks    {call_clocks_text(clocks)} ({clocks['readings']} readings{over})"]
    if clocks.get("warning"):
        lines.append(f"WARNING   {clocks['warning']}")
    return lines


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


# The state a run whose outputs are unlike their reference is shown and listed in (header, `gputop sessions`).
CHECK_FAILED = "check failed"


def mismatch_text(mismatch: Mapping[str, Any]) -> str:
    """One element a check found wrong, from its JSON form (`output`, `index`, `got`, `expected`):
    `output 0 [3,1]: got -354.39, expected 0`, floats to 6 significant digits."""

    def number(value: Any) -> str:
        return f"{value:.6g}" if isinstance(value, float) else str(value)

    at = ",".join(map(str, mismatch["index"]))
    return f"output {mismatch['output']} [{at}]: got {number(mismatch['got'])}, expected {number(mismatch['expected'])}"


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


# A module's weights and the allocator's pools (the JSON form of a `ModuleBytes`: a report's `memory.module_bytes`)


def weight_bytes(row: Mapping[str, Any]) -> int | None:
    """A module's weights: its inlined constants and its parameters; None where the constants could not be counted."""
    constants = row.get("constant_bytes")
    return None if constants is None else int(constants) + int(row.get("parameter_bytes") or 0)


def module_bytes_text(row: Mapping[str, Any]) -> str:
    """What a module's weights are and whether the allocator's pools hold them, in one sentence:
    `weights 1.0 MiB inlined in the .vmfb; not in the allocator's pools (it took 0 B as the module loaded; ...)`."""
    parameters = int(row.get("parameter_bytes") or 0)
    devices = int(row.get("devices") or 1)
    whole = f", the module's for its {devices} devices" if devices > 1 else ""
    weights = weight_bytes(row)
    if weights is None:
        also = f", and {human_bytes(parameters)} of parameters" if parameters else ""
        return f"weights not counted ({row.get('reason')}): the .vmfb is {human_bytes(row.get('vmfb_bytes'))}{also}"
    if weights == 0:
        return f"weights: none inlined in the .vmfb ({human_bytes(row.get('vmfb_bytes'))}) and no parameters"
    held = [
        (n, where) for n, where in ((row["constant_bytes"], "inlined in the .vmfb"), (parameters, "of parameters")) if n
    ]
    what = (
        f"weights {human_bytes(weights)} {held[0][1]}{whole}"
        if len(held) == 1
        else f"weights {human_bytes(weights)}: " + " + ".join(f"{human_bytes(n)} {where}" for n, where in held) + whole
    )
    loaded, peak = row.get("loaded_bytes"), row.get("loaded_peak_bytes")
    if loaded is None:
        return f"{what}; whether the allocator's pools hold them is unknown"
    took = f"it took {human_bytes(loaded)} as the module loaded"
    if loaded >= weights:  # Vulkan (lavapipe): allocated grew by exactly the constants
        return f"{what}; in the allocator's pools ({took})"
    if peak is not None and peak >= weights:  # CUDA (H200): on the device, yet only the peak moved
        return f"{what}; in the pools' peak, not their live bytes (the peak grew {human_bytes(peak)} as it loaded)"
    if str(row.get("device_id", "")).startswith("local"):  # local-task: 0 B for a 1 MiB constant
        took += "; a CPU device reads them in place, from the mapped files"
    return f"{what}; {'not all' if loaded else 'not'} in the allocator's pools ({took})"


IREE_FRAME = re.compile(r"^\[\s*\d+\]\s")  # IREE's VM stack frames, one a line: `[ 0] bytecode mlp@1:156 -`
# IREE's C source location in a status: `c/runtime/src/iree/modules/hal/utils/buffer_diagnostics.c:225: `
SOURCE_LOCATION = re.compile(r"(?<![\w/])[\w./-]+\.(?:c|cc|cpp|h):\d+: ")
TYPE_PREFIX = re.compile(r"^[A-Za-z_][\w.]*: ")
IREE_CALL = "Error invoking function: "  # the bindings' prefix to every failed call: the status says what failed


def exception_line(text: str) -> tuple[str, tuple[str, ...]]:
    """An exception's text as one line, and IREE's VM stack frames that followed it.

    IREE's errors run to several lines: the status (the cause: `INVALID_ARGUMENT; input0 shape dimension 0
    mismatch; expected 32 but have 33; ...`) after a C source location, then a line per VM frame (`[ 0] bytecode
    mlp@1:156 -`). A face showing the last line showed the frame and not the cause. The line kept is the last
    that is not a frame, without the source locations and the bindings' `Error invoking function: `, with the
    exception's type where it came on an earlier line.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    frames = tuple(line for line in lines if IREE_FRAME.match(line))
    kept = [line for line in lines if not IREE_FRAME.match(line)]
    if not kept:
        return text.strip(), frames
    line = SOURCE_LOCATION.sub("", kept[-1]).replace(IREE_CALL, "")
    kind = TYPE_PREFIX.match(kept[0])
    if len(kept) > 1 and kind and not line.startswith(kind.group(0)):
        line = kind.group(0) + line
    return line, frames
