"""A watched program's parts, as the faces write them: its title, how it ended, its function rows, held results.

The Run pane's calls (`program_calls_text`) and the header's title use them
live, from `to_json` of the `ProgramView`; the report's text (report.py's
program sections) from the report's JSON (`program`, `functions`, `memory`),
so the printout, the TUI and a script reading `--json` say the same numbers.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gputop.tui.bridge import RunSnapshot, exception_line, human_bytes, ms, program_refusal, to_json

__all__ = [
    "FUNCTION_HEADER",
    "dropped_line",
    "ended_text",
    "exception_text",
    "function_name",
    "function_rows",
    "held_line",
    "held_where",
    "no_profile_text",
    "parts_line",
    "program_calls_text",
    "program_table",
    "program_title",
    "stacks_lines",
    "watched_refusal",
]

FUNCTION_HEADER = ("function", "calls", "/s", "p50", "p95", "max")
# The MainScreen actions a watched program may refuse, as the engine names the request; the windows that draw a
# profile can act only where there is one, or where `p` can make one.
WATCHED_OPS = {
    "toggle_pause": "pause",
    "profile": "profile",
    "counters": "counters",
    "pm_sampling": "pm",
    "capture": "capture",
}
PROFILE_WINDOWS = ("timeline", "roofline", "layers")
PANE_NAME = 16  # the Run pane is narrow: a function's name is cut to this, the report keeps it whole


def program_title(program: Mapping[str, Any], width: int = 100) -> str:
    """`python app.py (pid 123)`, cut to `width`, and `+N processes` where others used IREE too."""
    command = shlex.join(program.get("command") or [])
    if len(command) > width:
        command = command[: max(width - 1, 8)] + "…"
    pid = program.get("pid")
    text = f"{command} (pid {pid})" if pid else command
    others = program.get("others") or program.get("other_processes") or 0
    if others:
        text += f" +{others} more process{'es' if others > 1 else ''}"
    return text


def watched_refusal(snapshot: RunSnapshot | None, action: str) -> str | None:
    """Why the MainScreen `action` cannot act on this watched program now (the engine's own sentence), or None:
    also None for a run gputop makes itself, whose refusals the engine gives when asked."""
    program = snapshot.program if snapshot is not None else None
    if snapshot is None or program is None:
        return None
    ended = ended_text(to_json(program)) if program.ended is not None else None
    backends = {device_id.split(":")[0] for device_id in snapshot.device_ids}
    if action in PROFILE_WINDOWS:
        if snapshot.profile is not None or snapshot.profiling:
            return None
        why = program_refusal("profile", backends, program.command, ended)
        return f"no profile of this program: {why}" if why else None
    op = WATCHED_OPS.get(action)
    return program_refusal(op, backends, program.command, ended) if op else None


def no_profile_text(snapshot: RunSnapshot | None, then: str = "") -> str:
    """What a pane or window that draws a profile says before there is one: how to make one (`then`: the key
    that opens it after), or, for a watched program `p` cannot profile (ended, not CUDA), why not."""
    why = watched_refusal(snapshot, "timeline")
    if why:
        return why
    return f"no profile yet: press p to profile the running module{then}"


def function_name(row: Mapping[str, Any]) -> str:
    """`module.function` of a function row (`functions[]` of a report or a ProgramView's JSON), else the name."""
    return f"{row.get('module')}.{row.get('name')}" if row.get("module") else str(row.get("name"))


def exception_text(line: str | None) -> str:
    """A watched program's exception in one line, the cause in it (`ValueError: ... expected 32 but have 33; ...`):
    IREE's VM frames and C source locations left out (the Log and program.log keep them)."""
    return exception_line(str(line or ""))[0]


def ended_text(program: Mapping[str, Any]) -> str:
    """`exited 0`, `raised: ValueError: bad`, `killed by SIGKILL (exit 137)`, or `running`."""
    ended = program.get("ended")
    code = program.get("exit_code")
    line = program.get("ended_line")
    if ended is None:
        return "running"
    if ended == "signal":
        return f"killed by {line} (exit {code})"
    if ended == "raised":
        return f"raised: {exception_text(line)} (exit {code})"
    return f"exited {code}"


def function_rows(
    functions: Sequence[Mapping[str, Any]],
    *,
    live: bool,
    limit: int | None = None,
    time_text: Callable[[float | None], str] = ms,
) -> list[list[str]]:
    """One row per function, the busiest first: name, calls, calls/s (now while live), p50, p95, max."""
    rows = []
    for row in functions[:limit] if limit else functions:
        rate = row.get("recent_calls_per_s") if live else row.get("calls_per_s")
        name = function_name(row)
        rows.append(
            [
                name,
                str(row.get("count", 0)),
                f"{rate:.1f}" if rate else "-",
                time_text(row.get("p50_ms")),
                time_text(row.get("p95_ms")),
                time_text(row.get("max_ms")),
            ]
        )
    return rows


def held_where(held: Mapping[str, Any] | None, devices: Sequence[Mapping[str, Any]]) -> str | None:
    """Where the program's held results are, for the Memory pane beside its pools (`devices`: the memory sample's
    `DeviceMemory` rows as JSON), or None while it holds none.

    On local-task the results a program keeps are in its host memory (its RSS grows by their bytes: 2,000 held
    64 KiB results, 125 MiB, grew it 129 MiB) while the allocator counts every one of them freed (allocated =
    freed, live 0 B): `held results 745 · 46.6 MiB: in host memory (host RSS below); not in the allocator's live
    0 B (local-task counts them freed)`. Elsewhere they are on the device, the allocator's live bytes beside
    them and whether those leave them out (live below held); how that allocator counts them is not said, not
    having been seen (IREE's statistics miss a compiled program's queue-ordered allocations). The pools come
    from the memory sample, which may lag the held count by one of the watcher's reports (0.5 s).
    """
    if not held or not held.get("count"):
        return None
    size = int(held.get("bytes") or 0)
    pools = [pool for row in devices for pool in row.get("pools") or ()]
    live = sum(int(pool.get("live_bytes") or 0) for pool in pools)
    allocated = sum(int(pool.get("allocated_bytes") or 0) for pool in pools)
    text = f"held results {int(held['count']):,} · {human_bytes(size)}"
    host = bool(devices) and all(row.get("source") == "host" for row in devices)
    ids = [str(row.get("device_id")) for row in devices]
    if host:
        text += ": in host memory (host RSS below)"
    elif ids:
        text += f": on {', '.join(ids)}"
    drivers = ", ".join(dict.fromkeys(i.split(":")[0] for i in ids))
    if live >= size:
        return text + f"; the allocator's live bytes {human_bytes(live)}"
    text += f"; not in the allocator's live {human_bytes(live)}"
    if host:  # seen on local-task: allocated = freed while they are held (the CPU's device memory is the host's)
        text += f" ({drivers} counts them freed)" if allocated else f" ({drivers} did not count them)"
    return text


def held_line(held: Mapping[str, Any] | None, growth: Mapping[str, Any] | None) -> str | None:
    """`held results 200 (3.1 MiB); grows 16.0 KiB per call since call 3 (held results)`, or None."""
    parts = []
    if held and held.get("count"):
        parts.append(f"held results {held['count']} ({human_bytes(held.get('bytes'))})")
    if growth:
        parts.append(
            f"grows {human_bytes(growth['bytes_per_call'])} per call since call {growth['since_call']} "
            f"({growth['source']})"
        )
    return "; ".join(parts) if parts else None


PARTS = ("arguments", "invoke", "results")  # a call's parts, in the order they happen


def parts_line(parts: Mapping[str, Any] | None, *, short: bool = False) -> str | None:
    """A function's call taken apart: `arguments 1.501 ms 90% (128.0 KiB) · invoke 0.073 ms 6% · results 0.057 ms
    4% · to_host 0.881 ms x1 (256 B)`; a part the watcher cannot see says so (`short`: the pane's width)."""
    if not parts:
        return None
    said = []
    for name in PARTS:
        part = parts.get(name) or {}
        if not part.get("seen", True):
            said.append(f"{name} not seen" if short else f"{name} not seen ({part.get('reason')})")
            continue
        if part.get("p50_ms") is None:
            continue
        share = f" {part['share']:.0%}" if part.get("share") is not None else ""
        moved = f" ({human_bytes(part['bytes'])})" if part.get("bytes") and not short else ""
        said.append(f"{name} {ms(part['p50_ms'])}{share}{moved}")
    to_host = parts.get("to_host") or {}
    if to_host.get("count"):
        per_call = parts.get("reads_per_call")
        times = f" x{per_call:.2g}" if per_call is not None and not short else ""
        moved = f" ({human_bytes(to_host['bytes'])})" if to_host.get("bytes") and not short else ""
        said.append(f"to_host {ms(to_host.get('p50_ms'))}{times}{moved}")
    return " · ".join(said) if said else None


def dropped_line(program: Mapping[str, Any]) -> str | None:
    """Where gputop fell behind the program: its counts are lower bounds, by how much."""
    dropped = program.get("calls_dropped") or 0
    if not dropped:
        return None
    return f"counts are lower bounds: {dropped:,} calls were counted in the program but not sent (gputop fell behind)"


def stacks_lines(stacks: Mapping[str, Any] | None, *, limit: int = 5, indent: str = "  ") -> list[str]:
    """The program's own lines where its time went (py-spy's samples), the busiest first; or why none."""
    if not stacks:
        return []
    if stacks.get("reason"):
        return [f"none: {stacks['reason']}"]
    samples = stacks.get("samples") or 0
    if not samples:
        return [f"{stacks.get('source')}: no sample yet"]
    in_calls = stacks.get("in_calls")
    inside = f"; {in_calls:.0%} inside IREE calls" if in_calls is not None else ""
    lines = [f"{stacks.get('source')}, {samples:,} samples at {stacks.get('rate_hz'):g}/s{inside}"]
    for top in (stacks.get("top") or [])[:limit]:
        where = f"{str(top['file']).rsplit('/', 1)[-1]}:{top['line']}"
        call = f" ({top['in_calls']:.0%} in calls)" if top.get("in_calls") else ""
        lines.append(f"{indent}{top['share']:>4.0%}  {where}  {top['function']}{call}")
    return lines


PANE_FUNCTIONS = 6  # rows the Run pane shows; the report lists every function


def program_calls_text(program: Mapping[str, Any], *, live: bool) -> str:
    """The Run pane's calls for a watched program: one row per function (the busiest first), held results."""
    functions = program.get("functions") or []
    if not functions:
        return "no calls yet: the program has not called a function\n(the Log shows its devices, loads, contexts)"
    rows = [["function", "calls", "/s", "p50 ms", "p95 ms"]]
    for row in function_rows(functions, live=live, limit=PANE_FUNCTIONS, time_text=_bare_ms):
        name = row[0] if len(row[0]) <= PANE_NAME else row[0][: PANE_NAME - 1] + "…"
        rows.append([name, *row[1:5]])
    lines = program_table(rows, indent="")
    if len(functions) > PANE_FUNCTIONS:
        lines.append(f"+{len(functions) - PANE_FUNCTIONS} more functions (gputop report)")
    parts = parts_line(functions[0].get("parts"), short=True)
    if parts:
        lines.append(f"{_cut(functions[0])}: {parts}")
    dropped = dropped_line(program)
    if dropped:
        lines.append(dropped)
    held = held_line(program.get("held"), program.get("growth"))
    if held:
        lines.append(held)
    return "\n".join(lines)


def _cut(row: Mapping[str, Any]) -> str:
    name = function_name(row)
    return name if len(name) <= PANE_NAME else name[: PANE_NAME - 1] + "…"


def _bare_ms(value: float | None) -> str:
    """`ms` without its unit: the pane's columns say ms once, in their header."""
    return ms(value).removesuffix(" ms")


def program_table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    """Rows as columns: the first left-aligned, the figures right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        indent + "  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row))
        for row in rows
    ]
