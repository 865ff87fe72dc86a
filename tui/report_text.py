"""Plain-text renderings of device lists and run reports for the terminal.

The headless commands must read well in a CI log or over a slow SSH link, so
this writes aligned plain text with no colour codes, from the same JSON
dictionaries that `--json` writes: what a person reads and what a script
parses can never disagree. Every number is written by `gputop.core.units`,
as the TUI's panes write it, so `gputop report` and the TUI agree too.
"""

from __future__ import annotations

from typing import Any

from gputop.core.profiling.overhead import kernels_cost_text, overhead_text, overhead_warning
from gputop.core.units import (
    ABOVE_ESTIMATE,
    ESTIMATE_NOTE,
    NAME_MARK,
    RATE,
    TIME_US,
    check_tolerances,
    column,
    fixed,
    gbps,
    human_bytes,
    limits_lines,
    ms,
    ms_fixed,
    name_marked,
    neighbours_lines,
    pct_of_bound,
    percent,
    seconds,
    share_of_ceiling,
    unchecked_outputs,
    work_lines,
)
from gputop.tui.counters_text import counters_lines

__all__ = [
    "BREAKDOWN_ROWS",
    "DISPATCH_COLUMNS",
    "FLAG_TEXT",
    "KERNEL_NUMBERS",
    "PHASES",
    "affinity_table",
    "breakdown_table",
    "capture_text",
    "devices_table",
    "dispatch_rows",
    "kernel_table",
    "parameter_stages_line",
    "parameters_progress",
    "replay_line",
    "run_report",
    "sessions_table",
]

# The run phases in run order, as (label, report key); the Run pane shows the same.
PHASES = (
    ("compile", "compile_s"),
    ("load", "load_s"),
    ("parameters", "parameters_s"),
    ("context", "context_s"),
    ("first call", "first_call_s"),
    ("teardown", "teardown_s"),
)


def parameters_progress(load: Any, *, mode: bool = True) -> str:
    """A parameters' load in one line (a `ParameterLoad`): under way, or its totals once done.

    `4.2 GiB / 14.7 GiB (28%)  25.3 GB/s  0.4 s left  streamed` while it runs;
    `14.7 GiB in 581.0 ms  25.4 GB/s  streamed` after. IREE's own loaders are
    seen only when they finish, which the line says instead of a rate.
    """
    how = f"  {load.mode}" if mode else ""
    rate = f"  {gbps(load.gbps)}" if load.gbps else ""
    if load.done and load.zero_copy:
        return f"{human_bytes(load.loaded_bytes)} mapped in place (zero copy){how}"
    if load.done:
        return f"{human_bytes(load.loaded_bytes)} in {seconds(load.seconds)}{rate}{how}"
    if not load.observed:
        return f"{human_bytes(load.total_bytes)}, {seconds(load.seconds)} so far{how} (IREE reports only the end)"
    share = f" ({load.loaded_bytes / load.total_bytes:.0%})" if load.total_bytes else ""
    left = f"  {fixed(load.eta_s)} s left" if load.eta_s is not None else ""
    return f"{human_bytes(load.loaded_bytes)} / {human_bytes(load.total_bytes)}{share}{rate}{left}{how}"


def parameter_stages_line(stages: dict[str, Any]) -> str:
    """The streamed loader's stage shares in one line (a report's `parameters.stages`).

    `o_direct, 8 readers: read 91% slot wait 6% | loader waits: reads 72% copies 20%, own work 8%
    -> limited by reads | allocated 2.0 ms before the reads, 9.3 ms beside them | context after last
    byte 4.1 ms`: the readers' shares are of their worker-seconds, the loading thread's of the wall
    time (see `ParameterStages`).
    """
    note = "  (" + stages["read_path_note"] + ")" if stages.get("read_path_note") else ""
    after = stages.get("context_after_s")
    allocated = f" | allocated {seconds(stages['allocate_s'])} before the reads" if "allocate_s" in stages else ""
    if allocated and stages.get("allocate_overlapped_s"):
        allocated += f", {seconds(stages['allocate_overlapped_s'])} beside them"
    return (
        f"{stages['read_path']}, {stages['readers']} readers: read {percent(100 * stages['read_share'], 0)} "
        f"slot wait {percent(100 * stages['slot_wait_share'], 0)} | loader waits: "
        f"reads {percent(100 * stages['read_wait_share'], 0)} copies {percent(100 * stages['dma_wait_share'], 0)}, "
        f"own work {percent(100 * stages['submit_share'], 0)} -> limited by {stages['limited_by']}"
        + allocated
        + (f" | context after last byte {seconds(after)}" if after is not None else "")
        + note
    )


