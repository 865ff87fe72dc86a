"""The GPU's own counters over the run, sampled while it goes on: CUPTI PM sampling's figures (issue 48).

`PmSampling` is what the engine's PM sampling (`profiling.cupti.pm_sampler`,
`watch.pm_watch`, `run.state.pm`) hands viewers in every snapshot: which
metrics it reads and in what units, whether it samples now (or why not), the
newest values and a strip of the last seconds for each, and each metric's
median and 95th percentile over the calls (a call's value is the mean of the
samples over its window, weighted by overlap). The strip's clock is the SM
clock in MHz; the throughputs are percentages of the part's peak.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ROLE_LABELS", "PmCallFigures", "PmMetric", "PmSampling"]

ROLE_LABELS = {"sm": "SM", "tensor": "tensor", "dram": "DRAM", "clock": "clock"}  # what the strip calls each role


@dataclass(frozen=True)
class PmMetric:
    """One sampled metric: CUPTI's name, the strip's role for it (sm, tensor, dram, clock), label and unit."""

    name: str
    role: str
    label: str  # "SM", "tensor", "DRAM", "clock"
    unit: str  # "%" or "MHz"


@dataclass(frozen=True)
class PmCallFigures:
    """A metric over the calls: the median and 95th percentile of the calls' own averages, in its unit."""

    metric: str
    p50: float
    p95: float


@dataclass(frozen=True)
class PmSampling:
    """The PM sampling strip's state: sampling, paused, off (by the user), refused or starting, and its figures."""

    state: str
    reason: str | None  # why it does not sample now (a refusal, a pause, the user's key); None while it does
    source: str | None = None  # "CUPTI PM sampling 13.4.1"
    interval_ms: float | None = None
    metrics: tuple[PmMetric, ...] = ()
    metric_set: str | None = None  # the single-pass metric set the chip needed ("TriageCompute"), if any
    chip: str | None = None  # "GH100"
    newest: tuple[float | None, ...] = ()  # each metric's mean over the newest decode, in its unit
    # Each metric's strip, oldest first, one point per `bin_s`: None where no sample fell in it (before sampling
    # began, a pause, a profile pass), never 0, so a gap in the samples is not read as an idle GPU.
    series: tuple[tuple[float | None, ...], ...] = ()
    bin_s: float = 0.25
    calls: tuple[PmCallFigures, ...] = ()
    calls_aligned: int = 0  # calls whose whole window samples covered
    samples: int = 0  # samples decoded so far
    overflow: bool = False  # the hardware buffer overflowed at least once: some samples were lost
    decode_ms_per_s: float | None = None  # the sampling thread's own CPU time (decode and evaluate), ms a second

    @property
    def sampling(self) -> bool:
        return self.state == "sampling"

    def figures(self, metric: str) -> PmCallFigures | None:
        return next((f for f in self.calls if f.metric == metric), None)
