"""The PM sampling strip's state: the newest samples, the calls' own averages, and the strip of the last seconds.

A state part (see `gputop.core.run.state`): it is the PM watch's listener
(`pm_ready`, `pm_samples`, `pm_not_sampling` take the run's lock and publish);
`fields()` is its piece of every snapshot. Samples come from the PM watch
about ten times a second as rows
`[start_s, end_s, value, ...]` on the call timer's clock (perf_counter
seconds); they are kept in a ring of HISTORY rows in the metrics' display
units (the SM clock in MHz). Each call whose whole window the samples cover
gets the mean of each metric over that window, each sample weighted by how
much of it falls in the window (`window_means`, vectorised: ten thousand
calls a second cost a few searches, not a loop); those means are counted by
value, so the median and 95th percentile stay exact over a run of days in
bounded space, as the clocks' tally does.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np

from gputop.core.records.pm import ROLE_LABELS, PmCallFigures, PmMetric, PmSampling
from gputop.core.run.state.calls import CallsState
from gputop.core.run.state.devices import DevicesState
from gputop.core.run.state.link import RunLink
from gputop.core.run.state.log import LogState
from gputop.core.watch.call_clocks import counted_quantile

__all__ = [
    "BIN_S",
    "HISTORY",
    "LABELS",
    "STRIP_S",
    "PmFields",
    "PmState",
    "display_units",
    "window_means",
]

HISTORY = 30000  # samples kept: 30 s at a 1 ms interval, 5 minutes at the default 10 ms
STRIP_S = 15.0  # the strip's span
BIN_S = 0.25  # one strip point: the samples' mean over this long
NEWEST_S = 0.2  # the newest value: the mean of the samples ending in this last stretch (one decode's worth)
LABELS = {role: (label, "MHz" if role == "clock" else "%") for role, label in ROLE_LABELS.items()}
STEP = {"%": 0.01, "MHz": 1.0}  # the tally's resolution in each unit


class PmFields(TypedDict):
    """The snapshot's fields this part fills."""

    pm_sampling: PmSampling | None


def display_units(metrics: list[str], roles: dict[str, str]) -> tuple[PmMetric, ...]:
    """Each metric with its role, label and unit: the clock's in MHz, everything else as CUPTI gives it (%)."""
    described = []
    for name in metrics:
        role = roles.get(name, "other")
        label, unit = LABELS.get(role, (name.split("__", 1)[-1].split(".", 1)[0], "%"))
        described.append(PmMetric(name=name, role=role, label=label, unit=unit))
    return tuple(described)


def _to_display(rows: np.ndarray, metrics: tuple[PmMetric, ...]) -> np.ndarray:
    """CUPTI's values in the strip's units: a clock per second in MHz, cycles over a sample's length in MHz."""
    out = rows.astype(np.float64, copy=True)
    for i, metric in enumerate(metrics):
        if metric.unit != "MHz":
            continue
        column = out[:, 2 + i]
        if metric.name.endswith(".per_second"):
            out[:, 2 + i] = column / 1e6
        else:  # cycles in the sample
            length = np.maximum(out[:, 1] - out[:, 0], 1e-9)
            out[:, 2 + i] = column / length / 1e6
    return out