def devices_table(rows: list[dict[str, Any]]) -> str:
    header = ("ID", "BACKEND", "AVAILABLE", "MEMORY", "NAME / REASON")
    lines = [header]
    for row in rows:
        detail = row["name"]
        if row.get("reason") and not row["available"]:
            detail = row["reason"]
        lines.append(
            (
                row["id"],
                row["backend"],
                "yes" if row["available"] else "no",
                human_bytes(row["memory_total_bytes"]),
                detail,
            )
        )
    widths = [max(len(str(line[i])) for line in lines) for i in range(4)]
    out = []
    for line in lines:
        cells = [str(line[i]).ljust(widths[i]) for i in range(4)]
        out.append("  ".join(cells) + "  " + str(line[4]))
    return "\n".join(out)


def _table(rows: list[tuple[str, ...]]) -> str:
    """Left-aligned columns, two spaces apart; the last column is not padded."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows)


def cut_middle(text: str, width: int) -> str:
    """`text` in at most `width` characters, its middle given up for `…` (a path keeps its start and file name)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    head = (width - 1) // 2
    tail = width - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


SESSIONS_TARGET_MIN = 16  # the TARGET column gives way down to this; narrower terminals wrap


def sessions_table(entries: list[dict[str, Any]], width: int | None = None) -> str:
    """`gputop sessions`: one row per session, oldest first; within `width` columns when given, by
    cutting the middle of long targets (never the id, which `report`, `open` and `attach` take)."""
    import time

    rows: list[tuple[str, ...]] = [("STARTED", "ID", "TARGET", "DEVICE", "STATE", "DURATION", "SAMPLES")]
    for e in entries:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e["started_at"]))
        state = e["state"] if e.get("exit_code") in (None, 0) else f"{e['state']} ({e['exit_code']})"
        rows.append(
            (
                started,
                e["id"],
                e.get("target") or "-",
                e.get("device") or "-",
                state,
                seconds(e.get("duration_s")),
                "-" if e.get("samples") is None else str(e["samples"]),
            )
        )
    return _table(rows if width is None else _fit_sessions(rows, width))


def _fit_sessions(rows: list[tuple[str, ...]], width: int) -> list[tuple[str, ...]]:
    """The sessions table within `width`: long targets lose their middle (down to SESSIONS_TARGET_MIN),
    then SAMPLES goes, then STARTED (a default id starts with the same time), then targets shrink to 8."""

    def fitted(rows: list[tuple[str, ...]], least: int) -> tuple[list[tuple[str, ...]], bool]:
        target = rows[0].index("TARGET")
        others = sum(max(len(row[i]) for row in rows) + 2 for i in range(len(rows[0])) if i != target)
        room = max(least, width - others)
        cut = [(*row[:target], cut_middle(row[target], room), *row[target + 1 :]) for row in rows]
        return cut, max(len(line) for line in _table(cut).splitlines()) <= width

    steps = ((), ("SAMPLES",), ("SAMPLES", "STARTED"))
    for drop, least in [(drop, SESSIONS_TARGET_MIN) for drop in steps] + [(steps[-1], 8)]:
        keep = [i for i, name in enumerate(rows[0]) if name not in drop]
        narrowed, fits = fitted([tuple(row[i] for i in keep) for row in rows], least)
        if fits:
            return narrowed
    return narrowed  # ids too long for the terminal: the rows wrap, whole ids and all


