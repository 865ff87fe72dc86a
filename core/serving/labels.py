"""The labels every series of a run carries, and dcgm-exporter's GPU labels, so PromQL joins gputop to the rest.

A site that scrapes NVIDIA's dcgm-exporter on every node looks at a GPU by its
labels `UUID`, `gpu`, `Hostname`, `modelName` and `pci_bus_id`; gputop's series
carry the same names with the same values (NVML's, as dcgm-exporter reads
them), so `on(UUID)` joins a run's calls to the GPU's own clocks, power or Xid
errors. Every series of a run also says which run it is: `run` (the session
folder's name), `target`, `device`, `Hostname` and, for a watched program,
`program` (its script's name). Per-GPU labels are only those that exist: a CPU
device has none, a GPU NVML does not see (Vulkan on lavapipe, an AMD GPU) has
its index, name and the UUID its driver reports.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Sequence
from pathlib import Path

from gputop.core.records.devices import DeviceInfo
from gputop.core.snapshot import RunSnapshot
from gputop.core.watch import nvml

__all__ = ["GPU_LABELS", "GpuLabels", "Labels", "run_labels", "script_name"]

Labels = dict[str, str]  # label name to value, in the order the family lists them
GPU_LABELS = ("UUID", "gpu", "modelName", "pci_bus_id")  # dcgm-exporter's, beside its `Hostname`

_PYTHON = re.compile(r"python[0-9.]*$")
_WITH_VALUE = {"-X", "-W", "-Q"}  # the interpreter's options that take the next word as their value


def script_name(command: Sequence[str]) -> str:
    """A watched program's name as its user calls it: `app.py` of `python -u app.py --port 1`, `serve` of
    `python -m serve`, `app` of `./app`."""
    if not command:
        return ""
    first = os.path.basename(command[0])
    if not _PYTHON.match(first):
        return first
    words = list(command[1:])
    while words:
        word = words.pop(0)
        if word in ("-m", "-c"):
            return words[0] if word == "-m" and words else word
        if word in _WITH_VALUE:
            words = words[1:]
        elif not word.startswith("-"):
            return os.path.basename(word)
    return first


def run_labels(snap: RunSnapshot, hostname: str) -> Labels:
    """`run`, `target`, `device`, `Hostname` and, for a watched program, `program`: every series of a run."""
    labels = {
        "run": Path(snap.session_dir).name if snap.session_dir else "",
        "target": snap.target,
        "device": snap.device.id if snap.device else "none",
        "Hostname": hostname,
    }
    if snap.program is not None:
        labels["program"] = script_name(snap.program.command)
    return labels


class GpuLabels:
    """dcgm-exporter's labels of a run's device, looked up in NVML once per device (a scrape pays nothing)."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, str | None, str], Labels] = {}
        self.hostname = socket.gethostname()

    def of(self, device: DeviceInfo | None) -> Labels:
        """`UUID`, `gpu`, `modelName`, `pci_bus_id` of `device`, those that exist; {} for a CPU device or none."""
        if device is None or device.kind not in ("gpu", "software-gpu"):
            return {}
        key = (device.id, device.uuid, device.name)
        if key not in self._known:
            self._known[key] = _gpu_labels(device)
        return self._known[key]


def _dashed(uuid: str) -> str:
    """IREE's 32 hex digits as vulkaninfo's `deviceUUID` writes them (8-4-4-4-12); anything else as it is."""
    if re.fullmatch(r"[0-9a-fA-F]{32}", uuid):
        return "-".join((uuid[:8], uuid[8:12], uuid[12:16], uuid[16:20], uuid[20:])).lower()
    return uuid


def _gpu_labels(device: DeviceInfo) -> Labels:
    match = nvml.match_gpu(device.uuid, device.name) if device.kind == "gpu" else None
    if match is not None:  # as dcgm-exporter writes them: NVML's UUID (GPU-...), index, name and PCI bus id
        labels = {"UUID": match.uuid, "gpu": str(match.index), "modelName": match.name}
        if match.pci_bus_id:
            labels["pci_bus_id"] = match.pci_bus_id
        return labels
    labels = {}
    if device.uuid:  # a Vulkan device's own UUID (lavapipe's, an AMD GPU's): the label exists, NVML does not
        labels["UUID"] = _dashed(device.uuid)
    index = device.id.rpartition(":")[2]
    if index.isdigit():
        labels["gpu"] = index
    labels["modelName"] = device.name
    return labels
