"""`gputop fleet`'s screen: every run a Prometheus scrapes, one row each, worst first, refreshed live.

The rows are keyed (host and run) and updated in place (`KeyedTable`), so the cursor stays on its
run while the figures move and the order changes under it. Prometheus is asked from a thread worker
(`poll_fleet`); its answer comes back as a message, and only then is the next poll's timer set, so
polls never overlap however slow Prometheus is (at 8,000 GPUs a refresh takes seconds:
BENCHMARKS.md). While Prometheus does not answer, the title says so in one line and the last rows
stay. The keys are gputop's: `q` quits, `?` helps, `enter` attaches to the run at the cursor (or says
why it cannot), `s` changes the order, `r` asks now.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Static
from textual.widgets.data_table import CellDoesNotExist, RowDoesNotExist
from textual.worker import Worker, WorkerState

from gputop.tui.bridge import (
    FLEET_SORTS,
    FleetPoll,
    FleetQueries,
    FleetRow,
    GputopError,
    PrometheusClient,
    poll_fleet,
    sort_rows,
)
from gputop.tui.panes.footer import KeysFooter
from gputop.tui.panes.header import SEPARATOR, STATE_STYLES
from gputop.tui.panes.table import Column, KeyedTable
from gputop.tui.screens.window import Window
from gputop.tui.text.fleet import FLEET_HEADERS, detail_parts, fleet_cells

__all__ = ["FLEET_COLUMNS", "FLEET_KEYS", "FleetHelpScreen", "FleetPollFailed", "FleetPolled", "FleetScreen"]

# How much each column matters: 0 always shows; the highest goes first where the table is narrower (at 120
# columns a fleet of GPUs shows all but `what`; the line under the table has the row in full).
_PRIORITY = {"what": 6, "function": 5, "growth": 4, "SM MHz": 3, "memory": 2}
FLEET_COLUMNS = tuple(Column(name, _PRIORITY.get(name, 0)) for name in FLEET_HEADERS)
FLEET_KEYS = (
    ("q", "quit"),
    ("enter", "attach to the run at the cursor (gputop attach), or say why it cannot be"),
    ("s", "sort: " + ", ".join(FLEET_SORTS) + " (worst: error, hints, growth, slowest p95)"),
    ("r", "ask Prometheus now"),
    ("↑ ↓ pgup pgdn", "move along the runs"),
    ("?", "this help"),
)


@dataclass
class FleetPolled(Message):
    """A poll's answer: the fleet's rows as Prometheus holds them now."""

    poll: FleetPoll


@dataclass
class FleetPollFailed(Message):
    """A poll that got no answer, in one line (unreachable, refused)."""

    text: str


class FleetHelpScreen(Window[None]):
    """The fleet view's keys, in the key help's look."""

    DEFAULT_CSS = """
    FleetHelpScreen > Vertical { width: 80; max-width: 95%; height: auto; border: round $accent;
                                 background: $surface; padding: 1 2; }
    """
    BINDINGS = [Binding("escape,question_mark", "dismiss", "Close"), Binding("q", "app.quit", "Quit")]

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 3))
        table.add_column(style="bold cyan")
        table.add_column()
        for key, what in FLEET_KEYS:
            table.add_row(key, what)
        with Vertical():
            yield Static("[b]gputop fleet keys[/b]  (escape closes)")
            yield Static(table)

    def action_dismiss(self) -> None:
        self.dismiss(None)


def styled_cells(row: FleetRow) -> tuple[object, ...]:
    """The row's cells with gputop's colours: the state as the header colours it, hints and growth in yellow,
    a quantile over the whole run (no calls in the window) dim."""
    cells: list[object] = list(fleet_cells(row))
    names = FLEET_HEADERS
    cells[names.index("state")] = Text(str(cells[names.index("state")]), style=STATE_STYLES.get(row.state, ""))
    cells[names.index("⚠")] = Text(str(cells[names.index("⚠")]), style="bold yellow")
    if row.growth_bytes_per_call:
        cells[names.index("growth")] = Text(str(cells[names.index("growth")]), style="yellow")
    if row.over == "run":
        for name in ("p50", "p95"):
            cells[names.index(name)] = Text(str(cells[names.index(name)]), style="dim")
    return tuple(cells)


class FleetTable(KeyedTable):
    """The fleet's rows; `enter` selects the row at the cursor (the screen attaches to it), named in the footer."""

    BINDINGS = [Binding("enter", "select_cursor", "Attach")]


