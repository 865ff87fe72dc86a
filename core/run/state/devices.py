"""Where the run's calls go: its devices, their names in the compiled module, and what moves between them.

A state part (see `gputop.core.run.state`): its setters take the run's lock;
`fields()` is its piece of every snapshot. The run's devices go to the
session's manifest as well.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from gputop.core.records.affinity import ExportAffinity, Transfer
from gputop.core.records.devices import DeviceInfo
from gputop.core.run.state.link import RunLink

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
    """The run's devices (the first is the one the header shows) and where each function's values live."""

    link: RunLink = field(default_factory=RunLink.alone)
    devices: tuple[DeviceInfo, ...] = ()
    names: tuple[tuple[str, str], ...] = ()  # (compiler device name, gputop device id)
    exports: tuple[ExportAffinity, ...] = ()
    transfers: tuple[Transfer, ...] = ()

    @property
    def device(self) -> DeviceInfo | None:
        return self.devices[0] if self.devices else None

    def set(self, devices: list[DeviceInfo], names: tuple[tuple[str, str], ...] = ()) -> None:
        """The run's devices (the first is the one the header shows) and, multi-device, their target names."""
        with self.link.lock:
            self.devices = tuple(devices)
            self.names = names
            device = self.device
        self.link.update_manifest(device=device, devices=list(devices))
        self.link.publish(True)

    def set_exports(self, exports: tuple[ExportAffinity, ...], transfers: tuple[Transfer, ...]) -> None:
        """The affinity of every argument and result and the transfers between devices (multi-device); one
        device: every function's results, on it."""
        with self.link.lock:
            self.exports, self.transfers = exports, transfers

    def fields(self) -> DevicesFields:
        return DevicesFields(
            device=self.device,
            device_ids=tuple(d.id for d in self.devices),
            device_names=self.names,
            exports=self.exports,
            transfers=self.transfers,
        )
