"""A run's report in plain text: what `gputop run` prints at its end and `gputop report` prints of a past run.

It is written from the same JSON dictionary `--json` writes, so what a person
reads and what a script parses can never disagree. One function per section,
in the order `SECTIONS` lists them; a section the run has nothing for says
nothing. Every number is written by the engine's units, as the TUI's panes
write it, so `gputop report` and the TUI agree too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gputop.tui.bridge import (
    breakdown_groups_text,
    call_clocks_lines,
    check_tolerances,
    fixed,
    gbps,
    human_bytes,
    modes_text,
    module_bytes_text,
    ms,
    ms_fixed,
    neighbours_lines,
    pm_sampling_text,
    seconds,
    unchecked_outputs,
    weight_bytes,
)
from gputop.tui.text.affinity import affinity_table
from gputop.tui.text.counters import counters_lines
from gputop.tui.text.kernels import kernels_lines
from gputop.tui.text.layers import layers_lines
from gputop.tui.text.parameters import parameter_stages_line
from gputop.tui.text.program import (
    FUNCTION_HEADER,
    dropped_line,
    ended_text,
    function_name,
    function_rows,
    held_line,
    parts_line,
    program_table,
    program_title,
    stacks_lines,
)

__all__ = ["PHASES", "PROGRAM_SECTIONS", "SECTIONS", "program_report_text", "run_report"]

Report = dict[str, Any]

# The run phases in run order, as (label, report key); the Run pane shows the same.
PHASES = (
    ("compile", "compile_s"),
    ("load", "load_s"),
    ("parameters", "parameters_s"),
    ("context", "context_s"),
    ("first call", "first_call_s"),
    ("teardown", "teardown_s"),
)


def run_report(report: Report) -> str:
    """The report's sections, one line or more each, in reading order."""
    return "\n".join(line for section in SECTIONS for line in section(report))


def program_report_text(report: Report) -> str:
    """The closing text of `gputop run -- CMD` (on stderr: the program's own stdout stays its own): the report's
    watched-program sections (`PROGRAM_SECTIONS`)."""
    return "\n".join(line for section in PROGRAM_SECTIONS for line in section(report))


def heading_lines(report: Report) -> list[str]:
    """What ran where, how it ended, and how long each phase took."""
    dev = report.get("device") or {}
    phases = report["phases"]
    return [
        f"gputop run {report['target']}  function {report.get('function') or '-'}",
        f"device    {dev.get('id', '-')}  {dev.get('name', '')}",
        f"state     {report['state']}" + (f"  ({report['error']})" if report.get("error") else ""),
        *([f"note      {report['rebuilt']}"] if report.get("rebuilt") else []),
        "phases    "
        + ("" if phases.get("import_s") is None else f"import {seconds(phases['import_s'])}  ")
        + "  ".join(f"{name} {seconds(phases.get(key))}" for name, key in PHASES),
    ]


def module_lines(report: Report) -> list[str]:
    """The module that ran, and whether the compile cache answered."""
    compiled = report.get("compile") or {}
    if not compiled.get("vmfb"):
        return []
    how = "cache hit" if compiled.get("cache_hit") else "compiled"
    return [f"module    {compiled['vmfb']} ({how})"]


def parameters_lines(report: Report) -> list[str]:
    """The parameters' load: its bytes, time and rate, and where the streamed loader's time went."""
    params = report.get("parameters") or {}
    lines = []
    if params.get("bytes") is not None and params.get("zero_copy"):
        lines.append(f"params    {human_bytes(params['bytes'])} mapped in place by {params.get('mode')} (zero copy)")
    elif params.get("bytes") is not None:
        rate = f", {gbps(params['gbps'])}" if params.get("gbps") else ""
        lines.append(
            f"params    {human_bytes(params['bytes'])} in {seconds(params.get('seconds'))}{rate} "
            f"by {params.get('mode')} from {len(params.get('files') or [])} file(s)"
        )
    if params.get("stages"):
        lines.append(f"stages    {parameter_stages_line(params['stages'])}")
    return lines


