"""The header: what runs where, in what state, and how full the device is.

One glance answers "is it my model, on the GPU I meant, and is it running?":
target and function, device name and backend, driver, a bar of device
memory in use, and the run state in a colour that says good or bad. A
watched program's diagnoses and its crash take a row of their own (`warning_row`):
at 80 columns they shared the memory row and showed `! parameters: 5.0 MiB went
throu…`, and a crash's exception of several lines pushed the memory row out.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual.widgets import Static

from gputop.tui.bridge import (
    BUSY_STATES,
    CHECK_FAILED,
    ParameterLoad,
    RunSnapshot,
    host_load_limit,
    host_load_text,
    human_bytes,
    neighbours_text,
    to_json,
)
from gputop.tui.panes.box import show_text
from gputop.tui.text import parameters_progress
from gputop.tui.text.program import ended_text, exception_text, program_title

__all__ = [
    "CHECK_FAILED_STYLE",
    "SEPARATOR",
    "STATE_STYLES",
    "HeaderBar",
    "memory_bar",
    "parameters_bar",
    "state_cell",
    "warning_row",
]

STATE_STYLES = {
    "idle": "dim",
    "importing": "bold yellow",
    "compiling": "bold yellow",
    "loading": "bold yellow",
    "running": "bold green",
    "paused": "bold cyan",
    "finished": "bold green",
    "stopped": "dim",
    "error": "bold white on red",
    "interrupted": "dim",
    "crashed": "bold white on red",  # its process died without an ending (the viewer read the manifest)
}


def memory_bar(used: int | None, total: int | None, width: int = 20) -> Text:
    if not used or not total:
        return Text("memory -", style="dim")
    filled = max(0, min(width, round(width * used / total)))
    bar = Text("memory [")
    bar.append("█" * filled, style="green" if used / total < 0.8 else "red")
    bar.append("░" * (width - filled), style="dim")
    bar.append(f"] {human_bytes(used)} / {human_bytes(total)}")
    return bar


def parameters_bar(load: ParameterLoad, width: int = 20) -> Text:
    """`parameters [████░░░░] 4.2 GiB / 14.7 GiB (28%)  25.3 GB/s  0.4 s left`."""
    share = load.loaded_bytes / load.total_bytes if load.total_bytes and load.observed else 0.0
    filled = max(0, min(width, round(width * share)))
    bar = Text("parameters [", style="bold yellow")
    bar.append("█" * filled, style="yellow")
    bar.append("░" * (width - filled), style="dim")
    bar.append("] ", style="bold yellow")
    bar.append(parameters_progress(load, mode=False))
    bar.append("  ")
    return bar


NARROWER = 5  # the second line's forms, widest first (`HeaderBar._second_line`)
SEPARATOR = ("  │  ", "dim")  # fields never run together, whatever their text (a path, a device name)


def neighbours_line(snapshot: RunSnapshot, short: bool = False) -> str | None:
    """Who else uses the GPU, and the host when others take more than its limit: only when anyone is there.

    `short`, for a narrow header: the counts alone (`1 other on the GPU; host: others 0.91/2 cores`), which fit
    beside the memory bar at 80 columns where the whole sentence became `...`.
    """
    neighbours = snapshot.neighbours
    if neighbours is None:
        return None
    data = to_json(neighbours)
    others = neighbours.others
    if short:
        parts = [f"{others} other{'s' if others != 1 else ''} on the GPU" if others else None]
    else:
        parts = [neighbours_text(data)]
    host = neighbours.host
    if host is not None and host.other_cores > host_load_limit(host.cores):
        load = f"others {host.other_cores:.2f}/{host.cores} cores" if short else host_load_text(data["host"])
        parts.append(f"host: {load}")
    return "; ".join(p for p in parts if p) or None


CHECK_FAILED_STYLE = "bold white on red"


def state_cell(snapshot: RunSnapshot, state: str) -> tuple[str, str]:
    """The run state's cell, text and style: `state` (the state's words), or once the outputs were found unlike
    their reference, `check failed` in red (`running, check failed` while the calls go on)."""
    check = snapshot.check
    if check is None or check.passed:
        return f" {state} ", STATE_STYLES.get(snapshot.state, "")
    shown = CHECK_FAILED if snapshot.state in ("finished", "stopped") else f"{state}, {CHECK_FAILED}"
    return f" {shown} ", CHECK_FAILED_STYLE


def warning_row(snapshot: RunSnapshot, width: int) -> Text | None:
    """A watched program's row for what went wrong: its crash (the exception's line, the cause in it), else the
    newest diagnosis that fits `width` whole, else the newest, cut; None while there is none (the Log has each
    whole)."""
    program = snapshot.program
    if program is None:
        return None
    row = Text(no_wrap=True, overflow="ellipsis")
    if program.ended == "raised":
        row.append(f"✗ raised: {exception_text(program.ended_line)}", style="bold red")
        return row
    if not program.hints:
        return None
    lines = [f"! {hint}" for hint in reversed(program.hints)]
    row.append(next((line for line in lines if len(line) <= width), lines[0]), style="bold yellow")
    return row


class HeaderBar(Static):
    DEFAULT_CSS = """
    HeaderBar { height: 2; padding: 0 1; background: $panel; text-wrap: nowrap; text-overflow: ellipsis; }
    HeaderBar.attached, HeaderBar.warned { height: 3; }
    HeaderBar.attached.warned { height: 4; }
    """

    origin: str | None = None
    recorded = False  # gputop open: a recorded run, read-only
    _shown: RunSnapshot | None = None  # drawn again at a new width: a finished run sends no more snapshots

    def set_origin(self, origin: str) -> None:
        """The run is another process's (gputop attach): a third line says whose, and since when."""
        self.origin = origin
        self.add_class("attached")

    def on_resize(self) -> None:
        if self._shown is not None:
            self.show(self._shown)

    def show(self, snapshot: RunSnapshot) -> None:
        self._shown = snapshot
        line = Text(no_wrap=True, overflow="ellipsis")
        state = snapshot.state
        if state in BUSY_STATES and snapshot.state_since is not None:
            # Long imports and compiles show they are alive: the app redraws this every second.
            state = f"{state} {time.time() - snapshot.state_since:.0f} s"
        if self.recorded:
            line.append(" recorded, read-only ", style="bold magenta")
            line.append(" ")
        line.append(*state_cell(snapshot, state))
        line.append(*SEPARATOR)
        program = snapshot.program
        if program is not None:  # gputop -- CMD: whose program, and how it ended once it has
            data = to_json(program)
            line.append("watching ", style="dim")
            line.append(program_title(data, width=60), style="bold cyan")
            if program.ended is not None:  # a crash's exception has the warning row: here how it ended
                ended = f"raised (exit {program.exit_code})" if program.ended == "raised" else ended_text(data)
                line.append(f" {ended}", style="bold" if program.exit_code == 0 else "bold red")
        else:
            line.append(snapshot.target, style="bold cyan")
        line.append(*SEPARATOR)
        line.append(f"{snapshot.function or '?'}()")
        device = snapshot.device
        if device is not None:
            line.append(*SEPARATOR)
            line.append(f"{device.id} ", style="bold")
            line.append(device.name)
        width = self.content_region.width
        for narrower in range(NARROWER):  # the least needed fields give way first, and only where they must
            second = self._second_line(snapshot, narrower)
            if not width or second.cell_len <= width:
                break
        lines = [line, second]
        warning = warning_row(snapshot, width)
        self.set_class(warning is not None, "warned")
        if warning is not None:
            lines.append(warning)
        if self.origin:
            lines.append(Text.assemble(("attached ", "bold magenta"), self.origin, no_wrap=True, overflow="ellipsis"))
        show_text(self, Text("\n").join(lines))

    def _second_line(self, snapshot: RunSnapshot, narrower: int = 0) -> Text:
        """Memory, backend, driver and what is wrong, at `narrower` (0: all of it): 1 the notes' short forms,
        2 without the backend (the first line's device id names it), 3 without the driver, 4 a shorter bar."""
        device = snapshot.device
        second = Text(no_wrap=True, overflow="ellipsis")
        used = total = None
        if snapshot.memory is not None and snapshot.memory.devices:
            first = snapshot.memory.devices[0]
            used, total = first.device_used_bytes, first.device_total_bytes
        if snapshot.parameters is not None and not snapshot.parameters.done:
            second.append_text(parameters_bar(snapshot.parameters))
        second.append_text(memory_bar(used, total, 10 if narrower >= 4 else 20))
        if device is not None and narrower < 3:
            if narrower < 2:
                second.append(*SEPARATOR)
                second.append(device.backend, style="bold")
            second.append(*SEPARATOR)
            second.append(device.driver_info or device.kind)
        neighbours = neighbours_line(snapshot, short=narrower >= 1)
        if neighbours:
            second.append(*SEPARATOR)
            second.append(neighbours, style="yellow")
        if snapshot.error:
            second.append(*SEPARATOR)
            second.append(snapshot.error, style="red")
        return second