def window_means(samples: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each window's mean of each metric over `samples` (rows [start, end, v...], in time order, not overlapping),
    each sample weighted by its overlap with the window, and how much of each window samples covered (seconds).

    A gap between samples (a pause, a dropped sample) weighs nothing: the mean is over the covered time.
    """
    s0, s1 = samples[:, 0], samples[:, 1]
    length = s1 - s0
    values = samples[:, 2:]
    before_v = np.concatenate((np.zeros((1, values.shape[1])), np.cumsum(values * length[:, None], axis=0)))
    before_t = np.concatenate(([0.0], np.cumsum(length)))

    def integral(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        index = np.searchsorted(s0, t, side="right") - 1
        inside = index >= 0
        safe = np.where(inside, index, 0)
        part = np.where(inside, np.clip(t - s0[safe], 0.0, length[safe]), 0.0)
        covered = np.where(inside, before_t[safe] + part, 0.0)
        weighted = np.where(inside[:, None], before_v[safe] + values[safe] * part[:, None], 0.0)
        return weighted, covered

    wa, ca = integral(starts)
    wb, cb = integral(ends)
    covered = cb - ca
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (wb - wa) / covered[:, None]
    return means, covered


@dataclass(eq=False)
class PmState:
    """The strip's state and figures; `fields()` builds the snapshot's `PmSampling` from them."""

    link: RunLink = field(default_factory=RunLink.alone)
    log: LogState = field(default_factory=LogState)
    calls: CallsState = field(default_factory=CallsState)  # the calls whose windows the samples are set against
    devices: DevicesState = field(default_factory=DevicesState)  # a refusal is news on a GPU only
    state: str = "off"
    reason: str | None = None  # None while off: the engine has not decided yet (no strip in the snapshot)
    source: str | None = None
    interval_ms: float | None = None
    metrics: tuple[PmMetric, ...] = ()
    metric_set: str | None = None
    chip: str | None = None
    samples: int = 0
    overflow: bool = False
    decode_s: float = 0.0
    decode_since: float | None = None
    aligned_through: int = 0  # the call count up to which calls were aligned (or passed over)
    calls_aligned: int = 0
    _ring: np.ndarray | None = None
    _kept: int = 0  # rows in the ring (it fills oldest first, then wraps)
    _next: int = 0
    tallies: list[Counter[float]] = field(default_factory=list)
    _strip: tuple[tuple[float | None, ...], tuple[tuple[float | None, ...], ...]] | None = None  # until new samples

    # -- the PM watch's events (its thread, and the engine) -----------------------
    def pm_ready(self, info: dict[str, Any]) -> None:
        """PM sampling has started (or started again after a pause) with these metrics."""
        with self.link.lock:
            again = self.state == "paused"
            self._ready(info, time.perf_counter())
        if again:
            self.log.add("info", "pm sampling: on again")
        self.link.publish(True)

    def pm_samples(self, rows: np.ndarray, overflow: bool, decode_s: float) -> None:
        """Decoded samples: kept for the strip, and the calls they now cover get their own averages."""
        with self.link.lock:
            self._add(rows, overflow, decode_s)
            first, starts, ends = self.calls.timer.windows_from(self.aligned_through)
            if first > self.aligned_through:  # calls the window no longer holds: passed over
                self.aligned_through = first
            self._align(first, starts, ends)
        self.link.publish(False)

    def pm_not_sampling(self, state: str, reason: str) -> None:
        """PM sampling is not running: `state` (refused, paused, off, ended) and why; a change goes to the log."""
        with self.link.lock:
            changed = (self.state, self.reason) != (state, reason)
            self.state, self.reason = state, reason
            device = self.devices.device
        # The key's own viewer says "PM sampling off": the log keeps refusals and pauses, which no key asked for.
        if changed and state in ("refused", "paused") and device is not None and device.kind == "gpu":
            self.log.add("warning" if state == "refused" else "info", f"pm sampling: {reason}")
        self.link.publish(True)

    def status(self) -> tuple[str, str | None]:
        """The strip's state (sampling, starting, refused, paused, off, ended) and why it is not sampling."""
        with self.link.lock:
            return self.state, self.reason

    # -- lifecycle --------------------------------------------------------------
    def _ready(self, info: dict[str, Any], at_s: float) -> None:
        """Sampling has started (or started again) with `info` (the watch's `ready`)."""
        metrics = display_units(list(info["metrics"]), dict(info.get("roles", {})))
        if metrics != self.metrics:  # another set (a first start): the old figures describe other metrics
            self.metrics = metrics
            self._ring = np.zeros((HISTORY, 2 + len(metrics)))
            self._kept = self._next = 0
            self.tallies = [Counter() for _ in metrics]
            self._strip = None
        self.source = info.get("source")
        self.interval_ms = info.get("interval_ms")
        self.metric_set = info.get("metric_set")
        self.chip = info.get("chip")
        self.state, self.reason = "sampling", None
        if self.decode_since is None:
            self.decode_since = at_s

    # -- samples ----------------------------------------------------------------
    def _add(self, rows: np.ndarray, overflow: bool, decode_s: float) -> None:
        """Decoded samples (CUPTI's units), whether the hardware buffer overflowed, and what decoding took."""
        self.overflow = self.overflow or overflow
        self.decode_s += decode_s
        if self._ring is None or not len(rows):
            return
        rows = _to_display(rows, self.metrics)
        rows = rows[np.argsort(rows[:, 0], kind="stable")]
        fresh = rows[-HISTORY:]
        self._ring[(self._next + np.arange(len(fresh))) % HISTORY] = fresh
        self._next = (self._next + len(fresh)) % HISTORY
        self._kept = min(self._kept + len(rows), HISTORY)
        self._strip = None
        self.samples += len(rows)

    def kept(self) -> np.ndarray:
        """The kept samples, oldest first."""
        if self._ring is None:
            return np.zeros((0, 2))
        if self._kept < HISTORY:
            return self._ring[: self._kept]
        return np.concatenate((self._ring[self._next :], self._ring[: self._next]))

    def _align(self, first_index: int, starts: np.ndarray, ends: np.ndarray) -> None:
        """Calls numbered from `first_index` with their windows (perf_counter seconds): each one the kept samples
        cover to its end gets its means tallied; later ones wait for the next samples, earlier ones than the
        oldest kept sample are passed over."""
        kept = self.kept()
        if not len(kept) or not len(starts):
            return
        newest_end = kept[-1, 1]
        ready = ends <= newest_end
        if not ready.any():
            return
        last = int(np.nonzero(ready)[0][-1])  # calls end in order: those after the last ready one wait
        starts, ends = starts[: last + 1], ends[: last + 1]
        covered_from = starts >= kept[0, 0]
        # Only the samples that end after the first of these calls began can overlap them: the means over the
        # rest of the history (minutes of it) would be summed for nothing on every decode.
        near = kept[np.searchsorted(kept[:, 1], starts.min(), side="left") :]
        means, covered = window_means(near, starts, ends)
        whole = covered_from & (covered > 0)
        for i, metric in enumerate(self.metrics):
            step = STEP.get(metric.unit, 0.01)
            column = means[whole, i]
            column = column[np.isfinite(column)]
            self.tallies[i].update((np.round(column / step) * step).round(6).tolist())
        self.calls_aligned += int(whole.sum())
        self.aligned_through = first_index + last + 1

    # -- figures ----------------------------------------------------------------
    def call_figures(self) -> tuple[PmCallFigures, ...]:
        figures = []
        for metric, tally in zip(self.metrics, self.tallies, strict=False):
            if tally:
                p50, p95 = counted_quantile(tally, 0.5), counted_quantile(tally, 0.95)
                figures.append(PmCallFigures(metric.name, float(p50), float(p95)))
        return tuple(figures)

    def strip(self) -> tuple[tuple[float | None, ...], tuple[tuple[float | None, ...], ...]]:
        """Each metric's newest value and its strip (STRIP_S in BIN_S points, oldest first): None where no
        sample fell in a point (before sampling began, a pause), which is not 0, an idle GPU's reading."""
        kept = self.kept()
        if not len(kept):
            return tuple(None for _ in self.metrics), tuple(() for _ in self.metrics)
        newest_end = kept[-1, 1]
        recent = kept[kept[:, 1] >= newest_end - NEWEST_S]
        newest = tuple(float(v) for v in recent[:, 2:].mean(axis=0))
        bins = int(STRIP_S / BIN_S)
        index = np.floor((kept[:, 1] - newest_end) / BIN_S).astype(int) + bins - 1
        use = index >= 0
        counts = np.bincount(index[use], minlength=bins)[:bins]
        series = []
        for i in range(len(self.metrics)):
            sums = np.bincount(index[use], weights=kept[use, 2 + i], minlength=bins)[:bins]
            means = sums / np.maximum(counts, 1)
            series.append(tuple(round(float(v), 4) if n else None for v, n in zip(means, counts, strict=True)))
        return newest, tuple(series)

    def fields(self, now_s: float) -> PmFields:
        if self.state == "off" and not self.metrics and self.reason is None:
            return PmFields(pm_sampling=None)
        if self._strip is None:
            self._strip = self.strip()
        newest, series = self._strip
        elapsed = now_s - self.decode_since if self.decode_since is not None else 0.0
        return PmFields(
            pm_sampling=PmSampling(
                state=self.state,
                reason=self.reason,
                source=self.source,
                interval_ms=self.interval_ms,
                metrics=self.metrics,
                metric_set=self.metric_set,
                chip=self.chip,
                newest=newest if self.state == "sampling" else tuple(None for _ in self.metrics),
                series=series,
                bin_s=BIN_S,
                calls=self.call_figures(),
                calls_aligned=self.calls_aligned,
                samples=self.samples,
                overflow=self.overflow,
                decode_ms_per_s=round(self.decode_s * 1e3 / elapsed, 2) if elapsed > 1.0 else None,
            )
        )
