"""Each kernel's time set against its work and the device's limits: the roofline, per profile pass.

A profile pass gives times; `ir_count.py` gives each dispatch's FLOPs and bytes
from its IR, and `name_work.py` from its name where the IR is not at hand
(a `.vmfb` compiled elsewhere); `peaks.py` gives the device's ceilings, scaled to the clocks
`watch/clock_watch.py` read during the pass. This joins the three by the dispatch's
export name and fills each `KernelTiming`'s achieved rates, its share of each
ceiling and which ceiling bounds it: a kernel whose FLOP per byte is above the
ridge (peak FLOP/s over bandwidth) is compute bound, below it memory bound.
What is unknown stays None, and the summary says why.
"""

from __future__ import annotations

from dataclasses import replace

from gputop.core.profiling.work.dispatch_work import DispatchWork, ModuleWork
from gputop.core.profiling.work.name_work import work_from_name
from gputop.core.profiling.work.peaks import at_clock, compute_peak_tflops, peaks_for
from gputop.core.profiling.work.source_ops import SourceOpMap, layer_times, with_source_ops
from gputop.core.records.clocks import DevicePeaks, PassClocks
from gputop.core.records.devices import DeviceInfo
from gputop.core.records.profile import KernelTiming, ProfileSummary, SourceOp

__all__ = ["KernelEfficiency", "rate_kernel", "ridge_intensity"]


def ridge_intensity(peak_tflops: float, bandwidth_gbps: float) -> float:
    """FLOP per byte where the memory roof meets the compute roof."""
    return peak_tflops * 1e12 / (bandwidth_gbps * 1e9)


def rate_kernel(kernel: KernelTiming, work: DispatchWork | None, peaks: DevicePeaks | None, why: str) -> KernelTiming:
    """`kernel` with its work, achieved rates, percentages of the ceilings and its bound filled in."""
    if work is None:
        return replace(kernel, work=why)
    flops, size = work.flops, work.bytes
    seconds = kernel.avg_us * 1e-6
    intensity = flops / size if flops is not None and size else None
    achieved_tflops = flops / seconds / 1e12 if flops is not None and seconds > 0 else None
    achieved_gbps = size / seconds / 1e9 if size is not None and seconds > 0 else None
    peak = bandwidth = None
    if peaks is not None:
        nominal = compute_peak_tflops(peaks, work.dtype, work.contraction)
        peak = nominal * peaks.compute_scale if nominal else None
        bandwidth = peaks.bandwidth_gbps * peaks.bandwidth_scale if peaks.bandwidth_gbps else None
    bound = None
    if peak and bandwidth and flops is not None and size is not None:
        bound = "compute" if size == 0 or (intensity or 0.0) >= ridge_intensity(peak, bandwidth) else "memory"
    return replace(
        kernel,
        flops=flops,
        bytes=size,
        bytes_read=work.bytes_read,
        bytes_written=work.bytes_written,
        intensity=intensity,
        achieved_tflops=achieved_tflops,
        achieved_gbps=achieved_gbps,
        pct_peak_compute=100 * achieved_tflops / peak if achieved_tflops is not None and peak else None,
        pct_peak_bandwidth=100 * achieved_gbps / bandwidth if achieved_gbps is not None and bandwidth else None,
        bound=bound,
        work=work.label,
        peak_tflops=peak,
        work_source=work.source,
    )


class KernelEfficiency:
    """Rates the kernels of one module on one device, pass after pass (the peaks are looked up once)."""

    def __init__(
        self, device: DeviceInfo, work: ModuleWork, gpu_name: str | None = None, source_map: SourceOpMap | None = None
    ) -> None:
        self._work = work
        self._source_map = source_map or SourceOpMap(None, work.reason)
        self._peaks, self._peaks_reason = peaks_for(device.kind, [gpu_name or "", device.name])

    @property
    def work(self) -> ModuleWork:
        return self._work

    def work_of(self, kernel: str) -> DispatchWork:
        """The kernel's work counted from its IR, else as far as its name says (never a guess: what the
        name does not say is unknown, with why)."""
        return self._work.lookup(kernel) or work_from_name(kernel)

    @property
    def work_source(self) -> str:
        """Where the kernels' work comes from, in words (the report's `work` line)."""
        if self._work.reason:
            return f"the dispatch names: {self._work.reason}"
        return self._work.source

    def source_ops_named(self, kernel: str) -> tuple[SourceOp, ...] | None:
        """The source ops of the kernel a profile calls `kernel`; None where they are not known (for a trace
        written before the pass's kernels are rated)."""
        return self._source_map.ops_for(self._work.lookup(kernel))[0]

    def source_ops_of(self, kernel: KernelTiming) -> KernelTiming:
        """`kernel` with the source ops it was formed from, or why they are not known."""
        ops, reason = self._source_map.ops_for(self._work.lookup(kernel.name))
        return with_source_ops(kernel, ops, reason)

    def _rate_and_name(self, kernel: KernelTiming, peaks: DevicePeaks | None) -> KernelTiming:
        return self.source_ops_of(rate_kernel(kernel, self.work_of(kernel.name), peaks, ""))

    def annotate(self, summary: ProfileSummary, clocks: PassClocks | None, clocks_reason: str | None) -> ProfileSummary:
        """`summary` with every kernel rated and the pass's clocks, peaks and work source beside them."""
        peaks = self._peaks
        if peaks is not None and clocks is not None:
            max_mem = clocks.start.max_mem_mhz or clocks.end.max_mem_mhz
            peaks = at_clock(peaks, clocks.mean_sm_mhz, clocks.mean_mem_mhz, max_mem)
        # Against an estimate (a CPU's peaks) a share may pass 100%: kept as computed, with
        # `peaks.estimate`; every face shows it as `>100%*` (units.share_of_ceiling).
        kernels = tuple(self._rate_and_name(k, peaks) for k in summary.kernels)
        return replace(
            summary,
            kernels=kernels,
            layers=layer_times(kernels),
            source_ops_reason=self._source_map.reason,
            clocks=clocks,
            clocks_reason=None if clocks is not None else clocks_reason,
            peaks=peaks,
            peaks_reason=self._peaks_reason,
            work_source=self.work_source,
        )
