"""A fleet's rows: one per run on its host and GPU, joined from the fleet queries' answers, worst first.

The values are frozen, so a poll's thread hands them to the view whole. A run is named by the
labels every series of it carries (`Hostname`, `run`); a series without them (a `gputop serve`
older than issue 58) is named by Prometheus's `instance` instead, so it still shows, as one row.
A run whose functions are several (a watched program's) shows the one its time goes to (calls/s x
p50) and how many others it has. "Worst first" is a fixed order anyone can predict: a run in
error, then one with a hint standing (most hints first), then one whose memory grows per call,
then the slowest p95.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from gputop.core.fleet.client import Sample

__all__ = ["BAD_STATES", "FLEET_SORTS", "FleetPoll", "FleetRow", "fleet_rows", "run_key", "sort_rows"]

BAD_STATES = ("error", "crashed")
FLEET_SORTS = ("worst", "p95", "calls/s", "host")  # the orders `s` steps through, the first the default


def run_key(labels: Mapping[str, str]) -> tuple[str, str]:
    """(host, run) of a series: the labels a run's series carry, else the scrape's instance and no run."""
    host = labels.get("Hostname") or labels.get("instance") or "?"
    return host, labels.get("run", "")


@dataclass(frozen=True)
class FleetRow:
    """One run on one host and GPU, as Prometheus holds it at one time."""

    host: str
    run: str
    target: str = ""
    program: str = ""  # a watched program's command; empty for a run gputop makes
    device: str = ""  # the run's device as gputop names it (`local-task`, `cuda:0`)
    gpu: str = ""  # the GPU's index where NVML gives one, else the device
    gpu_name: str = ""  # NVML's model name, where it gives one
    instance: str = ""  # the address Prometheus scrapes the run at
    function: str = ""  # the function the run's time goes to
    functions: int = 0  # how many functions the run has called
    p50_s: float | None = None
    p95_s: float | None = None
    over: str = ""  # `window`: the quantiles are the rates' window's; `run`: the whole run's (no calls in it)
    calls_per_s: float | None = None  # every function's calls together
    sm_clock_hz: float | None = None
    memory_used_bytes: float | None = None
    memory_total_bytes: float | None = None
    growth_bytes_per_call: float | None = None
    state: str = ""
    hints: tuple[str, ...] = ()  # the subjects of the hints standing

    @property
    def key(self) -> str:
        """The row's key in a table, stable from one poll to the next."""
        return f"{self.host}\x1f{self.run}"

    def worst_key(self) -> tuple[object, ...]:
        """Smaller is worse: error, hints, growth, the slowest p95; then host and run, for a stable order."""
        p95 = self.p95_s if self.p95_s is not None else -1.0
        growing = (self.growth_bytes_per_call or 0.0) > 0
        return (self.state not in BAD_STATES, -len(self.hints), not growing, -p95, self.host, self.run)


@dataclass(frozen=True)
class FleetPoll:
    """One refresh of the fleet view: its rows (in no order), when Prometheus was asked and what it cost."""

    url: str
    rows: tuple[FleetRow, ...] = ()
    at: float | None = None  # the queries' evaluation time (None: the server's now)
    done_at: float = 0.0  # when the poll's answers were all in (Unix seconds)
    took_s: float = 0.0  # the whole poll: every query and the join
    query_s: dict[str, float] = field(default_factory=dict)  # each query's own time
    series: int = 0  # the samples every query returned, together


def _by_run(samples: Iterable[Sample]) -> dict[tuple[str, str], list[Sample]]:
    grouped: dict[tuple[str, str], list[Sample]] = {}
    for sample in samples:
        grouped.setdefault(run_key(sample.labels), []).append(sample)
    return grouped


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _one(samples: Sequence[Sample], device: str, pick: Callable[[Sample], float] = lambda s: s.value) -> Sample | None:
    """The run's own device's series among `samples` (a run on two devices has one each), else the largest."""
    if not samples:
        return None
    own = [s for s in samples if s.labels.get("device") == device]
    return max(own or samples, key=pick)


