"""The report of a watched program: a gputop run's report, plus what only a program has.

The keys a gputop run's report has (`phases`, `calls`, `memory`, `parameters`,
`kernels`, `hints`, ...) keep their meaning, so `gputop compare`, `report`
and Prometheus read a program's session as they read any. Added (the issue's
contract): `program` (command, pid, exit code, how it ended), `functions`
(one row per function, the busiest first), `parameters.bytes`/`mode`/
`through` as the program loaded them, `memory.growth` and `memory.held`,
the diagnoses in `hints`. `phases.context_s` sums every context creation.
"""

from __future__ import annotations

from typing import Any

from gputop.core.records.program import ProgramView
from gputop.core.snapshot import RunSnapshot, to_json

__all__ = ["program_report", "program_section"]


def program_section(view: ProgramView) -> dict[str, Any]:
    """The report's `program`: who ran, and how it ended (`ended`: exited, raised, signal; null while it runs)."""
    return {
        "command": list(view.command),
        "pid": view.pid,
        "exit_code": view.exit_code,
        "ended": view.ended,
        "ended_line": view.ended_line,
        "python": view.python,
        "iree": view.iree,
        "contexts": view.contexts,
        "other_processes": view.others,
        "loads": to_json(view.loads),
        "calls_made": view.calls_made,
        "calls_dropped": view.calls_dropped,
        "context_p50_ms": view.context_p50_ms,
        "stacks": to_json(view.stacks),
    }


def program_report(report: dict[str, Any], snapshot: RunSnapshot) -> dict[str, Any]:
    """`report` (a run's, built from `snapshot`) completed with the program's own keys."""
    view = snapshot.program
    if view is None:
        return report
    report["program"] = program_section(view)
    report["functions"] = [to_json(row) for row in view.functions]
    params = [load for load in view.loads if load.kind == "parameters"]
    parameters = dict(report.get("parameters") or {})
    if params:
        total = sum(load.bytes for load in params)
        spent = sum(load.seconds for load in params)
        throughs = {load.through for load in params if load.through}
        parameters.update(
            files=sorted({file for load in params for file in load.files}),
            mode=params[0].how,
            api=params[0].api,
            bytes=total,
            seconds=spent,
            gbps=total / spent / 1e9 if spent > 0 and total else None,
            # One load through host memory makes the program's parameters slow: say so over the file handles.
            through="host memory" if "host memory" in throughs else (throughs.pop() if throughs else None),
            tensors=sum(load.tensors or 0 for load in params) or None,
        )
    else:
        parameters.setdefault("through", None)
    report["parameters"] = parameters
    memory = dict(report.get("memory") or {})
    memory["growth"] = to_json(view.growth)
    memory["held"] = to_json(view.held)
    report["memory"] = memory
    report["hints"] = [*report.get("hints", []), *view.hints]
    return report