def run_report(report: dict[str, Any]) -> str:
    dev = report.get("device") or {}
    phases = report["phases"]
    calls = report["calls"]
    lines = [
        f"gputop run {report['target']}  function {report.get('function') or '-'}",
        f"device    {dev.get('id', '-')}  {dev.get('name', '')}",
        f"state     {report['state']}" + (f"  ({report['error']})" if report.get("error") else ""),
        *([f"note      {report['rebuilt']}"] if report.get("rebuilt") else []),
        "phases    "
        + ("" if phases.get("import_s") is None else f"import {seconds(phases['import_s'])}  ")
        + "  ".join(f"{name} {seconds(phases.get(key))}" for name, key in PHASES),
    ]
    compiled = report.get("compile") or {}
    if compiled.get("vmfb"):
        how = "cache hit" if compiled.get("cache_hit") else "compiled"
        lines.append(f"module    {compiled['vmfb']} ({how})")
    params = report.get("parameters") or {}
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
    if calls.get("count"):
        rate = calls.get("calls_per_s")
        lines.append(
            f"calls     {calls['count']} synced  min {ms(calls['min_ms'])}  p50 {ms(calls['p50_ms'])}"
            f"  p95 {ms(calls['p95_ms'])}  max {ms(calls['max_ms'])}" + (f"  ({fixed(rate)} calls/s)" if rate else "")
        )
    lines.extend(neighbours_lines(report.get("neighbours")))
    enqueue = report.get("enqueue")
    if enqueue and enqueue.get("count"):
        lines.append(
            f"enqueue   p50 {ms(enqueue['p50_ms'])} for the enqueues to return, vs p50 {ms(calls.get('p50_ms'))} "
            "synced: the difference is work still queued when enqueue returns"
        )
    stages = report.get("stages")
    if stages:
        lines.append(
            f"stages    A alone {ms_fixed(stages['a_synced_ms'], 2)}, B alone {ms_fixed(stages['b_synced_ms'], 2)}, "
            f"A then B {ms_fixed(stages['a_then_b_synced_ms'], 2)} (one sync at the end)"
        )
        lines.append(
            f"          unsynced: A 'takes' {ms_fixed(stages['a_enqueue_only_ms'])}, then B 'takes' "
            f"{ms_fixed(stages['b_after_unsynced_a_ms'], 2)} (A's work lands on B, the stage that syncs); "
            f"device: A {ms_fixed(stages['a_kernel_ms'], 2)}, B {ms_fixed(stages['b_kernel_ms'], 2)}"
        )
    memory = report.get("memory") or {}
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
    if memory.get("host_rss_peak_bytes"):
        lines.append(f"host      RSS peak {human_bytes(memory['host_rss_peak_bytes'])}")
    for output in report.get("outputs", []):
        shape = "x".join(str(d) for d in output["shape"]) or "scalar"
        stats = ""
        if output.get("mean") is not None:
            stats = f"  mean {output['mean']:.4g}  min {output['min']:.4g}  max {output['max']:.4g}"
        lines.append(f"output {output['index']}  {shape} {output['dtype']}{stats}")
    check = report.get("check")
    if check:
        verdict = "PASSED" if check["passed"] else "FAILED"
        tolerances = check.get("tolerances") or []
        unchecked = check.get("unchecked") or []
        applied = f", {check_tolerances(tolerances)}" if tolerances else ""
        lines.append(
            f"check     {verdict} against {check['reference']} "
            f"(max abs err {check['max_abs_err']:.3g}, max rel err {check['max_rel_err']:.3g}{applied})"
        )
        if unchecked:
            lines.append(f"check     {unchecked_outputs(unchecked, len(tolerances) + len(unchecked))}")
    kernels = report.get("kernels") or []
    if kernels:
        profile = report.get("profile") or {}
        lines.append(
            f"kernels   {profile.get('source')} over {profile.get('calls')} calls: "
            f"{ms_fixed(report['call_kernel_ms'])} kernel time per call"
            + (
                f" of {ms_fixed(report['call_wall_ms'])} synced ("
                + (
                    f"gap {ms_fixed(report['call_gap_ms'])})"
                    if report["call_gap_ms"] >= 0
                    else "dispatches overlap: their summed time exceeds the call)"
                )
                if report.get("call_wall_ms") is not None
                else ""
            )
        )
        lines.extend(limits_lines(profile))
        lines.extend(overhead_lines(profile))
        lines.extend(neighbours_lines(profile.get("neighbours"), "pass"))
        estimate = bool((profile.get("peaks") or {}).get("estimate"))
        table = kernel_table(kernels, estimate)
        lines.extend("  " + line for line in table.splitlines())
        if ABOVE_ESTIMATE in table:
            lines.append(f"          {ESTIMATE_NOTE} (the peaks line says how they were estimated)")
        lines.extend(work_lines(kernels))
        breakdown = report.get("call_breakdown")
        if breakdown:
            lines.extend(breakdown_table(breakdown))
        for hint in report.get("hints") or []:
            lines.append(f"hint      {hint}")
        if profile.get("trace_path"):
            lines.append(f"trace     {profile['trace_path']} (open in Perfetto)")
    lines.extend(counters_lines(report))
    for capture in report.get("captures") or []:
        lines.append(
            f"capture   {capture['path']} ({capture['bytes']} bytes, {capture['dispatches']} dispatches, "
            f"{capture['calls']} call(s), {capture['api']})"
        )
    if report.get("exports"):
        lines.append("exports")
        table = affinity_table(report["exports"], report.get("transfers", []), report.get("device_names") or {})
        lines.extend("  " + line for line in table.splitlines())
    for diag in report.get("diagnostics", []):
        lines.append(f"{diag['severity']:9s} {diag.get('location') or ''} {diag['message']}".rstrip())
    lines.append(f"session   {report['session_dir']}")
    return "\n".join(lines)