def _functions(of: Callable[[str], list[Sample]]) -> dict[str, dict[str, float | str]]:
    """Each function of a run (`of` gives its samples of a query): p50, p95, calls/s, and the span they cover."""
    functions: dict[str, dict[str, float | str]] = {}
    for name in ("p50", "p95", "calls"):
        for sample in of(name):
            entry = functions.setdefault(sample.labels.get("function", ""), {})
            entry[name] = sample.value
            if name != "calls":
                entry["over"] = "window"
    for name in ("p50", "p95"):  # the second round's: the whole run's, where the window held no calls
        for sample in of(f"{name}_run"):
            entry = functions.setdefault(sample.labels.get("function", ""), {})
            if name not in entry:
                entry[name] = sample.value
                entry["over"] = "run"
    return functions


def _top_function(functions: Mapping[str, Mapping[str, float | str]]) -> str:
    """The function the run's time goes to: calls/s x p50 (a run whose calls stopped: the slowest p95)."""

    def share(name: str) -> tuple[float, float]:
        entry = functions[name]
        rate, p50, p95 = (float(entry.get(k, 0.0)) for k in ("calls", "p50", "p95"))
        return (rate * p50 if math.isfinite(rate * p50) else 0.0, p95 if math.isfinite(p95) else 0.0)

    return max(sorted(functions), key=share) if functions else ""


def fleet_rows(results: Mapping[str, list[Sample]]) -> tuple[FleetRow, ...]:
    """The rows of every run named in `results` (a query's name -> its samples, as `FleetQueries` names them)."""
    grouped = {name: _by_run(samples) for name, samples in results.items()}
    keys = sorted({key for by_run in grouped.values() for key in by_run})
    rows = []
    for key in keys:

        def of(name: str, key: tuple[str, str] = key) -> list[Sample]:
            return grouped.get(name, {}).get(key, [])

        info = of("info")[0].labels if of("info") else {}
        device = info.get("device", "")
        functions = _functions(of)
        top = _top_function(functions)
        chosen = functions.get(top, {})
        gpu_series = _one(of("memory_total") or of("clock") or of("memory_used"), device)
        gpu_labels = gpu_series.labels if gpu_series is not None else {}
        if device in ("", "none"):  # a watched program names no device of its own: its memory's device
            device = gpu_labels.get("device", device)
        used, total = _one(of("memory_used"), device), _one(of("memory_total"), device)
        clock, growth = _one(of("clock"), device), _one(of("growth"), device)
        states = [s.labels.get("state", "") for s in of("state")]
        rates = [float(f["calls"]) for f in functions.values() if "calls" in f and math.isfinite(float(f["calls"]))]
        rows.append(
            FleetRow(
                host=key[0],
                run=key[1],
                target=info.get("target", ""),
                program=info.get("program", ""),
                device=device,
                gpu=gpu_labels.get("gpu") or device,
                gpu_name=gpu_labels.get("modelName") or gpu_labels.get("model_name") or info.get("device_name", ""),
                instance=info.get("instance", "") or gpu_labels.get("instance", ""),
                function=top,
                functions=len(functions),
                p50_s=_finite(float(chosen["p50"])) if "p50" in chosen else None,
                p95_s=_finite(float(chosen["p95"])) if "p95" in chosen else None,
                over=str(chosen.get("over", "")),
                calls_per_s=sum(rates) if rates else None,
                sm_clock_hz=_finite(clock.value) if clock else None,
                memory_used_bytes=_finite(used.value) if used else None,
                memory_total_bytes=_finite(total.value) if total else None,
                growth_bytes_per_call=_finite(growth.value) if growth else None,
                state=sorted(states)[0] if states else "",
                hints=tuple(sorted({s.labels.get("subject", "?") for s in of("hints")})),
            )
        )
    return tuple(rows)


def sort_rows(rows: Iterable[FleetRow], order: str = "worst") -> list[FleetRow]:
    """`rows` in one of `FLEET_SORTS`: worst first, slowest p95 first, busiest first, or by host and run."""
    if order == "p95":
        return sorted(rows, key=lambda r: (-(r.p95_s if r.p95_s is not None else -1.0), r.host, r.run))
    if order == "calls/s":
        return sorted(rows, key=lambda r: (-(r.calls_per_s or 0.0), r.host, r.run))
    if order == "host":
        return sorted(rows, key=lambda r: (r.host, r.gpu, r.run))
    return sorted(rows, key=FleetRow.worst_key)