def calls_lines(report: Report) -> list[str]:
    """The synced calls' count, percentiles and rate, and their groups where they fall into separate ones."""
    calls = report["calls"]
    if not calls.get("count"):
        return []
    rate = calls.get("calls_per_s")
    groups = modes_text(calls.get("modes"), breakdown_groups_text((report.get("call_breakdown") or {}).get("groups")))
    return [
        f"calls     {calls['count']} synced  min {ms(calls['min_ms'])}  p50 {ms(calls['p50_ms'])}"
        f"  p95 {ms(calls['p95_ms'])}  max {ms(calls['max_ms'])}" + (f"  ({fixed(rate)} calls/s)" if rate else ""),
        *([f"groups    {groups}"] if groups else []),
    ]


def clocks_lines(report: Report) -> list[str]:
    """The GPU's clocks while the calls ran, and a warning where they moved or were held down."""
    return call_clocks_lines(report["calls"].get("clocks"), (report.get("device") or {}).get("kind"))


def pm_sampling_lines(report: Report) -> list[str]:
    """The GPU's own counters over the calls (CUPTI PM sampling): each metric's p50 and p95 of the calls' own
    averages, or why they were not sampled (only on a GPU: a CPU run's reason is no news)."""
    pm = report.get("pm_sampling")
    if not pm:
        return []
    if not pm.get("calls"):
        kind = (report.get("device") or {}).get("kind")
        return [f"pm        none: {pm.get('reason')}"] if kind == "gpu" and pm.get("reason") else []
    lines = [
        f"pm        p50 {pm_sampling_text(pm, 'p50', '  ')}",
        f"          p95 {pm_sampling_text(pm, 'p95', '  ')}",
        f"          over {pm.get('calls_aligned', 0)} calls, {pm.get('samples', 0)} samples at "
        f"{pm.get('interval_ms'):g} ms ({pm.get('source')})",
    ]
    if pm.get("reason"):
        lines.append(f"          {pm['reason']}")
    if pm.get("overflow"):
        lines.append("          the hardware buffer overflowed: some samples were lost")
    return lines


def neighbours_during_run(report: Report) -> list[str]:
    """Who else used the host and the GPU while the run called."""
    return neighbours_lines(report.get("neighbours"))


def enqueue_lines(report: Report) -> list[str]:
    """How long the enqueues took to return, against the synced calls."""
    enqueue = report.get("enqueue")
    if not enqueue or not enqueue.get("count"):
        return []
    return [
        f"enqueue   p50 {ms(enqueue['p50_ms'])} for the enqueues to return, vs p50 {ms(report['calls'].get('p50_ms'))} "
        "synced: the difference is work still queued when enqueue returns"
    ]


def stages_lines(report: Report) -> list[str]:
    """A two-stage demo's stages, synced and not: where an unsynced stage's work lands."""
    stages = report.get("stages")
    if not stages:
        return []
    return [
        f"stages    A alone {ms_fixed(stages['a_synced_ms'], 2)}, B alone {ms_fixed(stages['b_synced_ms'], 2)}, "
        f"A then B {ms_fixed(stages['a_then_b_synced_ms'], 2)} (one sync at the end)",
        f"          unsynced: A 'takes' {ms_fixed(stages['a_enqueue_only_ms'])}, then B 'takes' "
        f"{ms_fixed(stages['b_after_unsynced_a_ms'], 2)} (A's work lands on B, the stage that syncs); "
        f"device: A {ms_fixed(stages['a_kernel_ms'], 2)}, B {ms_fixed(stages['b_kernel_ms'], 2)}",
    ]


