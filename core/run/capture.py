"""RenderDoc for one run: loaded before Vulkan, captures of live calls, verified in another process.

RenderDoc has to be in the process before the first Vulkan instance, some
devices cannot be captured at all (lavapipe, below IREE's Vulkan baseline
under RenderDoc), and a capture is only listed once another process has read
it back. `RenderDocHook` keeps those rules out of the flows: it is prepared
before any device is opened and captures whatever calls a flow hands it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from gputop.core.errors import DeviceUnavailableError, GputopError
from gputop.core.module.device_discovery import vulkan_driver_created
from gputop.core.renderdoc.capture_files import CaptureVerifier
from gputop.core.renderdoc.in_app import RenderDoc, load_renderdoc, probe_vulkan
from gputop.core.run.flow import RunContext

__all__ = ["RenderDocHook"]


class RenderDocHook:
    """RenderDoc as one run sees it: ready to capture, or the one-line reason why not."""

    def __init__(self, ctx: RunContext) -> None:
        self._ctx = ctx
        self._renderdoc: RenderDoc | None = None
        self._verifier: CaptureVerifier | None = None

    @property
    def ready(self) -> bool:
        return self._renderdoc is not None

    def prepare(self) -> None:
        """Load RenderDoc before the first Vulkan instance, if this run is on Vulkan (`--renderdoc`)."""
        ctx = self._ctx
        mode = ctx.config.renderdoc
        specs = list(ctx.config.devices) or [ctx.config.device or ""]
        vulkan = [s for s in specs if s.startswith("vulkan")]
        if mode == "off" or not vulkan:
            status = "RenderDoc is off (--renderdoc off)" if mode == "off" else "RenderDoc captures Vulkan work"
            ctx.state.captures.set_renderdoc(status if mode == "off" else f"{status}; this run is not on Vulkan")
            return
        index = int(vulkan[0].split(":")[1]) if ":" in vulkan[0] else 0
        if vulkan_driver_created():
            # Too late for this process; but a device RenderDoc cannot capture at all (lavapipe, below IREE's
            # Vulkan 1.3 baseline under it) is the reason to give: restarting would not help.
            ok, reason = probe_vulkan(index)
            if ok or reason.endswith("does not exist"):
                status = "RenderDoc was loaded too late: a Vulkan instance already exists in this process"
            else:
                status = f"RenderDoc cannot capture here: {reason}"
            ctx.state.captures.set_renderdoc(status)
            if mode == "on":
                raise DeviceUnavailableError(status)
            ctx.state.log.add("warning", f"capture: {status}")
            return
        try:
            ok, reason = probe_vulkan(index)
            if not ok:
                raise DeviceUnavailableError(f"RenderDoc cannot capture here: {reason}")
            self._verifier = CaptureVerifier()  # before RenderDoc: it must stay a plain process
            rd = load_renderdoc()
        except GputopError as exc:
            ctx.state.captures.set_renderdoc(exc.message)
            if mode == "on":
                raise
            if not exc.message.endswith("does not exist"):  # no device at all: the run says so next
                ctx.state.log.add("info", f"RenderDoc: no captures in this run ({exc.message})")
            return
        folder = ctx.session_dir / "captures"
        folder.mkdir(exist_ok=True)
        rd.set_capture_path_template(folder / "gputop")
        self._renderdoc = rd
        major, minor, patch = rd.version
        how = "attached to the RenderDoc in this process" if rd.attached else f"loaded {rd.library}"
        status = f"RenderDoc {major}.{minor}.{patch} ready ({how})"
        ctx.state.captures.set_renderdoc(status)
        ctx.state.log.add("info", status)

    def capture(self, call_once: Callable[[], float], calls: int) -> int:
        """Capture `calls` calls (each made by `call_once`, which returns its synced seconds); returns calls made."""
        ctx = self._ctx
        rd = self._renderdoc
        if rd is None:
            ctx.state.log.add("warning", f"capture: {ctx.state.captures.renderdoc or 'RenderDoc is not loaded'}")
            return 0
        device = ctx.state.devices.devices[0]
        before = len(rd.captures())
        rd.start()
        if not rd.is_capturing():
            ctx.state.log.add("warning", "capture: RenderDoc did not start capturing (is its Vulkan layer enabled?)")
            return 0
        made = 0
        ctx.state.log.add("info", f"capturing {calls} call(s) on {device.id} with RenderDoc...")
        try:
            for _ in range(calls):
                if ctx.controls.stopping:
                    break  # Ctrl-C mid-capture: end the capture here, keep and verify what it holds
                ctx.state.calls.add(call_once())
                made += 1
        finally:
            rd.end()
        paths = rd.captures()
        if len(paths) <= before:
            ctx.state.log.add("warning", "capture: RenderDoc wrote no capture")
            return made
        path = paths[-1]
        count = ctx.state.calls.count
        rd.set_comments(
            path,
            f"gputop: {ctx.config.target} {ctx.state.module.function}() on {device.id} ({device.name}), "
            f"calls {count - made + 1}-{count}",
        )
        try:
            if self._verifier is None:
                raise GputopError("no capture verifier")
            info = self._verifier.verify(Path(path))
        except GputopError as exc:
            ctx.state.log.add("warning", f"capture written but not verified: {exc}", exc.log_path)
            return made
        # The dispatch list stays out of the run's snapshots (each one is recorded, and a large
        # model's list is kilobytes): `capture-info` and the Captures pane read it from the file.
        info = replace(info, calls=made, dispatch_list=(), actions=())
        ctx.state.captures.add(info)
        ctx.state.log.add("info", f"captured {made} call(s): {path} ({info.bytes} bytes, {info.dispatches} dispatches)")
        return made

    def close(self) -> None:
        if self._verifier is not None:
            self._verifier.close()
            self._verifier = None


def timed(call: Callable[[], object]) -> Callable[[], float]:
    """`call` made into one that returns its synced wall time in seconds."""

    def run() -> float:
        started = time.perf_counter()
        call()
        return time.perf_counter() - started

    return run
