"""The Memory pools pane: what each device's allocator holds, and the whole device.

One keyed row per device and memory type (live, peak, allocated, freed),
updated in place so the user's cursor stays put; beneath it the device's
memory in use (NVML on NVIDIA GPUs), the host process's RSS, and a sparkline
of live device bytes.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Sparkline, Static

from gputop.tui.bridge import BYTES, RunSnapshot, column, human_bytes
from gputop.tui.panes.box import BoxPane, show_text
from gputop.tui.panes.table import Column, KeyedTable

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

    def compose(self) -> ComposeResult:
        yield KeyedTable(COLUMNS, id="memory-table")
        yield Static(id="memory-device")
        yield Sparkline([], id="memory-sparkline", summary_function=max)

    def show(self, snapshot: RunSnapshot) -> None:
        sample = snapshot.memory
        if sample is None:  # a new run before its first sample: nothing of the last one stays
            self.query_one("#memory-table", KeyedTable).sync({})
            show_text(self.query_one("#memory-device", Static), "")
            self.query_one("#memory-sparkline", Sparkline).data = []
            return
        lines = []
        pools = [(device.device_id, pool) for device in sample.devices for pool in device.pools]
        labels: dict[str, str] = {}
        cells: dict[str, list[str]] = {}
        for name in BYTE_COLUMNS:
            labels[name], cells[name] = column(name, [getattr(pool, f"{name}_bytes") for _, pool in pools], BYTES)
        rows = {
            f"{device_id}/{pool.memory_type}": (device_id, pool.memory_type, *(cells[n][i] for n in BYTE_COLUMNS))
            for i, (device_id, pool) in enumerate(pools)
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
        lines.append(f"host RSS {human_bytes(sample.host_rss_bytes)} of {human_bytes(sample.host_total_bytes)}")
        several = len(sample.devices) > 1  # then the device says which row is which: it stays
        self.query_one("#memory-table", KeyedTable).sync(rows, labels, {"device": 0 if several else 3})
        show_text(self.query_one("#memory-device", Static), "\n".join(lines))
        self.query_one("#memory-sparkline", Sparkline).data = list(snapshot.memory_history)