class FleetScreen(Screen[None]):
    """The fleet's table, its title line, the cursor row's line in full, and the keys."""

    SCOPED_CSS = False  # the rules name the screen itself (`FleetScreen.empty`)
    DEFAULT_CSS = """
    FleetScreen { layout: vertical; }
    #fleet-title { height: 1; padding: 0 1; }
    #fleet-box { height: 1fr; border: round $primary; padding: 0; }
    #fleet-table { height: 1fr; }
    #fleet-detail { height: 1; padding: 0 1; }
    #fleet-empty { display: none; height: 1fr; content-align: center middle; }
    FleetScreen.empty #fleet-empty { display: block; }
    """
    BINDINGS = [
        Binding("question_mark", "help", "Help"),
        Binding("q", "app.quit", "Quit"),
        Binding("s", "sort", "Sort"),
        Binding("r", "poll_now", "Refresh"),
    ]

    def __init__(
        self,
        client: PrometheusClient,
        queries: FleetQueries,
        attach: Callable[[FleetRow], Path | str],
        *,
        interval_s: float = 2.0,
        at: float | None = None,
        first: FleetPoll | None = None,
    ) -> None:
        super().__init__()
        self.client, self.queries, self.at = client, queries, at
        self.interval_s = interval_s
        self._attach_target = attach  # a row -> its session folder here, or why it cannot be attached to
        self.poll: FleetPoll | None = first
        self.order = FLEET_SORTS[0]
        self.rows: dict[str, FleetRow] = {}  # by key, in the order shown
        self.problem: str | None = None  # why the last poll got no answer
        self.problem_since: float | None = None
        self.polls = 0  # polls shown (tests and bench/fleet_sim.py wait on it)
        self.view_s = 0.0  # the newest poll's table update, seconds (bench/fleet_sim.py)
        self.said: tuple[str | None, str] = (None, "")  # the newest answer to a key, and the row it was about
        self._poll_timer: Timer | None = None
        self._polling = False

    def compose(self) -> ComposeResult:
        yield Static(id="fleet-title")
        with Vertical(id="fleet-box") as box:
            box.border_title = "Fleet"
            yield FleetTable(FLEET_COLUMNS, id="fleet-table", selectable=True)
            yield Static("no gputop runs in Prometheus now", id="fleet-empty")
        yield Static(id="fleet-detail")
        yield KeysFooter(("question_mark", "q", "enter", "s", "r"))

    @property
    def table(self) -> KeyedTable:
        return self.query_one("#fleet-table", KeyedTable)

    def on_mount(self) -> None:
        if self.poll is not None:
            self.show(self.poll)
            self._arm()
        else:
            self._ask()

    # -- polls: one at a time, the next armed once the last is shown -------------------------------
    def _arm(self) -> None:
        self._poll_timer = self.set_timer(self.interval_s, self._ask)

    def _ask(self) -> None:
        if not self._polling:
            self._polling = True
            self._poll()

    @work(thread=True, exclusive=True, group="fleet-poll", exit_on_error=False)
    def _poll(self) -> None:
        try:
            poll = poll_fleet(self.client, self.queries, at=self.at)
        except GputopError as exc:
            self.post_message(FleetPollFailed(str(exc)))
            return
        self.post_message(FleetPolled(poll))

    def on_fleet_polled(self, message: FleetPolled) -> None:
        self._polling = False
        self.problem = self.problem_since = None
        self.show(message.poll)
        self._arm()

    def on_fleet_poll_failed(self, message: FleetPollFailed) -> None:
        self._polling = False
        self.problem_since = self.problem_since or time.time()
        self.problem = message.text
        self._show_title()
        self._arm()

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        """A poll that failed in a way gputop did not foresee: one line in the title, and the next poll."""
        if event.worker.group == "fleet-poll" and event.state == WorkerState.ERROR:
            self.on_fleet_poll_failed(FleetPollFailed(f"poll: {event.worker.error}"))

    def action_poll_now(self) -> None:
        if self._poll_timer is not None:
            self._poll_timer.stop()
        self._ask()

    # -- drawing -----------------------------------------------------------------------------------
    def show(self, poll: FleetPoll) -> None:
        """Draw `poll`'s rows in the current order, the cursor kept on its run."""
        begun = time.perf_counter()
        self.poll = poll
        self._draw()
        self.polls += 1
        self.view_s = time.perf_counter() - begun

    def _draw(self) -> None:
        table = self.table
        at_cursor = self._cursor_key()
        ordered = sort_rows(self.poll.rows if self.poll else (), self.order)
        self.rows = {row.key: row for row in ordered}
        table.sync({key: styled_cells(row) for key, row in self.rows.items()})
        rank: dict[tuple[str, ...], int] = {(row.host, row.run or "?"): index for index, row in enumerate(ordered)}
        table.sort("host", "run", key=lambda cells: rank.get(tuple(map(str, cells)), len(rank)))
        if at_cursor in self.rows:
            table.move_cursor(row=table.get_row_index(at_cursor), scroll=False)
        self.set_class(not self.rows, "empty")
        self._show_title()
        self._show_detail()

    def _cursor_key(self) -> str | None:
        table = self.table
        if not table.row_count:
            return None
        try:
            return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        except (CellDoesNotExist, RowDoesNotExist):  # no row under the cursor (the table was just emptied)
            return None

    def cursor_row(self) -> FleetRow | None:
        key = self._cursor_key()
        return self.rows.get(key) if key is not None else None

    def on_data_table_row_highlighted(self) -> None:
        self._show_detail()

    def on_data_table_row_selected(self) -> None:
        self.action_attach()

    def _show_title(self) -> None:
        self.query_one("#fleet-title", Static).update(self.title_text())

    def title_text(self) -> Text:
        """Where the fleet is read from, how many runs on how many hosts, the last poll, the order; while
        Prometheus does not answer, that (the rows shown are then the last poll's)."""
        title = Text("gputop fleet", style="bold")
        poll = self.poll
        rows = poll.rows if poll is not None else ()
        title.append(*SEPARATOR)
        title.append(self.client.url)
        hosts = len({row.host for row in rows})
        title.append(*SEPARATOR)
        title.append(f"{len(rows)} run{'s' * (len(rows) != 1)} on {hosts} host{'s' * (hosts != 1)}")
        hinted = sum(1 for row in rows if row.hints)
        if hinted:
            title.append(*SEPARATOR)
            title.append(f"⚠ {hinted}", style="bold yellow")
        title.append(*SEPARATOR)
        if self.problem is not None:
            when = time.strftime("%H:%M:%S", time.localtime(self.problem_since))
            title.append(f"{self.problem} (since {when})", style="bold white on red")
            return title
        if poll is not None:
            when = time.strftime("%H:%M:%S", time.localtime(poll.at if poll.at is not None else poll.done_at))
            title.append(f"{when} ({poll.took_s:.2f} s)")
        title.append(*SEPARATOR)
        title.append(f"{self.order} first" if self.order in ("worst", "p95") else f"by {self.order}", style="dim")
        return title

    def _show_detail(self) -> None:
        """The row at the cursor in full under the table, or the newest answer to a key."""
        line = Text()
        about, said = self.said
        if said and about == self._cursor_key():
            line.append(said, style="bold")
        else:
            self.said = (None, "")
            row = self.cursor_row()
            for index, part in enumerate(detail_parts(row) if row is not None else []):
                if index:
                    line.append(*SEPARATOR)
                line.append(part, style="bold yellow" if part.startswith("⚠") else "")
        self.query_one("#fleet-detail", Static).update(line)

    # -- keys --------------------------------------------------------------------------------------
    def action_sort(self) -> None:
        self.order = FLEET_SORTS[(FLEET_SORTS.index(self.order) + 1) % len(FLEET_SORTS)]
        self._draw()

    def action_help(self) -> None:
        self.app.push_screen(FleetHelpScreen())

    def action_attach(self) -> None:
        """`enter`: attach to the run at the cursor where it is on this host and live; else say why not."""
        row = self.cursor_row()
        if row is None:
            self.say("no run at the cursor")
            return
        target = self._attach_target(row)
        if isinstance(target, str):
            self.say(target)
            return
        self.app.exit(target)

    def say(self, text: str) -> None:
        """A key's answer, in one line under the table (until the cursor moves to another run)."""
        self.said = (self._cursor_key(), text)
        self._show_detail()
