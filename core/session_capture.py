"""A session's RenderDoc flow: load before Vulkan, capture calls, verify elsewhere.

RenderDoc has to be in the process before the first Vulkan instance, some
devices cannot be captured at all (lavapipe), and a capture is only listed
once another process has read it back. This keeps those rules out of the
session's main loop.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gputop.core.errors import DeviceUnavailableError, GputopError
from gputop.core.renderdoc import CaptureVerifier, load_renderdoc, probe_vulkan, vulkan_instance_created

if TYPE_CHECKING:
    from gputop.core.session import Session


def prepare_renderdoc(session: Session) -> None:
    """Load RenderDoc before the first Vulkan instance, if this run is on Vulkan."""
    mode = session.config.renderdoc
    specs = list(session.config.devices) or [session.config.device or ""]
    vulkan = [s for s in specs if s.startswith("vulkan")]
    if mode == "off" or not vulkan:
        session._renderdoc_status = {
            "off": "RenderDoc is off (--renderdoc off)",
        }.get(mode, "RenderDoc captures Vulkan work; this run is not on Vulkan")
        return
    if vulkan_instance_created():
        session._renderdoc_status = "RenderDoc was loaded too late: a Vulkan instance already exists in this process"
        if mode == "on":
            raise DeviceUnavailableError(session._renderdoc_status)
        session._event("warning", f"capture: {session._renderdoc_status}")
        return
    try:
        index = int(vulkan[0].split(":")[1]) if ":" in vulkan[0] else 0
        ok, reason = probe_vulkan(index)
        if not ok:
            raise DeviceUnavailableError(f"RenderDoc cannot capture here: {reason}")
        session._verifier = CaptureVerifier()  # before RenderDoc: it must stay a plain process
        rd = load_renderdoc()
    except GputopError as exc:
        session._renderdoc_status = exc.message
        if mode == "on":
            raise
        session._event("info", f"RenderDoc: no captures in this run ({exc.message})")
        return
    folder = session.session_dir / "captures"
    folder.mkdir(exist_ok=True)
    rd.set_capture_path_template(folder / "gputop")
    session._renderdoc = rd
    major, minor, patch = rd.version
    how = "attached to the RenderDoc in this process" if rd.attached else f"loaded {rd.library}"
    session._renderdoc_status = f"RenderDoc {major}.{minor}.{patch} ready ({how})"
    session._event("info", session._renderdoc_status)


def take_capture(session: Session, runner: Any, calls: int) -> None:
    rd = session._renderdoc
    if rd is None:
        session._event("warning", f"capture: {session._renderdoc_status or 'RenderDoc is not loaded'}")
        return
    device = session._devices[0]
    before = len(rd.captures())
    rd.start()
    if not rd.is_capturing():
        session._event("warning", "capture: RenderDoc did not start capturing (is its Vulkan layer enabled?)")
        return
    asked, calls = calls, 0
    session._event("info", f"capturing {asked} call(s) on {device.id} with RenderDoc...")
    try:
        for _ in range(asked):
            if session._stop.is_set():
                break  # Ctrl-C mid-capture: end the capture here, keep and verify what it holds
            started = time.perf_counter()
            runner.call()
            session._timer.add(time.perf_counter() - started)
            calls += 1
    finally:
        rd.end()
    paths = rd.captures()
    if len(paths) <= before:
        session._event("warning", "capture: RenderDoc wrote no capture")
        return
    path = paths[-1]
    rd.set_comments(
        path,
        f"gputop: {session.config.target} {session._function}() on {device.id} ({device.name}), "
        f"calls {session._timer.snapshot().count - calls + 1}-{session._timer.snapshot().count}",
    )
    try:
        if session._verifier is None:
            raise GputopError("no capture verifier")
        info = session._verifier.verify(Path(path))
    except GputopError as exc:
        session._event("warning", f"capture written but not verified: {exc}", exc.log_path)
        return
    info = replace(info, calls=calls)
    with session._lock:
        session._captures = (*session._captures, info)
    session._event("info", f"captured {calls} call(s): {path} ({info.bytes} bytes, {info.dispatches} dispatches)")
