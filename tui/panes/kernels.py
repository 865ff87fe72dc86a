"""The Kernels pane: per-dispatch device times, sorted by total time, set against the device's limits.

Rows come only from device timestamps (profiles), never from host clocks
around asynchronous work; until a profile has been taken the pane says how
to get one rather than showing guesses. Each row carries the rate the kernel
achieved (from FLOPs and bytes counted in its IR) and its share of the ceiling
that bounds it; above the table are the pass's clock and the device's peaks,
and a warning when the clock makes the times misleading. With a baseline
(`b`, `--baseline`), a `vs base` column gives each kernel's p50 change
against the baseline's (`-31%`, or `~` within the baseline's own spread).
A kernel whose work was read from its dispatch name, not counted from its IR
(a `.vmfb` without executable sources), is marked `*` and a note below the
table says what that means. After a counters pass (`n`, Nsight Compute) the
rates are the measured ones, and four columns come in ahead of min and max:
`FLOP` (measured, per launch), `vs est` (that over the estimate), `occ`
(achieved occupancy) and `DRAM` (bytes DRAM served); one line below the table gives ncu's verdict on
the kernel under the cursor.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from gputop.tui.bridge import (
    NAME_MARK,
    NAME_NOTE,
    RATE,
    TIME_US,
    CallBreakdown,
    CountersPass,
    KernelTiming,
    LiveBaseline,
    ProfileSummary,
    RunSnapshot,
    column,
    dram_bytes,
    estimate_ratio,
    estimated_work,
    ms_fixed,
    name_marked,
    overhead_text,
    overhead_warning,
    pct_of_bound,
    percent,
    seconds,
    share_of_ceiling,
    to_json,
)
from gputop.tui.bridge import limits_line as limits_text
from gputop.tui.call_strip import call_strip, call_strip_rows
from gputop.tui.panes.box import BoxPane, show_text
from gputop.tui.panes.table import Column, KeyedTable
from gputop.tui.text.layers import FROM_WIDTH, from_cell, origin_of, source_ops_text
from gputop.tui.text.program import no_profile_text

__all__ = ["KernelsPane", "vs_base", "without_function"]

NAME_WIDTH = 22
# What a row is for first (which kernel, how often, how long, its share); its spread and efficiency
# where there is room. At 120 columns kernel, count, avg, min, max and share fit; at 200 all of them.
COLUMNS = (
    Column("kernel"),
    Column("from", 1),  # the model's layers it came from, their common scope first (tui/text/layers.py)
    Column("count"),
    Column("avg"),
    Column("min", 2),
    Column("max", 2),
    Column("share", 1),
    Column("vs base", -1),  # shown (priority 1) only while there is a baseline
    Column("FLOP", -1),  # these four only once a counters pass measured them (MEASURED)
    Column("vs est", -1),
    Column("occ", -1),
    Column("DRAM", -1),
    Column("p50", 5),
    Column("%peak", 3),
    Column("bound", 3),
    Column("FLOP/s", 4),
    Column("B/s", 4),
)

# With counters, what they measured matters more than the spread of the times: min and max give way first.
MEASURED = {"FLOP": 1, "vs est": 1, "occ": 2, "DRAM": 2, "min": 3, "max": 3}
UNMEASURED = {"FLOP": -1, "vs est": -1, "occ": -1, "DRAM": -1, "min": 2, "max": 2}
COUNTING = "measuring counters: one call under Nsight Compute, in another process..."


class KernelsPane(BoxPane):
    PANE_ID = "kernels"
    TITLE = "Kernels"
    KEY = "3"
    COLUMN = "right"
    ROW = 1
    TALLER_TABLE = ("#kernels-table", 10)  # an ONNX model's 40 kernels: more of them where there is room
    DEFAULT_CSS = """
    KernelsPane DataTable { height: auto; }
    KernelsPane #kernels-summary { height: auto; }
    KernelsPane #kernels-warning { height: auto; color: $warning; }
    KernelsPane #kernels-hint { height: auto; color: $text-muted; }
    KernelsPane #kernels-note { height: auto; color: $text-muted; }
    KernelsPane #kernels-verdict { height: 1; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis; }
    KernelsPane #kernels-from { height: auto; max-height: 2; color: $text-muted; }
    KernelsPane #kernels-call { height: auto; margin-top: 1; display: none;
                                text-wrap: nowrap; text-overflow: ellipsis; }
    """
    _breakdown: CallBreakdown | None = None
    _verdicts: dict[str, str] | None = None  # ncu's verdict per kernel, after a counters pass
    _origins: dict[str, str] | None = None  # each kernel's source ops in full, or why they are not known

    def compose(self) -> ComposeResult:
        yield Static(id="kernels-summary")
        yield Static(id="kernels-warning")
        yield KeyedTable(COLUMNS, id="kernels-table")
        origin = Static(id="kernels-from")
        origin.display = False  # until a profile has kernels: the one under the cursor, in the model's words
        yield origin
        verdict = Static(id="kernels-verdict")
        verdict.display = False  # until a counters pass gave ncu's verdicts
        yield verdict
        note = Static(id="kernels-note")
        note.display = False  # until a profile has kernels whose work was read from their names
        yield note
        yield Static("no profile yet: press p to profile the running module", id="kernels-hint")
        yield Static(id="kernels-call")  # the median call's strips, where the column has the rows

    # Rows to spare go to the table's hidden rows first, then to the median call's strips (whole or not
    # at all): the Timeline at a glance, where the right column stood empty at 120x40.
    def rows_wanted(self) -> int:
        return super().rows_wanted() + self._call_rows()

    def rows_in_use(self) -> int:
        call = self.query_one("#kernels-call", Static)
        return super().rows_in_use() + (call.outer_size.height if call.display else 0)

    def take_rows(self, rows: int) -> None:
        to_table = min(rows, super().rows_wanted())
        super().take_rows(to_table)
        self.extra_rows = rows
        call = self.query_one("#kernels-call", Static)
        call.display = rows - to_table >= self._call_rows() > 0
        self._draw_call()

    def _call_rows(self) -> int:
        return call_strip_rows(self._breakdown) + 1 if self._breakdown is not None else 0  # +1: its margin

    def _draw_call(self) -> None:
        call = self.query_one("#kernels-call", Static)
        if call.display and self._breakdown is not None:
            show_text(call, call_strip(self._breakdown, self.content_region.width))

    def on_resize(self) -> None:
        self._draw_call()

    def show(self, snapshot: RunSnapshot) -> None:
        profile = snapshot.profile
        summary = self.query_one("#kernels-summary", Static)
        warning = self.query_one("#kernels-warning", Static)
        hint = self.query_one("#kernels-hint", Static)
        note = self.query_one("#kernels-note", Static)
        self._breakdown = profile.call_breakdown if profile is not None else None
        if self._breakdown is None:
            self.query_one("#kernels-call", Static).display = False  # rows it had go back at the next share
        self._draw_call()
        if profile is None:
            self.query_one("#kernels-table", KeyedTable).sync({})
            self.query_one("#kernels-verdict", Static).display = False
            self.query_one("#kernels-from", Static).display = False
            self._verdicts = None
            self._origins = None
            summary.display = False
            note.display = False
            warning.display = False
            hint.display = True
            idle = no_profile_text(snapshot)
            show_text(hint, "profiling..." if snapshot.profiling else COUNTING if snapshot.counting else idle)
            return
        hint.display = snapshot.profiling or snapshot.counting
        show_text(hint, "profiling..." if snapshot.profiling else COUNTING)
        summary.display = True
        wall = f" of {ms_fixed(profile.call_wall_ms)} synced" if profile.call_wall_ms is not None else ""
        program_call = _program_call(snapshot)
        if program_call is not None:  # one figure for a watched call: the program's own, its VM call inside
            wall = program_call
        gap = ""
        if profile.gap_ms is not None:
            gap = f", gap {ms_fixed(profile.gap_ms)}" if profile.gap_ms >= 0 else " (dispatches overlap)"
        timing = profile.kernels[0].timing if profile.kernels else ""
        limits = limits_line(profile)
        cost = f"\n{overhead_text(to_json(profile.overhead))}" if profile.overhead is not None else ""
        if profile.kernels_overhead is not None:  # the kernel times are another run's, which cost more
            cost += f"\nkernel times: a run {profile.kernels_overhead.ratio:.2f}x (per-dispatch timestamps)"
        if profile.breakdown_overhead is not None:  # the breakdown's calls had every CUPTI kind on, the kernels' not
            cost += f"\nbreakdown: other calls {profile.breakdown_overhead.ratio:.2f}x (every CUPTI kind on)"
        measured = counters_line(snapshot.counters_pass)
        # The table may merge passes; the per-call line is the newest pass's own, as the Timeline and the Log say.
        merged = f" over {profile.passes} passes" if profile.passes > 1 else ""
        newest = f"newest pass ({profile.pass_calls} calls): " if profile.passes > 1 and profile.pass_calls else ""
        show_text(
            summary,
            f"{profile.source}, {timing}, {profile.calls} calls{merged}\n"
            f"{newest}kernels {ms_fixed(profile.call_kernel_ms)} per call{wall}{gap}{cost}"
            + (f"\n{limits}" if limits else "")
            + (f"\n{measured}" if measured else ""),
        )
        warnings = [w for w in (clock_warning(profile), pass_cost_warning(profile)) if w]
        warning.display = bool(warnings)
        show_text(warning, "\n".join(f"⚠ {w}" for w in warnings))
        baseline: LiveBaseline | None = getattr(self.app, "baseline", None)
        estimate = profile.peaks is not None and profile.peaks.estimate
        rows, labels = kernel_rows(profile.kernels, snapshot.function or "", baseline, estimate)
        counted = any(k.counters is not None for k in profile.kernels)
        priorities = {"vs base": 1 if baseline else -1, **(MEASURED if counted else UNMEASURED)}
        self.query_one("#kernels-table", KeyedTable).sync(rows, labels, priorities)
        named = any(name_marked(to_json(k)) for k in profile.kernels)
        note.display = named
        show_text(note, f"{NAME_MARK} {NAME_NOTE}" if named else "")
        self._verdicts = {k.name: verdict_text(k, snapshot.function or "") for k in profile.kernels if k.counters}
        self._origins = {k.name: source_ops_text(origin_of(k)) for k in profile.kernels}
        self._show_verdict()

    def on_data_table_row_highlighted(self, _event: object) -> None:
        self._show_verdict()

    def _show_verdict(self) -> None:
        """What the kernel under the table's cursor came from, in full, and ncu's verdict on it (the first
        kernel, before the cursor moves)."""
        verdict = self.query_one("#kernels-verdict", Static)
        origin = self.query_one("#kernels-from", Static)
        table = self.query_one("#kernels-table", KeyedTable)
        keys = table.row_keys
        key = keys[min(max(table.cursor_row, 0), len(keys) - 1)] if keys else ""
        text = (self._verdicts or {}).get(key, "")
        verdict.display = bool(text)
        show_text(verdict, text)
        came_from = (self._origins or {}).get(key, "")
        origin.display = bool(came_from)
        show_text(origin, came_from)


def vs_base(kernel: KernelTiming, baseline: LiveBaseline | None) -> str:
    """The kernel's p50 against the baseline's: `-31%`, `~`, or `-` where the baseline has no such kernel."""
    if baseline is None:
        return ""
    change = baseline.kernel_change(kernel.name, kernel.p50_us, kernel.source_ops)
    if change is None or change.change is None:
        return "-"
    return f"{change.change * 100:+.0f}%" if change.significant else "~"


def kernel_rows(
    kernels: tuple[KernelTiming, ...],
    function: str = "",
    baseline: LiveBaseline | None = None,
    estimate: bool = False,
) -> tuple[dict[str, tuple[str | Text, ...]], dict[str, str]]:
    """A row per kernel (every column) and the headers, each numeric column in its one unit; `estimate`:
    the peaks are estimates (a CPU's), and a share above them shows as `>100%*`."""
    labels: dict[str, str] = {}
    numeric: dict[str, list[str]] = {}
    data = [to_json(k) for k in kernels]  # the form the shared helpers (and `gputop report`) read
    for name in ("avg", "min", "max", "p50"):
        labels[name], numeric[name] = column(name, [getattr(k, f"{name}_us") for k in kernels], TIME_US)
    for name, values in (
        ("FLOP/s", [k.achieved_tflops * 1e12 if k.achieved_tflops is not None else None for k in kernels]),
        ("B/s", [k.achieved_gbps * 1e9 if k.achieved_gbps is not None else None for k in kernels]),
        ("DRAM", [dram_bytes(d.get("counters")) for d in data]),
        ("FLOP", [k.counters.flops if k.counters is not None else None for k in kernels]),
    ):
        prefixed, numeric[name] = column("", values, RATE)
        labels[name] = f"DRAM {prefixed.strip()}B" if name == "DRAM" else f"{prefixed.strip()}{name}"  # kB; MFLOP
    rows: dict[str, tuple[str | Text, ...]] = {}
    for index, kernel in enumerate(kernels):
        mark = f" {NAME_MARK}" if name_marked(data[index]) else ""
        rows[kernel.name] = (
            short_name(kernel.name, function) + mark,
            from_cell(data[index], FROM_WIDTH),
            str(kernel.count),
            numeric["avg"][index],
            numeric["min"][index],
            numeric["max"][index],
            percent(kernel.share * 100),
            vs_base(kernel, baseline),
            numeric["FLOP"][index],
            vs_estimate(kernel, data[index]),
            percent(kernel.counters.occupancy_pct, 0) if kernel.counters is not None else "-",
            numeric["DRAM"][index],
            numeric["p50"][index],
            percent_of_bound(kernel, estimate),
            kernel.bound or "-",
            numeric["FLOP/s"][index],
            numeric["B/s"][index],
        )
    return rows, labels


def vs_estimate(kernel: KernelTiming, data: Mapping[str, Any]) -> str:
    """Measured FLOPs over the estimate (`1.00x`): how far the IR's or the name's count was from the hardware's.
    `data`: the kernel's JSON form."""
    if kernel.counters is None:
        return "-"
    return estimate_ratio(kernel.counters.flops, estimated_work(data)[0])


def verdict_text(kernel: KernelTiming, function: str) -> str:
    """`ncu on 0 matmul_256x1024x1024: This kernel grid is too small ...; LaunchConfiguration +51.5%`, one line."""
    c = kernel.counters
    if c is None:
        return ""
    best = max(c.rules, key=lambda r: r.speedup_pct or 0.0, default=None)
    rule = f"; {best.name} +{percent(best.speedup_pct)}" if best is not None and best.speedup_pct else ""
    return f"ncu on {short_name(kernel.name, function)}: {c.verdict or 'no verdict'}{rule}"


def counters_line(counters: CountersPass | None) -> str:
    """The counters pass above the table: its tool, what it took, or why it failed."""
    if counters is None:
        return ""
    if counters.error:
        return f"counters: {counters.error}"
    return f"counters {counters.source}: {counters.calls} call, {seconds(counters.wall_s)}; rates measured"


def limits_line(profile: ProfileSummary) -> str:
    """The pass's clock and the device's peaks at it, in one line (or why they are unknown)."""
    data = to_json(profile)
    return limits_text(data, data["kernels"])


def clock_warning(profile: ProfileSummary) -> str | None:
    return profile.clocks.warning if profile.clocks is not None else None


def pass_cost_warning(profile: ProfileSummary) -> str | None:
    """The pass's warning when it slowed its calls over 1.05x the unprofiled ones, naming what was on."""
    if profile.overhead is None:
        return None
    return overhead_warning(to_json(profile.overhead), profile.profiling_on)


def without_function(name: str, function: str) -> str:
    """The dispatch name without the function's prefix (and IREE's "$async"), which the header already says."""
    if function:
        name = name.removeprefix(f"{function}$async_").removeprefix(f"{function}_")
    return name


def dispatch_number(name: str, function: str = "") -> str | None:
    """The number IREE gave a dispatch (`mlp_dispatch_0_matmul_...` -> `0`), which the table shows
    first and the roofline marks it with; None for a kernel named otherwise."""
    bare = without_function(name, function)
    if not bare.startswith("dispatch_"):
        return None
    head, _, rest = bare.removeprefix("dispatch_").partition("_")
    return head if head.isdigit() and rest else None


def short_name(name: str, function: str = "") -> str:
    """`mlp_dispatch_0_matmul_256x1024x1024_f32` -> `0 matmul_256x1024x1024`.

    The function name (and IREE's "$async" suffix) prefixes every dispatch name and the header says
    it; "dispatch_" says nothing in a table of dispatches.
    """
    name = without_function(name, function)
    head, _, rest = name.removeprefix("dispatch_").partition("_")
    if head.isdigit() and name.startswith("dispatch_") and rest:
        name = f"{head} {rest}"
    name = re.sub(r"_(f|bf|i|ui)\d+$", "", name)  # the element type: the roofline's legend and JSON keep it
    if len(name) > NAME_WIDTH:  # keep the start (number, op) and the end (type): the middle is the shape
        keep = NAME_WIDTH - 1
        name = name[: keep - keep // 3] + "…" + name[len(name) - keep // 3 :]
    return name


def percent_of_bound(kernel: KernelTiming, estimate: bool = False) -> str:
    """The kernel's share of the ceiling that bounds it (`pct_of_bound` says which when a peak is missing);
    `>100%*` above an estimated ceiling."""
    return share_of_ceiling(pct_of_bound(kernel.bound, kernel.pct_peak_compute, kernel.pct_peak_bandwidth), estimate)


def _program_call(snapshot: RunSnapshot) -> str | None:
    """` of the program's 2.199 ms call (invoke 0.330 ms)`: a watched program's kernels against its call as the
    program sees it (the busiest function's p50, and the VM call in it), not a second, synced figure."""
    if snapshot.program is None or not snapshot.program.functions:
        return None
    row = snapshot.program.functions[0]
    if row.p50_ms is None:
        return None
    invoke = row.parts.invoke.p50_ms if row.parts is not None else None
    inside = f" (invoke {ms_fixed(invoke)})" if invoke is not None else ""
    return f" of the program's {ms_fixed(row.p50_ms)} call{inside}"