def memory_lines(report: Report) -> list[str]:
    """Each device's pools (live and peak) and what the driver saw used, the module's weights, then the host's
    RSS peak."""
    memory = report.get("memory") or {}
    lines = []
    for row in memory.get("devices", []):
        pools = ", ".join(
            f"{p['memory_type']} live {human_bytes(p['live_bytes'])} peak {human_bytes(p['peak_bytes'])}"
            for p in row.get("pools", [])
            if p["peak_bytes"] or p["allocated_bytes"]
        )
        device_line = ""
        if row.get("device_used_bytes") is not None:
            device_line = (
                f"  device {human_bytes(row['device_used_bytes'])} / "
                f"{human_bytes(row.get('device_total_bytes'))} ({row.get('source')})"
            )
        lines.append(f"memory    {row['device_id']}: {pools or 'no allocations seen'}{device_line}")
    modules = [row for row in memory.get("module_bytes") or [] if weight_bytes(row) != 0]
    for row in modules:  # the module's weights, which the pools above may not hold
        lines.append(f"module    {row['device_id'] + ': ' if len(modules) > 1 else ''}{module_bytes_text(row)}")
    if memory.get("host_rss_peak_bytes"):
        lines.append(f"host      RSS peak {human_bytes(memory['host_rss_peak_bytes'])}")
    return lines


def outputs_lines(report: Report) -> list[str]:
    """Each output's shape and type, and its mean, min and max where they were taken."""
    lines = []
    for output in report.get("outputs", []):
        shape = "x".join(str(d) for d in output["shape"]) or "scalar"
        stats = ""
        if output.get("mean") is not None:
            stats = f"  mean {output['mean']:.4g}  min {output['min']:.4g}  max {output['max']:.4g}"
        lines.append(f"output {output['index']}  {shape} {output['dtype']}{stats}")
    return lines


def check_lines(report: Report) -> list[str]:
    """The output check's verdict, its errors and tolerances, and the outputs it could not check."""
    check = report.get("check")
    if not check:
        return []
    verdict = "PASSED" if check["passed"] else "FAILED"
    tolerances = check.get("tolerances") or []
    unchecked = check.get("unchecked") or []
    applied = f", {check_tolerances(tolerances)}" if tolerances else ""
    lines = [
        f"check     {verdict} against {check['reference']} "
        f"(max abs err {check['max_abs_err']:.3g}, max rel err {check['max_rel_err']:.3g}{applied})"
    ]
    if unchecked:
        lines.append(f"check     {unchecked_outputs(unchecked, len(tolerances) + len(unchecked))}")
    return lines


def captures_lines(report: Report) -> list[str]:
    """The RenderDoc captures the run made."""
    return [
        f"capture   {capture['path']} ({capture['bytes']} bytes, {capture['dispatches']} dispatches, "
        f"{capture['calls']} call(s), {capture['api']})"
        for capture in report.get("captures") or []
    ]


def exports_lines(report: Report) -> list[str]:
    """A multi-device run's exports: where each was produced and exported, and what moved (a one-device run's
    are all on its device: the report's `outputs` line says what the called function returned)."""
    if not report.get("exports") or not report.get("device_names"):
        return []
    table = affinity_table(report["exports"], report.get("transfers", []), report.get("device_names") or {})
    return ["exports", *("  " + line for line in table.splitlines())]


def diagnostics_lines(report: Report) -> list[str]:
    """The compiler's and the run's diagnostics, one line each."""
    return [
        f"{diag['severity']:9s} {diag.get('location') or ''} {diag['message']}".rstrip()
        for diag in report.get("diagnostics", [])
    ]


def session_lines(report: Report) -> list[str]:
    """Where the run's record is."""
    return [f"session   {report['session_dir']}"]


# The report's sections in reading order: each takes the report and says nothing when it has nothing.
SECTIONS: tuple[Callable[[Report], list[str]], ...] = (
    heading_lines,
    module_lines,
    parameters_lines,
    calls_lines,
    clocks_lines,
    pm_sampling_lines,
    neighbours_during_run,
    enqueue_lines,
    stages_lines,
    memory_lines,
    outputs_lines,
    check_lines,
    kernels_lines,
    layers_lines,
    counters_lines,
    captures_lines,
    exports_lines,
    diagnostics_lines,
    session_lines,
)


