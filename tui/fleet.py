"""The fleet view's app (`gputop fleet`), and which runs of it `enter` can attach to from here.

The app only holds the fleet's screen (`gputop.tui.screens.fleet`) and ends with the session folder
to attach to, or None; `gputop fleet` then runs `gputop attach` on that folder in the same terminal
and comes back to the fleet when it ends. A row can be attached to from here when its run says it
is on this host (`Hostname`), its session folder is found here (`gputop sessions` would list it) and
its process still runs; otherwise `enter` says, in one line, why not and what would.
"""

from __future__ import annotations

import socket
from pathlib import Path

from textual.app import App
from textual.binding import Binding
from textual.screen import Screen

from gputop.tui.bridge import (
    ENDED_STATES,
    FLEET_WINDOW,
    FleetPoll,
    FleetQueries,
    FleetRow,
    PrometheusClient,
    UsageError,
    effective_state,
    read_manifest,
    resolve_session,
)
from gputop.tui.screens.fleet import FleetScreen

__all__ = ["FleetApp", "attach_target", "same_host"]


def same_host(name: str, here: str) -> bool:
    """Whether `name` is this host: the same name, or the same first label (`node7` and `node7.lab.example`)."""
    return name == here or name.split(".")[0] == here.split(".")[0]


def attach_target(row: FleetRow, here: str | None = None) -> Path | str:
    """The session folder of `row`'s run where `gputop attach` can follow it from this host, else why not."""
    here = here or socket.gethostname()
    if not row.run:
        return f"{row.host}: its gputop serve names no run (older than gputop fleet): 'gputop sessions' there lists it"
    if not same_host(row.host, here):
        return f"run {row.run} is on host {row.host}: ssh {row.host} gputop attach {row.run}"
    try:
        folder = resolve_session(row.run)
        state = effective_state(read_manifest(folder))
    except UsageError as exc:
        return f"run {row.run} cannot be attached to here: {exc}"
    if state in ENDED_STATES:
        return f"run {row.run} has ended ({state}): 'gputop open {row.run}' shows it"
    return folder


class FleetApp(App[Path | None]):
    """`gputop fleet`: the fleet's screen over Prometheus; ends with the folder `enter` chose, or None."""

    TITLE = "gputop fleet"
    BINDINGS = [Binding("ctrl+c", "quit", "Quit", show=False, priority=True)]

    def __init__(
        self,
        url: str | PrometheusClient,
        *,
        interval_s: float = 2.0,
        window: str = FLEET_WINDOW,
        at: float | None = None,
        first: FleetPoll | None = None,
        here: str | None = None,
    ) -> None:
        super().__init__()
        self.client = url if isinstance(url, PrometheusClient) else PrometheusClient(url)
        self._screen = FleetScreen(
            self.client,
            FleetQueries(window),
            lambda row: attach_target(row, here),
            interval_s=interval_s,
            at=at,
            first=first,
        )

    def get_default_screen(self) -> Screen[None]:
        return self._screen

    @property
    def fleet(self) -> FleetScreen:
        """The fleet's screen (the same one while the help is open over it)."""
        return self._screen

    async def action_quit(self) -> None:
        self.exit(None)
