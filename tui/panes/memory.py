"""The Memory pools pane: what each device's allocator holds, and the whole device.

One keyed row per device and memory type (live, peak, allocated, freed),
updated in place so the user's cursor stays put; beneath it the device's
memory in use (NVML on NVIDIA GPUs), the host process's RSS, and a sparkline
of live device bytes. The cumulative columns (allocated, freed) grow with
every call of a busy run; redrawn on each snapshot they made the table, whose
every cell Textual renders again on any change, a third of the viewer's CPU
(py-spy, the attached viewer of a 100k-calls-a-second run). So they move at
most once a second of the run's own time, and always when live or peak
bytes, the rows, or the run's state change. A `weights` row gives the module's own bytes
(constants inlined in its `.vmfb`, parameters), which an allocator's statistics may never count
(local-task reads them in place from the mapped file); a line under the table says whether the
pools hold them. Unlike the other tables' numeric columns, each size
here takes its own unit (`512 B`, `7.5 MiB`, `1.2 GiB`): one column holds pools orders of magnitude
apart (a host pool of GiB above a device pool of KiB), and a unit for the whole column made the small
ones unreadable (`peak GiB 0.00391`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from textual.app import ComposeResult
from textual.widgets import Sparkline, Static

from gputop.tui.bridge import RunSnapshot, human_bytes, module_bytes_text, to_json, weight_bytes
from gputop.tui.panes.box import BoxPane, show_text
from gputop.tui.panes.table import Column, KeyedTable
from gputop.tui.text.program import held_where

__all__ = ["MemoryPane"]

# What is held now first, then its high-water mark; the device only where there are several.
COLUMNS = (
    Column("device", 3),
    Column("type"),
    Column("live"),
    Column("peak", 1),
    Column("allocated", 3),
    Column("freed", 2),
)
BYTE_COLUMNS = ("live", "peak", "allocated", "freed")
CUMULATIVE = ("allocated", "freed")
CUMULATIVE_EVERY_S = 1.0  # of snapshot time (the engine's clock): replays draw alike at any speed


class _Shown(NamedTuple):
    """The byte columns as last shown in full: when (snapshot time), in which state, each row's cells by
    column name, and each column's label."""

    at: float
    state: str
    cells: dict[str, dict[str, str]]
    labels: dict[str, str]


class MemoryPane(BoxPane):
    PANE_ID = "memory"
    TITLE = "Memory pools"
    KEY = "2"
    COLUMN = "left"
    ROW = 1
    TALLER_TABLE = ("#memory-table", 8)  # its sparkline stays small: live bytes are mostly flat
    DEFAULT_CSS = """
    MemoryPane DataTable { height: auto; }
    MemoryPane #memory-device { height: auto; }
    MemoryPane Sparkline { height: 2; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._cumulative: _Shown | None = None

    def compose(self) -> ComposeResult:
        yield KeyedTable(COLUMNS, id="memory-table")
        yield Static(id="memory-device")
        yield Sparkline([], id="memory-sparkline", summary_function=max)

    def show(self, snapshot: RunSnapshot) -> None:
        sample = snapshot.memory
        if sample is None:  # a new run before its first sample: nothing of the last one stays
            self._cumulative = None
            self.query_one("#memory-table", KeyedTable).sync({})
            show_text(self.query_one("#memory-device", Static), "")
            self.query_one("#memory-sparkline", Sparkline).data = []
            return
        lines = []
        pools = [(device.device_id, pool) for device in sample.devices for pool in device.pools]
        modules = [m for m in to_json(snapshot.module_bytes) if weight_bytes(m) != 0]  # without weights: no row
        weights = weight_rows(modules)
        labels: dict[str, str] = {}
        cells: dict[str, list[str]] = {}
        for name in BYTE_COLUMNS:
            labels[name], cells[name] = name, [human_bytes(getattr(pool, f"{name}_bytes")) for _, pool in pools]
            cells[name] += [human_bytes(size) if name == "live" else "-" for _, _, size in weights]  # held all along
        keys = [f"{device_id}/{pool.memory_type}" for device_id, pool in pools] + [key for key, _, _ in weights]
        kinds = [(device_id, pool.memory_type) for device_id, pool in pools] + [(d, "weights") for _, d, _ in weights]
        self._hold_cumulative(snapshot, keys, labels, cells)
        rows = {
            key: (device_id, kind, *(cells[n][i] for n in BYTE_COLUMNS))
            for i, (key, (device_id, kind)) in enumerate(zip(keys, kinds, strict=True))
        }
        for device in sample.devices:
            if device.device_used_bytes is not None:
                lines.append(
                    f"{device.device_id}: device {human_bytes(device.device_used_bytes)} / "
                    f"{human_bytes(device.device_total_bytes)} ({device.source})"
                )
        if snapshot.profile is not None and snapshot.profile.pools:
            reserved = sum(p.reserved_bytes for p in snapshot.profile.pools)
            committed = sum(p.committed_bytes for p in snapshot.profile.pools)
            lines.append(f"HAL pools (profile): reserved {human_bytes(reserved)}, committed {human_bytes(committed)}")
        for row in modules:  # whether the pools above hold the weights row's bytes, and why not
            said = module_bytes_text(row)
            lines.append(f"{row['device_id']}: {said}" if len(modules) > 1 else said)
        held = held_where(to_json(snapshot.program.held), to_json(sample.devices)) if snapshot.program else None
        if held:  # a watched program's results: the Run pane counts them, the pools may not (local-task)
            lines.append(held)
        lines.append(f"host RSS {human_bytes(sample.host_rss_bytes)} of {human_bytes(sample.host_total_bytes)}")
        several = len(sample.devices) > 1  # then the device says which row is which: it stays
        self.query_one("#memory-table", KeyedTable).sync(rows, labels, {"device": 0 if several else 3})
        show_text(self.query_one("#memory-device", Static), "\n".join(lines))
        self.query_one("#memory-sparkline", Sparkline).data = list(snapshot.memory_history)

    def _hold_cumulative(
        self, snapshot: RunSnapshot, keys: list[str], labels: dict[str, str], cells: dict[str, list[str]]
    ) -> None:
        """Keep the cumulative columns as last shown (in place, in `labels` and `cells`) for up to a second of
        the run's time, unless anything else in the table or the run's state changed."""
        held = self._cumulative
        now = snapshot.timestamp
        if (
            held is not None
            and held.state == snapshot.state
            and list(held.cells) == keys
            and 0 <= now - held.at < CUMULATIVE_EVERY_S
            and all(labels[n] == held.labels.get(n) for n in ("live", "peak"))
            and all(cells[n][i] == held.cells[key][n] for i, key in enumerate(keys) for n in ("live", "peak"))
        ):
            for name in CUMULATIVE:
                labels[name] = held.labels[name]
                cells[name] = [held.cells[key][name] for key in keys]
            return
        shown = {key: {n: cells[n][i] for n in BYTE_COLUMNS} for i, key in enumerate(keys)}
        self._cumulative = _Shown(now, snapshot.state, shown, dict(labels))


def weight_rows(modules: list[dict[str, Any]]) -> list[tuple[str, str, int | None]]:
    """The `weights` rows (key, device cell, bytes) from the module's `ModuleBytes` as JSON: one per device, or
    one for a module of several devices, whose .vmfb does not say which device holds which constant."""
    if not modules:
        return []
    if int(modules[0].get("devices") or 1) > 1:
        return [("module/weights", "all", weight_bytes(modules[0]))]
    return [(f"{row['device_id']}/weights", str(row["device_id"]), weight_bytes(row)) for row in modules]