def overhead_lines(profile: dict[str, Any]) -> list[str]:
    """The pass's own cost: its calls against unprofiled ones, how those were had, and a warning over 1.05."""
    cost = profile.get("overhead")
    if not cost:
        return []
    lines = [f"overhead  {overhead_text(cost)}", f"          unprofiled: {cost['method']}"]
    warning = overhead_warning(cost, profile.get("profiling_on"))
    if warning:
        lines.append(f"WARNING   {warning}")
    separate = kernels_cost_text(profile.get("kernels_overhead"))
    if separate:
        lines.append(f"kernels   {separate}")
        lines.append(f"          {overhead_text(profile['kernels_overhead'])}, {profile.get('kernels_profiling_on')}")
    return lines


BREAKDOWN_ROWS = (
    ("host_ms", "host", "the host working, nothing submitted pending"),
    ("queue_ms", "queue", "queue operations submitted, not yet running or done"),
    ("alloc_ms", "alloc", "queue-ordered allocations and frees pending"),
    ("device_busy_ms", "device busy", "dispatches running"),
    ("device_idle_ms", "device idle", "inside a device submission, no dispatch running"),
    ("return_wait_ms", "return wait", "device done, host not yet back"),
    ("unaccounted_ms", "unaccounted", "outside what the records see"),
)


