"""RenderDoc's in-application API through ctypes: headless captures of live Vulkan work.

IREE's own capture hook is not implemented for Vulkan in 3.13, and RenderDoc's
"capture the next frame" never fires for compute work without a swapchain, so
gputop calls the in-application API itself: `StartFrameCapture(NULL, NULL)` and
`EndFrameCapture(NULL, NULL)` around real calls. The library must be loaded
before the process creates its first Vulkan instance (loading it enables its
Vulkan layer), and under RenderDoc some devices fall below IREE's Vulkan 1.3
baseline (lavapipe), which a child-process probe detects before the run
commits to it. Captures are read in other processes, by `capture_files.py`.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputop.core.errors import DeviceUnavailableError
from gputop.core.processes import child_options

__all__ = ["API_1_6_0", "BASELINE_HELP", "LIBRARY_NAMES", "TABLE_SIZE", "RenderDoc", "load_renderdoc", "probe_vulkan"]

API_1_6_0 = 10600
LIBRARY_NAMES = ("librenderdoc.so", "/usr/lib/librenderdoc.so", "/usr/lib/x86_64-linux-gnu/librenderdoc.so")
# Index of each function in RENDERDOC_API_1_6_0 (renderdoc_app.h).
GET_API_VERSION, SET_CAPTURE_FILE_PATH_TEMPLATE, GET_NUM_CAPTURES, GET_CAPTURE = 0, 11, 13, 14
START_FRAME_CAPTURE, IS_FRAME_CAPTURING, END_FRAME_CAPTURE, SET_CAPTURE_FILE_COMMENTS = 19, 20, 21, 23
TABLE_SIZE = 27
BASELINE_HELP = (
    "under RenderDoc the driver is clamped to Vulkan 1.2 without bufferDeviceAddressCaptureReplay, "
    "so IREE refuses it ('no Vulkan physical device satisfies the Vulkan 1.3 baseline')"
)

_loaded: RenderDoc | None = None


@dataclass
class RenderDoc:
    library: str
    attached: bool  # RenderDoc was already in the process (renderdoccmd capture, LD_PRELOAD)
    _table: ctypes.Array[ctypes.c_void_p]

    def _fn(self, index: int, restype: Any, *argtypes: Any) -> Any:
        return ctypes.CFUNCTYPE(restype, *argtypes)(self._table[index] or 0)

    @property
    def version(self) -> tuple[int, int, int]:
        major, minor, patch = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        fn = self._fn(GET_API_VERSION, None, *(ctypes.POINTER(ctypes.c_int),) * 3)
        fn(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch))
        return major.value, minor.value, patch.value

    def set_capture_path_template(self, template: Path) -> None:
        self._fn(SET_CAPTURE_FILE_PATH_TEMPLATE, None, ctypes.c_char_p)(str(template).encode())

    def start(self) -> None:
        self._fn(START_FRAME_CAPTURE, None, ctypes.c_void_p, ctypes.c_void_p)(None, None)

    def is_capturing(self) -> bool:
        return bool(self._fn(IS_FRAME_CAPTURING, ctypes.c_uint32)())

    def end(self) -> bool:
        return bool(self._fn(END_FRAME_CAPTURE, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_void_p)(None, None))

    def captures(self) -> list[str]:
        count = self._fn(GET_NUM_CAPTURES, ctypes.c_uint32)()
        get = self._fn(
            GET_CAPTURE,
            ctypes.c_uint32,
            ctypes.c_uint32,
            ctypes.c_char_p,
            ctypes.POINTER(ctypes.c_uint32),
            ctypes.POINTER(ctypes.c_uint64),
        )
        paths = []
        for index in range(count):
            length, stamp = ctypes.c_uint32(0), ctypes.c_uint64(0)
            if not get(index, None, ctypes.byref(length), ctypes.byref(stamp)):
                continue
            buffer = ctypes.create_string_buffer(length.value + 1)
            get(index, buffer, ctypes.byref(length), ctypes.byref(stamp))
            paths.append(buffer.value.decode(errors="replace"))
        return paths

    def set_comments(self, path: str, comments: str) -> None:
        self._fn(SET_CAPTURE_FILE_COMMENTS, None, ctypes.c_char_p, ctypes.c_char_p)(path.encode(), comments.encode())


def load_renderdoc() -> RenderDoc:
    """Attach to a RenderDoc already in the process, or load librenderdoc.so."""
    global _loaded
    if _loaded is not None:
        return _loaded
    library: ctypes.CDLL | None = None
    attached = False
    names = [os.environ["GPUTOP_RENDERDOC_LIB"]] if os.environ.get("GPUTOP_RENDERDOC_LIB") else list(LIBRARY_NAMES)
    for name in names:
        try:  # already loaded (renderdoccmd capture, LD_PRELOAD)?
            library = ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_NOW)
            attached = True
            break
        except OSError:
            continue
    if library is None:
        # The capture layer's json only enables it when this is set (renderdoccmd sets it too).
        os.environ.setdefault("ENABLE_VULKAN_RENDERDOC_CAPTURE", "1")
        for name in names:
            try:
                library = ctypes.CDLL(name)
                break
            except OSError:
                continue
    if library is None:
        raise DeviceUnavailableError(
            "RenderDoc is not installed: apt-get install librenderdoc (make run does, as root), "
            "or set GPUTOP_RENDERDOC_LIB to librenderdoc.so"
        )
    get_api = library.RENDERDOC_GetAPI
    get_api.restype = ctypes.c_int
    get_api.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]
    pointer = ctypes.c_void_p()
    if not get_api(API_1_6_0, ctypes.byref(pointer)) or not pointer.value:
        raise DeviceUnavailableError("this RenderDoc does not offer in-application API 1.6.0 (RenderDoc 1.24+ does)")
    table = ctypes.cast(pointer, ctypes.POINTER(ctypes.c_void_p * TABLE_SIZE)).contents
    _loaded = RenderDoc(library._name, attached, table)
    return _loaded


def probe_vulkan(device_index: int, timeout: float = 120.0) -> tuple[bool, str]:
    """In a child process: can IREE still use Vulkan device N with RenderDoc loaded?

    The reason ends in "does not exist" when there is no device N at all.
    """
    proc = subprocess.run(
        [sys.executable, "-m", "gputop.core.renderdoc.in_app", "--probe", str(device_index)],
        capture_output=True,
        text=True,
        timeout=timeout,
        **child_options(),
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return False, f"the RenderDoc probe failed (exit {proc.returncode})"
    data = json.loads(lines[-1])
    return bool(data["ok"]), str(data["reason"])


def _probe_main(device_index: int) -> None:
    try:
        load_renderdoc()
        import iree.runtime as rt

        driver = rt.get_driver("vulkan")
        found = driver.query_available_devices()
        if device_index >= len(found):
            print(json.dumps({"ok": False, "reason": f"vulkan:{device_index} does not exist", "absent": True}))
            sys.stdout.flush()
            os._exit(0)
        entry = found[device_index]
        if "below baseline" in str(entry.get("name", "")):
            print(json.dumps({"ok": False, "reason": f"{entry['name']}: {BASELINE_HELP}"}))
            return
        driver.create_device(entry)
        print(json.dumps({"ok": True, "reason": str(entry.get("name"))}))
    except Exception as exc:
        text = str(exc).splitlines()[0] if str(exc) else repr(exc)
        if "baseline" in text:
            text = f"{text}: {BASELINE_HELP}"
        print(json.dumps({"ok": False, "reason": text}))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "--probe":
    _probe_main(int(sys.argv[2]))
