"""RenderDoc captures: the frame's dispatches, their bound buffers, and a replay's GPU times.

`renderdoc.capture_files` verifies a capture in another process and reads it into
these; the Captures pane and `gputop capture-info` show them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputop.core.records.base import now

__all__ = ["BoundBuffer", "CaptureDispatch", "CaptureInfo", "CaptureReplay"]


@dataclass(frozen=True)
class BoundBuffer:
    """One buffer a dispatch sees: its binding, and the bytes of the slice bound there."""

    binding: int
    bytes: int | None  # the bound range (VK_WHOLE_SIZE resolved); None when the buffer's size is unknown
    set: int = 0
    offset: int = 0  # where the slice starts in its VkBuffer (IREE suballocates one arena)
    buffer: str = ""  # RenderDoc's resource id of the VkBuffer
    buffer_bytes: int | None = None  # the whole VkBuffer


@dataclass(frozen=True)
class CaptureDispatch:
    """One dispatch in a RenderDoc capture, as recorded, and its GPU time when the capture was replayed."""

    index: int  # in recording order, from 0
    name: str  # the pipeline's entry point: IREE's executable export name
    workgroup_count: tuple[int, ...] | None  # (x, y, z); None for an indirect dispatch not replayed
    buffers: tuple[BoundBuffer, ...] = ()
    pipeline: str = ""  # RenderDoc's resource id of the compute pipeline
    debug_name: str | None = None  # the pipeline's debug-utils name, when the program set one
    chunk: int = 0  # the call's index in the capture's structured data
    event_id: int | None = None  # RenderDoc's event id (replay only), as qrenderdoc shows it
    gpu_duration_us: float | None = None  # median over the replay passes
    gpu_duration_us_min: float | None = None


@dataclass(frozen=True)
class CaptureReplay:
    """Whether a capture was replayed here for per-dispatch GPU times, on what, or why not."""

    device: str | None
    ok: bool
    reason: str
    passes: int = 0
    seconds: float | None = None


@dataclass(frozen=True)
class CaptureInfo:
    """A RenderDoc capture, verified in another process."""

    path: str
    bytes: int
    dispatches: int
    dispatch_names: tuple[str, ...]
    api: str
    calls: int = 1
    gpu_durations_us: tuple[float, ...] = ()  # per dispatch, in order, when a replay timed them all
    timestamp: float = field(default_factory=now)
    dispatch_list: tuple[CaptureDispatch, ...] = ()  # empty when read by renderdoccmd (and in a run's snapshots)
    actions: tuple[str, ...] = ()  # the frame's action calls in order ("vkCmdDispatch 64x1x1 NAME", ...)
    replay: CaptureReplay | None = None  # None when no replay was asked for
    reader: str = "renderdoccmd"  # what read it: RenderDoc's Python module (which Python), or renderdoccmd
    reader_note: str | None = None  # the one line saying what is missing, when renderdoccmd stood in
    captured_on: str | None = None  # the GPU and driver the capture was made on