def breakdown_table(breakdown: dict[str, Any]) -> list[str]:
    """`gputop run --profile`'s call breakdown: each part's time per call and share, largest marked."""
    wall = breakdown["wall_ms"] or 0.0
    totals = breakdown["totals"]
    largest = max((key for key, _, _ in BREAKDOWN_ROWS[:-1]), key=lambda key: totals.get(key, 0.0))
    lines = [
        f"breakdown {breakdown['calls']} calls, {ms_fixed(wall)} synced per call, "
        f"kernels {ms_fixed(breakdown['kernel_ms'])} "
        f"({'timed in another run' if breakdown.get('kernels_apart') else 'inside device busy'}); "
        f"from {breakdown['source']}",
        f"          device time on the host clock: {breakdown['fit']}",
    ]
    for key, label, meaning in BREAKDOWN_ROWS:
        value = totals.get(key, 0.0)
        share = percent(100 * value / wall).rjust(6) if wall else "    -"
        mark = "  <- largest" if key == largest and value > 0 else ""
        lines.append(f"  {label:<12} {ms_fixed(value):>13}  {share}  {meaning}{mark}")
    return lines


FLAG_TEXT = {
    "hidden_transfer": "HIDDEN TRANSFER: exported away from its producer",
    "transfer": "moved to another device (before use, or before its export)",
    "undeclared": "undeclared affinity",
    "passthrough": "argument returned unchanged: it stays where the caller put it",
}


