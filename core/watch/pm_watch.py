"""PM sampling on a thread of the engine: opens CUPTI's sampler beside the run's CUDA device and drains it.

`PmWatch` owns one `profiling.cupti.pm_sampler.Sampler` on a watcher's daemon
thread (the `Watcher` base: started once, stopped and joined as the other
watchers are): every CUPTI call (enable, configure, decode, disable) is made
there, so the call loop never waits on one. Every DECODE_EVERY_S (its period)
it decodes the hardware buffer (its look) and hands the rows, with what
decoding took, to its listener (the run's state). Unlike the other watchers it
is woken early: a pause or resume acts at once, not a period later.
`pause(why)` stops and disables sampling (the counters are then free for
`ncu`) and `resume()` enables it again; `stop()` ends it for good.
Each change of state, and a refusal, goes to the listener as one line.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from gputop.core.profiling.cupti.pm_sampler import DECODE_EVERY_S, INTERVAL_MS, Refusal
from gputop.core.watch.watcher import Watcher

__all__ = ["PmListener", "PmWatch"]


class PmListener(Protocol):
    """What the watch tells: sampling started, samples, a pause or refusal (state and why), the end."""

    def pm_ready(self, info: dict[str, Any]) -> None: ...

    def pm_samples(self, rows: np.ndarray, overflow: bool, decode_s: float) -> None: ...

    def pm_not_sampling(self, state: str, reason: str) -> None: ...


class PmWatch(Watcher[None]):
    """Samples one CUDA GPU (`uuid`) from a thread of this process, from `start()` to `stop()`."""

    def __init__(self, listener: PmListener, uuid: str | None, interval_ms: float = INTERVAL_MS) -> None:
        super().__init__("gputop-pm-sampling", DECODE_EVERY_S)
        self.listener = listener
        self.uuid = uuid
        self.interval_ms = interval_ms
        self._wake = threading.Event()  # a pause, resume or stop: acted on at once, not a period later
        self._lock = threading.Lock()
        self._want: tuple[str, str] | None = None  # (state, why) while it should not sample; None: sample
        self._sampler: Any = None  # the open `pm_sampler.Sampler`, on the watcher's thread only
        self._idle = threading.Event()  # set while no sampler is enabled (before the first, in a pause, at the end)
        self._idle.set()
        self._settled = threading.Event()  # set once the first start has sampled or been refused
        self.refused: Refusal | None = None  # a refusal every later start would meet too

    def pause(self, state: str, why: str, wait_s: float = 0.0) -> bool:
        """Stop sampling (`state` paused or off, and why) until `resume`; the counters are freed. With `wait_s`,
        waits that long for the sampler to be disabled (another profiler is about to want the counters);
        returns whether it is."""
        with self._lock:
            self._want = (state, why)
        self._wake.set()
        return self._idle.wait(wait_s) if wait_s else self._idle.is_set()

    def resume(self) -> None:
        with self._lock:
            self._want = None
        self._wake.set()

    def stop(self) -> None:
        """End sampling (stop, last decode, disable) and wait for the thread."""
        self._stopping.set()
        self._wake.set()
        super().stop()

    def wait_settled(self, timeout: float) -> bool:
        """Wait up to `timeout` for the first start to end in sampling or a refusal; whether it did."""
        return self._settled.wait(timeout)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def look(self) -> None:
        """One period's decode: the samples since the last, to the listener."""
        self._deliver(self._sampler, self._sampler.drain)

    def run(self) -> None:
        """The thread: sample while wanted, free the counters while paused, decode every period, until stopped."""
        from gputop.core.profiling.cupti import pm_sampler

        ever = False  # whether it ever sampled
        try:
            folder = pm_sampler.load_libraries()
            ordinal, name = pm_sampler.cuda_ordinal(self.uuid)
        except Refusal as refusal:
            self._refuse(refusal)
            return
        while True:
            with self._lock:
                stopping, want = self._stopping.is_set(), self._want
            if stopping:
                break
            if want is not None and self._sampler is not None:
                try:
                    self._deliver(self._sampler, self._sampler.close)
                finally:
                    self._sampler = None
            if want is not None:
                self._idle.set()
                self.listener.pm_not_sampling(*want)
                self._wake.wait()
                self._wake.clear()
                continue
            if self._sampler is None:
                if not self._open(pm_sampler, ordinal, name, folder):
                    return
                ever = True
            if self._wake.wait(self.every_s):
                self._wake.clear()
                continue  # a pause, resume or stop: handled at the top
            try:
                self.look()
            except Exception as exc:
                with contextlib.suppress(Exception):
                    self._sampler.close()
                self._idle.set()
                self._refuse(Refusal("failed", f"PM sampling stopped: {type(exc).__name__}: {exc}"))
                return
        if self._sampler is not None:
            with contextlib.suppress(Exception):  # the run is ending: its samples so far stand
                self._deliver(self._sampler, self._sampler.close)
        self._idle.set()
        self._settled.set()
        ended = "the run's calls are over" if ever else "the run's calls ended before PM sampling had started"
        self.listener.pm_not_sampling("ended", ended)

    def _open(self, pm_sampler: Any, ordinal: int, name: str, folder: Any) -> bool:
        """Enable a sampler and tell the listener what it samples; False (and the refusal told) where it cannot."""
        self._idle.clear()
        sampler = self._sampler = pm_sampler.Sampler(ordinal, self.interval_ms)
        try:
            sampler.open(None)
        except Refusal as refusal:
            self._idle.set()
            self._refuse(refusal)
            return False
        except Exception as exc:  # a CUPTI failure of ours to name: one line, never the run's end
            self._idle.set()
            self._refuse(Refusal("failed", f"PM sampling failed to start: {type(exc).__name__}: {exc}"))
            return False
        self.listener.pm_ready(
            {
                "metrics": sampler.metrics,
                "roles": sampler.roles,
                "interval_ms": self.interval_ms,
                "source": f"CUPTI PM sampling {pm_sampler.cupti_version()}",
                "chip": sampler.chip,
                "metric_set": sampler.set_name,
                "device": f"{name} (cuda:{ordinal})",
                "libraries": folder,
            }
        )
        self._settled.set()
        return True

    def _deliver(self, sampler: Any, decode: Callable[[], tuple[list[list[float]], bool]]) -> None:
        """`decode` (the sampler's drain or close) timed, and its samples handed to the listener."""
        started = time.thread_time()  # this thread's CPU time: its wall time also counts waits for the GIL
        rows, overflow = decode()
        spent = time.thread_time() - started
        width = 2 + len(sampler.metrics)
        self.listener.pm_samples(np.asarray(rows, dtype=np.float64).reshape(-1, width), overflow, spent)

    def _refuse(self, refusal: Refusal) -> None:
        self.refused = refusal
        self.listener.pm_not_sampling("refused", refusal.line)
        self._settled.set()
