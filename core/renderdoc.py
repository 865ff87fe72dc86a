"""RenderDoc's in-application API through ctypes: headless captures of live Vulkan work.

IREE's own capture hook is not implemented for Vulkan in 3.13, and RenderDoc's
"capture the next frame" never fires for compute work without a swapchain, so
gputop calls the in-application API itself: `StartFrameCapture(NULL, NULL)` and
`EndFrameCapture(NULL, NULL)` around real calls. The library must be loaded
before the process creates its first Vulkan instance (loading it enables its
Vulkan layer), and under RenderDoc some devices fall below IREE's Vulkan 1.3
baseline (lavapipe), which a child-process probe detects before the run
commits to it. Captures are verified in another process, since opening a
capture in the capturing process crashes.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputop.core.errors import DeviceUnavailableError, GputopError
from gputop.core.files import require_file
from gputop.core.records import CaptureInfo

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


class CaptureError(GputopError):
    """A capture could not be taken or read."""


def vulkan_instance_created() -> bool:
    """Whether this process already asked IREE for its Vulkan driver (an instance exists)."""
    from gputop.core import devices

    return devices.VULKAN_DRIVER_CREATED


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
    """In a child process: can IREE still use Vulkan device N with RenderDoc loaded?"""
    proc = subprocess.run(
        [sys.executable, "-m", "gputop.core.renderdoc", "--probe", str(device_index)],
        capture_output=True,
        text=True,
        timeout=timeout,
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
        entry = driver.query_available_devices()[device_index]
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


def _verifier_env() -> dict[str, str]:
    """renderdoccmd's environment: a private RenderDoc install's library folders first."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ENABLE_VULKAN_RENDERDOC_CAPTURE")}
    private = os.environ.get("GPUTOP_RENDERDOC_LIB")
    if private:
        folder = Path(private).resolve().parent
        extra = [str(folder), str(folder / "x86_64-linux-gnu"), str(folder.parent.parent / "lib" / "x86_64-linux-gnu")]
        env["LD_LIBRARY_PATH"] = os.pathsep.join([*extra, env.get("LD_LIBRARY_PATH", "")]).rstrip(os.pathsep)
    return env


def capture_info(path: Path, timeout: float = 300.0) -> CaptureInfo:
    """Verify a capture in another process (renderdoccmd convert) and count its dispatches."""
    size = require_file(path, allow_empty=True)
    with open(path, "rb") as handle:
        magic = handle.read(4)
    if size < 64 or magic != b"RDOC":
        raise CaptureError(f"{path}: not a RenderDoc capture (.rdc)")
    tool = shutil.which("renderdoccmd")
    if tool is None:
        raise CaptureError("verifying captures needs renderdoccmd: apt-get install renderdoccmd")
    with tempfile.TemporaryDirectory(prefix="gputop-rdc-") as tmp:
        xml_path = Path(tmp) / "capture.xml"
        command = [tool, "convert", "-f", str(path), "-o", str(xml_path), "-c", "xml"]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=_verifier_env())
        if proc.returncode != 0 or not xml_path.exists():
            detail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
            why = detail[-1] if detail else "corrupt or truncated"
            if "shared libraries" in why:
                why += f" (LD_LIBRARY_PATH={_verifier_env().get('LD_LIBRARY_PATH', '')})"
            raise CaptureError(f"{path}: renderdoccmd cannot read it ({why})")
        return _summarize_xml(path, size, xml_path)


def _summarize_xml(path: Path, size: int, xml_path: Path) -> CaptureInfo:
    dispatches = 0
    names: list[str] = []
    api = "Vulkan"
    try:
        for _, element in ElementTree.iterparse(xml_path, events=("end",)):
            if element.tag == "driver" and element.text:
                api = element.text.strip()
            if element.tag == "chunk":
                name = element.get("name", "")
                if name == "vkCmdDispatch":
                    dispatches += 1
                elif name == "vkCreateComputePipelines":
                    for child in element.iter():
                        if child.get("name") == "pName" and child.text and child.text not in names:
                            names.append(child.text)
                element.clear()
    except ElementTree.ParseError as exc:
        raise CaptureError(f"{path}: its structured data is unreadable ({exc})") from None
    return CaptureInfo(path=str(path), bytes=size, dispatches=dispatches, dispatch_names=tuple(names), api=api)


class CaptureVerifier:
    """A helper process, started before RenderDoc is loaded, that verifies captures.

    Once RenderDoc is in a process it hooks process creation there, and the
    children it starts cannot even load renderdoccmd's libraries. A helper
    started beforehand is a plain process: it runs `capture_info` for us.
    """

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "gputop.core.renderdoc", "--verifier"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )

    def verify(self, path: Path) -> CaptureInfo:
        process = self._process
        if process.poll() is not None or process.stdin is None or process.stdout is None:
            raise CaptureError("the capture verifier is not running")
        process.stdin.write(str(path) + "\n")
        process.stdin.flush()
        line = process.stdout.readline()
        if not line:
            raise CaptureError("the capture verifier stopped")
        data = json.loads(line)
        if "error" in data:
            raise CaptureError(data["error"])
        data["dispatch_names"] = tuple(data["dispatch_names"])
        data.pop("gpu_durations_us", None)
        return CaptureInfo(**data)

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()


def _verifier_main() -> None:
    from gputop.core.records import to_json

    for line in sys.stdin:
        try:
            print(json.dumps(to_json(capture_info(Path(line.strip())))), flush=True)
        except GputopError as exc:
            print(json.dumps({"error": exc.message}), flush=True)
        except Exception as exc:  # keep serving: one bad file must not kill the helper
            print(json.dumps({"error": f"{line.strip()}: {exc}"}), flush=True)


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "--probe":
    _probe_main(int(sys.argv[2]))
elif __name__ == "__main__" and len(sys.argv) == 2 and sys.argv[1] == "--verifier":
    _verifier_main()