def affinity_table(exports: list[dict[str, Any]], transfers: list[dict[str, Any]], names: dict[str, str]) -> str:
    """The affinity records as an aligned table, device names with their ids."""

    def dev(name: str | None) -> str:
        if not name:
            return "-"
        for separator in (",", "|"):  # several readers, or producers on different paths
            if separator in name:
                return separator.join(dev(part) for part in name.split(separator))
        return f"{name} ({names[name]})" if name in names else name

    def observed(value: int | None) -> str:
        return "?" if value is None else str(value) if value else "-"

    def moved(count: int, expr: str | None, from_call: bool | None) -> str:
        """A byte count; a dynamic size as its formula, or its value for the call's shapes marked `(call)`."""
        if expr and from_call:
            return f"{count} (call)"
        if expr:
            return expr
        return str(count) if count else "-"

    header = ("FUNCTION", "KIND", "#", "DECLARED", "EXPORTED ON", "PRODUCED/USED ON", "BYTES MOVED", "OBSERVED", "FLAG")
    rows = [header]
    for r in exports:
        rows.append(
            (
                r["function"],
                r["kind"],
                str(r["index"]),
                dev(r["declared"]) if r["declared"] else "undeclared",
                dev(r["export_affinity"]),
                dev(r["producer_affinity"]),
                moved(r["transfer_bytes"], r.get("transfer_bytes_expr"), r.get("bytes_from_call")),
                observed(r.get("observed_transfer_bytes")),
                FLAG_TEXT.get(r["flag"] or "", ""),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    dynamic = False
    for t in transfers:
        seen = t.get("observed_bytes")
        expr = t.get("bytes_expr")
        size = f"{t['bytes']} bytes" if not expr else f"{t['bytes']} bytes (= {expr} for the call's shapes)"
        if expr and not t.get("bytes_from_call"):
            size = f"{expr} bytes (dynamic)"
        dynamic = dynamic or bool(expr)
        lines.append(
            f"transfer  {t['function']}: {dev(t['source'])} -> {dev(t['target'])}, {size} ({t['op']})"
            + ("" if seen is None else f", observed {seen} bytes")
        )
    if dynamic:
        lines.append("dynamic sizes: argN[i] is dimension i of argument N; (call): computed from the call's shapes")
    return "\n".join(lines)


KERNEL_NUMBERS = ("avg", "min", "max", "share", "FLOP", "B", "FLOP/s", "B/s", "%peak")


def kernel_table(kernels: list[dict[str, Any]], estimate: bool = False) -> str:
    """The report's kernels, one row each, its numbers written as the Kernels pane writes them
    (`estimate`: the peaks are estimates, and a share above them is `>100%*`).

    Each numeric column is in the one unit the pane would pick for it (`avg ms`, `GFLOP/s`); the
    full dispatch names, the FLOPs and bytes of one dispatch are the report's own (the pane has
    no room for them). A name marked `*` has its work read from the name (`work_lines` says so).
    """
    labels: dict[str, str] = {}
    cells: dict[str, list[str]] = {}
    for name in ("avg", "min", "max"):
        labels[name], cells[name] = column(name, [k.get(f"{name}_us") for k in kernels], TIME_US)
    labels["share"], cells["share"] = "share", [percent(k["share"] * 100) for k in kernels]
    for name, values in (
        ("FLOP", [k.get("flops") for k in kernels]),
        ("B", [k.get("bytes") for k in kernels]),
        ("FLOP/s", [_scaled(k.get("achieved_tflops"), 1e12) for k in kernels]),
        ("B/s", [_scaled(k.get("achieved_gbps"), 1e9) for k in kernels]),
    ):
        prefix, cells[name] = column("", values, RATE)
        labels[name] = f"{prefix.strip()}{name}"  # GFLOP, MB, GFLOP/s, MB/s
    labels["%peak"] = "%peak"
    cells["%peak"] = [
        share_of_ceiling(pct_of_bound(k.get("bound"), k.get("pct_peak_compute"), k.get("pct_peak_bandwidth")), estimate)
        for k in kernels
    ]
    header = ("kernel", "count", *(labels[n] for n in KERNEL_NUMBERS), "bound")
    rows = [header] + [
        (
            k["name"] + (f" {NAME_MARK}" if name_marked(k) else ""),
            str(k["count"]),
            *(cells[n][i] for n in KERNEL_NUMBERS),
            k.get("bound") or "-",
        )
        for i, k in enumerate(kernels)
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    last = len(header) - 1

    def cell(i: int, text: str) -> str:
        return text if i == last else text.ljust(widths[i]) if i == 0 else text.rjust(widths[i])

    return "\n".join("  ".join(cell(i, text) for i, text in enumerate(row)).rstrip() for row in rows)


def _scaled(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


DISPATCH_COLUMNS = ("#", "dispatch", "workgroups", "buffers (binding: bytes)", "GPU µs")


def dispatch_rows(info: dict[str, Any]) -> list[tuple[str, ...]]:
    """One row per dispatch of a capture record (`capture-info --json`): the CLI's table and the modal's."""
    rows: list[tuple[str, ...]] = []
    for entry in info.get("dispatch_list") or []:
        counts = entry.get("workgroup_count")
        buffers = ", ".join(f"{b['binding']}: {human_bytes(b['bytes'])}" for b in entry.get("buffers") or [])
        name = entry["name"] + (f" ({entry['debug_name']})" if entry.get("debug_name") else "")
        duration = entry.get("gpu_duration_us")
        rows.append(
            (
                str(entry["index"]),
                name,
                "x".join(str(c) for c in counts) if counts else "indirect",
                buffers or "-",
                fixed(duration),
            )
        )
    return rows


def replay_line(info: dict[str, Any]) -> str | None:
    """What the replay gave, or why there was none; None when no replay was asked for."""
    replay = info.get("replay")
    if replay is None:
        return None
    if replay["ok"]:
        return f"replayed on {replay['device']}: {replay['reason']} ({replay.get('seconds') or 0:.1f} s)"
    return f"not replayed: {replay['reason']}"


def capture_text(info: dict[str, Any]) -> str:
    """`gputop capture-info FILE`: the capture, where it was made, its dispatches and the replay."""
    lines = [f"{info['path']}: {info['api']} capture, {info['bytes']} bytes, {info['dispatches']} dispatches"]
    if info.get("captured_on"):
        lines.append(f"captured on  {info['captured_on']}")
    lines.append(f"read by      {info.get('reader') or 'renderdoccmd'}")
    if info.get("reader_note"):
        lines.append(f"note         {info['reader_note']}")
    rows = dispatch_rows(info)
    if rows:
        lines.append("")
        lines.extend("  " + line for line in _table([DISPATCH_COLUMNS, *rows]).splitlines())
    else:
        lines.extend(f"  {name}" for name in info.get("dispatch_names") or [])
    replay = replay_line(info)
    if replay:
        lines.append("")
        lines.append(replay)
    return "\n".join(lines)
