"""Plain-text renderings of device lists and run reports for the terminal.

The headless commands must read well in a CI log or over a slow SSH link, so
this writes aligned plain text with no colour codes, from the same JSON
dictionaries that `--json` writes: what a person reads and what a script
parses can never disagree.
"""

from __future__ import annotations

from typing import Any

# The run phases in run order, as (label, report key); the Run pane shows the same.
PHASES = (
    ("compile", "compile_s"),
    ("load", "load_s"),
    ("parameters", "parameters_s"),
    ("context", "context_s"),
    ("first call", "first_call_s"),
    ("teardown", "teardown_s"),
)


def human_bytes(value: int | None) -> str:
    if value is None:
        return "-"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{value} B"


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1e3:.1f} ms" if value < 1 else f"{value:.2f} s"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f} ms"


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


def sessions_table(entries: list[dict[str, Any]]) -> str:
    """`gputop sessions`: one row per session, oldest first."""
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
                _seconds(e.get("duration_s")),
                "-" if e.get("samples") is None else str(e["samples"]),
            )
        )
    return _table(rows)


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
        + ("" if phases.get("import_s") is None else f"import {_seconds(phases['import_s'])}  ")
        + "  ".join(f"{name} {_seconds(phases.get(key))}" for name, key in PHASES),
    ]
    compiled = report.get("compile") or {}
    if compiled.get("vmfb"):
        how = "cache hit" if compiled.get("cache_hit") else "compiled"
        lines.append(f"module    {compiled['vmfb']} ({how})")
    if calls.get("count"):
        rate = calls.get("calls_per_s")
        lines.append(
            f"calls     {calls['count']} synced  min {_ms(calls['min_ms'])}  p50 {_ms(calls['p50_ms'])}"
            f"  p95 {_ms(calls['p95_ms'])}  max {_ms(calls['max_ms'])}" + (f"  ({rate:.1f} calls/s)" if rate else "")
        )
    enqueue = report.get("enqueue")
    if enqueue and enqueue.get("count"):
        lines.append(
            f"enqueue   p50 {_ms(enqueue['p50_ms'])} for the enqueues to return, vs p50 {_ms(calls.get('p50_ms'))} "
            "synced: the difference is work still queued when enqueue returns"
        )
    stages = report.get("stages")
    if stages:
        lines.append(
            f"stages    A alone {stages['a_synced_ms']:.2f} ms, B alone {stages['b_synced_ms']:.2f} ms, "
            f"A then B {stages['a_then_b_synced_ms']:.2f} ms (one sync at the end)"
        )
        lines.append(
            f"          unsynced: A 'takes' {stages['a_enqueue_only_ms']:.3f} ms, then B 'takes' "
            f"{stages['b_after_unsynced_a_ms']:.2f} ms (A's work lands on B, the stage that syncs); "
            f"device: A {stages['a_kernel_ms']:.2f} ms, B {stages['b_kernel_ms']:.2f} ms"
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
        lines.append(
            f"check     {verdict} against {check['reference']} "
            f"(max abs err {check['max_abs_err']:.3g}, max rel err {check['max_rel_err']:.3g})"
        )
    kernels = report.get("kernels") or []
    if kernels:
        profile = report.get("profile") or {}
        lines.append(
            f"kernels   {profile.get('source')} over {profile.get('calls')} calls: "
            f"{report['call_kernel_ms']:.3f} ms kernel time per call"
            + (
                f" of {report['call_wall_ms']:.3f} ms synced ("
                + (
                    f"gap {report['call_gap_ms']:.3f} ms)"
                    if report["call_gap_ms"] >= 0
                    else "dispatches overlap: their summed time exceeds the call)"
                )
                if report.get("call_wall_ms") is not None
                else ""
            )
        )
        width = max(len(k["name"]) for k in kernels)
        lines.append(f"  {'kernel'.ljust(width)}  {'count':>6}  {'avg us':>10}  {'min us':>10}  {'max us':>10}  share")
        for k in kernels:
            lines.append(
                f"  {k['name'].ljust(width)}  {k['count']:>6}  {k['avg_us']:>10.1f}  {k['min_us']:>10.1f}"
                f"  {k['max_us']:>10.1f}  {k['share'] * 100:5.1f}%"
            )
        if profile.get("trace_path"):
            lines.append(f"trace     {profile['trace_path']} (open in Perfetto)")
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


FLAG_TEXT = {
    "hidden_transfer": "HIDDEN TRANSFER: exported away from its producer",
    "transfer": "moved to another device before use",
    "undeclared": "undeclared affinity",
}


def affinity_table(exports: list[dict[str, Any]], transfers: list[dict[str, Any]], names: dict[str, str]) -> str:
    """The affinity records as an aligned table, device names with their ids."""

    def dev(name: str | None) -> str:
        if not name:
            return "-"
        return f"{name} ({names[name]})" if name in names else name

    header = ("FUNCTION", "KIND", "#", "DECLARED", "EXPORTED ON", "PRODUCED/USED ON", "BYTES MOVED", "FLAG")
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
                str(r["transfer_bytes"]) if r["transfer_bytes"] else "-",
                FLAG_TEXT.get(r["flag"] or "", ""),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    for t in transfers:
        lines.append(
            f"transfer  {t['function']}: {dev(t['source'])} -> {dev(t['target'])}, {t['bytes']} bytes ({t['op']})"
        )
    return "\n".join(lines)
