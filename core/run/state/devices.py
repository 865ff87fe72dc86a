"""Where the run's calls go: its devices, their names in the compiled module, and what moves between them.

A state part (see `gputop.core.run.state`): RunState holds it and changes it
under its lock only; `fields()` is its piece of every snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from gputop.core.records.affinity import ExportAffinity, Transfer
from gputop.core.records.devices import DeviceInfo

__all__ = ["DevicesFields", "DevicesState"]


class DevicesFields(TypedDict):
    """The snapshot's fields this part fills."""

    device: DeviceInfo | None
    device_ids: tuple[str, ...]
    device_names: tuple[tuple[str, str], ...]
    exports: tuple[ExportAffinity, ...]
    transfers: tuple[Transfer, ...]


@dataclass(eq=False)
class DevicesState:
    """The run's devices (the first is the one the header shows) and, multi-device, their affinity analysis."""

    devices: tuple[DeviceInfo, ...] = ()
    names: tuple[tuple[str, str], ...] = ()  # (compiler device name, gputop device id)
    exports: tuple[ExportAffinity, ...] = ()
    transfers: tuple[Transfer, ...] = ()

    @property
    def device(self) -> DeviceInfo | None:
        return self.devices[0] if self.devices else None

    def fields(self) -> DevicesFields:
        return DevicesFields(
            device=self.device,
            device_ids=tuple(d.id for d in self.devices),
            device_names=self.names,
            exports=self.exports,
            transfers=self.transfers,
        )