# -- a watched program's sections (`gputop run -- CMD`): what the program did, from the report's program keys --


def program_lines(report: Report) -> list[str]:
    """Which program ran, how it ended, and its Python and IREE."""
    program = report.get("program") or {}
    lines = [f"program   {program_title(program)} {ended_text(program)}"]
    if program.get("python") or program.get("iree"):
        lines.append(f"python    {program.get('python') or '?'}, iree.runtime {program.get('iree') or '?'}")
    return lines


def program_phases_lines(report: Report) -> list[str]:
    """The phases a program has: its loads, context and first call."""
    phases = report.get("phases") or {}
    said = [
        f"{label} {seconds(phases.get(key))}"
        for label, key in (
            ("module load", "load_s"),
            ("parameters", "parameters_s"),
            ("context", "context_s"),
            ("first call", "first_call_s"),
        )
        if phases.get(key) is not None
    ]
    return ["phases    " + "  ".join(said)] if said else []


def program_parameters_lines(report: Report) -> list[str]:
    """How the program loaded its parameters: bytes, the call, its mode, through what, how long."""
    params = report.get("parameters") or {}
    if not params.get("bytes"):
        return []
    mode = f" ({params['mode']})" if params.get("mode") else ""
    through = f" through {params['through']}" if params.get("through") else ""
    return [
        f"params    {human_bytes(params['bytes'])} by {params.get('api') or '?'}{mode}{through}, "
        f"{seconds(params.get('seconds'))}"
    ]


def functions_lines(report: Report) -> list[str]:
    """One row per function the program called, the busiest first."""
    functions = report.get("functions") or []
    if not functions:
        return []
    lines = ["functions", *program_table([list(FUNCTION_HEADER), *function_rows(functions, live=False)])]
    for row in functions:
        name = function_name(row)
        parts = parts_line(row.get("parts"))
        if parts:
            lines.append(f"  {name}: {parts}")
        if row.get("between_p50_ms") is not None:
            lines.append(f"  {name}: between calls {ms(row['between_p50_ms'])} (the program's own time, p50)")
    # The report's calls are the busiest function's (the first row): its groups, as the Run pane says them.
    groups = modes_text((report.get("calls") or {}).get("modes"))
    if groups:
        lines.append(f"  {function_name(functions[0])}: {groups}")
    dropped = dropped_line(report.get("program") or {})
    return [*lines, *([f"  {dropped}"] if dropped else [])]


def program_stacks_lines(report: Report) -> list[str]:
    """Where the program's own Python spent its time (py-spy's samples), its busiest lines."""
    return [
        f"python    {line}" if i == 0 else line
        for i, line in enumerate(stacks_lines((report.get("program") or {}).get("stacks"), indent="          "))
    ]


def program_memory_lines(report: Report) -> list[str]:
    """Results the program holds, and memory that grows per call."""
    memory = report.get("memory") or {}
    held = held_line(memory.get("held"), memory.get("growth"))
    return [f"memory    {held}"] if held else []


def hints_lines(report: Report) -> list[str]:
    """The diagnoses, one line each."""
    hints = report.get("hints") or []
    return ["hints", *(f"  ! {hint}" for hint in hints)] if hints else []


def program_session_lines(report: Report) -> list[str]:
    """Where the session's record is (a program's report may have none yet)."""
    return [f"session   {report.get('session_dir')}"]


PROGRAM_SECTIONS: tuple[Callable[[Report], list[str]], ...] = (
    program_lines,
    program_phases_lines,
    program_parameters_lines,
    functions_lines,
    program_stacks_lines,
    program_memory_lines,
    hints_lines,
    program_session_lines,
)
