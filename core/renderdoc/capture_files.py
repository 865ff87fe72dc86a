"""Reading RenderDoc captures: what each holds, and per-dispatch GPU times where it can be replayed.

A capture is read in another process, always: opening one in the process that
captured it crashes, RenderDoc's Python module is built for one Python only
(Debian's for 3.11), and a replay can hang in a driver. So this module finds
an interpreter that imports `renderdoc` (the one configured, this one, or
Debian's python3.11), runs `rdc_reader.py` under it with deadlines, and kills
it when one passes: the structure (dispatches, entry points, workgroup
counts, bound buffers) still counts when only the replay is lost. Where no
interpreter imports the module, `renderdoccmd convert` stands in, with one
line saying what is missing. `CaptureVerifier` is a helper process for a
process that has RenderDoc loaded, whose own children cannot be trusted.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from gputop.core.errors import CaptureError, GputopError
from gputop.core.files import require_file
from gputop.core.processes import child_options, last_line, signal_name
from gputop.core.records.base import to_json
from gputop.core.records.captures import BoundBuffer, CaptureDispatch, CaptureInfo, CaptureReplay

__all__ = [
    "CaptureVerifier",
    "ModulePython",
    "capture_info",
    "capture_info_from_json",
    "find_module_python",
    "renderdoc_env",
]

READER = Path(__file__).with_name("rdc_reader.py")
DEBIAN_MODULE_DIR = "/usr/lib/python3/dist-packages"
DEBIAN_PYTHON = "/usr/bin/python3.11"
MODULE_BUILT_FOR = (3, 11)  # the Python Debian bookworm built python3-renderdoc for
PROBE_TIMEOUT_S = 30.0
STRUCTURE_TIMEOUT_S = 300.0  # as long as renderdoccmd was given: a large model's capture is hundreds of MB
REPLAY_TIMEOUT_S = 120.0
REPLAY_PASSES = 5

_found: dict[tuple[str, ...], tuple[ModulePython | None, str]] = {}


@dataclass(frozen=True)
class ModulePython:
    """An interpreter that imports RenderDoc's module, with the folders it needs on its path."""

    python: str
    module_dirs: tuple[str, ...]
    renderdoc: str  # RenderDoc's version string
    version: str  # the interpreter's


def renderdoc_env() -> dict[str, str]:
    """The environment for RenderDoc's tools and module: a private install's library folders first."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ENABLE_VULKAN_RENDERDOC_CAPTURE")}
    private = os.environ.get("GPUTOP_RENDERDOC_LIB")
    if private:
        folder = Path(private).resolve().parent
        extra = [str(folder), str(folder / "x86_64-linux-gnu"), str(folder.parent.parent / "lib" / "x86_64-linux-gnu")]
        env["LD_LIBRARY_PATH"] = os.pathsep.join([*extra, env.get("LD_LIBRARY_PATH", "")]).rstrip(os.pathsep)
    return env


def _private_root() -> Path | None:
    """The folder a private RenderDoc was unpacked into (GPUTOP_RENDERDOC_LIB=ROOT/usr/lib/librenderdoc.so)."""
    private = os.environ.get("GPUTOP_RENDERDOC_LIB")
    if not private:
        return None
    lib = Path(private).resolve().parent
    return lib.parent.parent if lib.name == "lib" and lib.parent.name == "usr" else None


def _candidates() -> tuple[list[str], list[str]]:
    """Interpreters to try, in order, and the folders that may hold the module."""
    configured = os.environ.get("GPUTOP_RENDERDOC_PYTHON")
    dirs_set = os.environ.get("GPUTOP_RENDERDOC_PYTHONPATH")
    root = _private_root()
    if dirs_set is not None:
        dirs = [d for d in dirs_set.split(os.pathsep) if d]
    else:
        dirs = [str(root / "usr/lib/python3/dist-packages")] if root else []
        dirs.append(DEBIAN_MODULE_DIR)
    if configured:
        return [configured], dirs
    # The Python the module was built for first; this one otherwise, since under another Python the
    # module may import and still abort (3.13 does; 3.10 and 3.12 were seen to work).
    built_for = sys.version_info[:2] == MODULE_BUILT_FOR
    pythons = [sys.executable] if built_for else []
    if root is not None:
        pythons.append(str(root / "usr/bin/python3.11"))
    pythons.append(DEBIAN_PYTHON)
    on_path = shutil.which("python3.11")
    if on_path:
        pythons.append(on_path)
    if not built_for:
        pythons.append(sys.executable)
    return list(dict.fromkeys(pythons)), list(dict.fromkeys(dirs))


def find_module_python() -> tuple[ModulePython | None, str]:
    """The first interpreter that imports RenderDoc's module, or None and one line saying why none does.

    Each candidate is asked in a child process (a wrong Python may crash on the
    module); the answer is remembered for this process and configuration.
    """
    pythons, dirs = _candidates()
    key = (*pythons, "|", *dirs, os.environ.get("GPUTOP_RENDERDOC_LIB", ""))
    if key in _found:
        return _found[key]
    tried = []
    for python in pythons:
        if not (Path(python).exists() or shutil.which(python)):
            tried.append(f"{python} (absent)")
            continue
        args = [python, "-I", str(READER), "--probe", *(f"--module-dir={d}" for d in dirs)]
        try:
            proc = subprocess.run(
                args, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, env=renderdoc_env(), **child_options()
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            tried.append(f"{python} ({type(exc).__name__})")
            continue
        record = _last_record(proc.stdout)
        if record.get("kind") == "probe":
            found = ModulePython(python, tuple(dirs), str(record["renderdoc"]), str(record["python"]))
            _found[key] = (found, "")
            return _found[key]
        last = last_line(proc.stderr)
        why = record.get("message") or (_exit_text(proc.returncode) + (f": {last}" if last else ""))
        version = f"Python {record['python']}: " if record.get("python") else ""
        tried.append(f"{python} ({version}{why})")
    _found[key] = (None, "; ".join(tried))
    return _found[key]


def _record_of(line: str) -> dict[str, Any] | None:
    """The JSON object on one line of the helper's output, or None (a log line, a torn line)."""
    if not line.startswith("{"):
        return None
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _last_record(text: str) -> dict[str, Any]:
    for line in reversed(text.splitlines()):
        if (record := _record_of(line)) is not None:
            return record
    return {}


def _check_file(path: Path) -> int:
    size = require_file(path, allow_empty=True)
    with open(path, "rb") as handle:
        magic = handle.read(4)
    if size < 64 or magic != b"RDOC":
        raise CaptureError(f"{path}: not a RenderDoc capture (.rdc)")
    return size


def capture_info(
    path: Path,
    *,
    replay: bool = False,
    passes: int = REPLAY_PASSES,
    timeout: float = STRUCTURE_TIMEOUT_S,
    replay_timeout: float = REPLAY_TIMEOUT_S,
) -> CaptureInfo:
    """What the capture at `path` holds and, with `replay`, its dispatches' GPU times where it replays here."""
    size = _check_file(path)
    found, why = find_module_python()
    if found is None:
        note = (
            f"RenderDoc's Python module works under none of {why}: read with renderdoccmd "
            "(dispatch names and count only: no workgroups, buffers or replay)"
        )
        info = _renderdoccmd_info(path, size, timeout)
        missing = CaptureReplay(None, False, f"no working renderdoc Python module here ({why})") if replay else None
        return replace(info, reader_note=note, replay=missing)
    return _module_info(found, path, size, replay=replay, passes=passes, timeout=timeout, replay_timeout=replay_timeout)


class _HelperRun:
    """The reader script in its own process group, its JSON lines read with deadlines."""

    def __init__(self, args: list[str]) -> None:
        self._stderr = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (lives as long as the process; finish() closes it)
        self.process = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            stdin=subprocess.DEVNULL,
            text=True,
            env=renderdoc_env(),
            start_new_session=True,  # so a hung replay is killed with anything it started
            **child_options(),
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(self.process.stdout,), daemon=True).start()

    def _pump(self, stream: IO[str] | None) -> None:
        if stream is not None:
            for line in stream:
                self._lines.put(line)
        self._lines.put(None)

    def next_record(self, timeout: float) -> dict[str, Any] | None:
        """The next JSON record; None at the end of output or when `timeout` passes (then it is killed)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                line = self._lines.get(timeout=max(left, 0.0)) if left > 0 else self._lines.get_nowait()
            except queue.Empty:
                self.kill()
                return None
            if line is None:
                return None
            if (record := _record_of(line)) is not None:
                return record

    def __enter__(self) -> _HelperRun:
        return self

    def __exit__(self, *exc: object) -> None:
        # However the caller leaves (an error, Ctrl-C), nothing it started outlives it: the helper
        # sits in its own session, out of reach of the terminal's signals.
        self.kill()
        if not self._stderr.closed:
            self._stderr.close()

    def kill(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)

    def finish(self) -> tuple[int, str]:
        """Its exit status and the last line it wrote to stderr."""
        try:
            code = self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.process.wait()
        self._stderr.seek(0)
        last = last_line(self._stderr.read())
        self._stderr.close()
        return code, last


def _exit_text(code: int) -> str:
    name = signal_name(code)
    return f"killed by {name}" if name is not None else f"exit {code}"


def _module_info(
    found: ModulePython,
    path: Path,
    size: int,
    *,
    replay: bool,
    passes: int,
    timeout: float,
    replay_timeout: float,
) -> CaptureInfo:
    args = [found.python, "-I", str(READER), *(f"--module-dir={d}" for d in found.module_dirs)]
    args.append(f"--deadline={timeout + (replay_timeout if replay else 0) + 10:g}")
    if replay:
        args += ["--replay", f"--passes={max(1, passes)}"]
    with _HelperRun([*args, str(path)]) as run:
        structure = run.next_record(timeout)
        wanted = replay and structure is not None and structure.get("kind") == "structure"
        replayed = run.next_record(replay_timeout) if wanted else None
        code, stderr_line = run.finish()
    if structure is None or structure.get("kind") != "structure":
        if structure is not None and structure.get("kind") == "error":
            raise CaptureError(f"{path}: {structure.get('message')}")
        # The module crashed or hung on this file: renderdoccmd may still read it, or say why not.
        what = f"did not finish reading it in {timeout:g} s" if code == -signal.SIGKILL else _exit_text(code)
        info = _renderdoccmd_info(path, size, timeout)
        detail = f"{what}: {stderr_line}" if stderr_line else what
        note = f"RenderDoc's Python module failed on it ({detail}): read with renderdoccmd"
        failed = CaptureReplay(None, False, f"not replayed: the module failed on it ({what})") if replay else None
        return replace(info, reader_note=note, replay=failed)
    dispatches = tuple(_dispatch_from_json(d) for d in structure.get("dispatch_list", []))
    replay_info: CaptureReplay | None = None
    if replay:
        replay_info, dispatches = _merge_replay(replayed, dispatches, code, replay_timeout)
    names = tuple(dict.fromkeys(d.name for d in dispatches))
    timed = tuple(d.gpu_duration_us for d in dispatches if d.gpu_duration_us is not None)
    return CaptureInfo(
        path=str(path),
        bytes=size,
        dispatches=len(dispatches),
        dispatch_names=names,
        api=str(structure.get("api") or "Vulkan"),
        gpu_durations_us=timed if replay_info is not None and replay_info.ok else (),
        dispatch_list=dispatches,
        actions=tuple(str(a) for a in structure.get("actions", [])),
        replay=replay_info,
        reader=str(structure.get("reader") or f"renderdoc {found.renderdoc} module ({found.python})"),
        captured_on=structure.get("captured_on"),
    )


def _merge_replay(
    record: dict[str, Any] | None, dispatches: tuple[CaptureDispatch, ...], code: int, replay_timeout: float
) -> tuple[CaptureReplay, tuple[CaptureDispatch, ...]]:
    if record is None or record.get("kind") != "replay":
        if code == -signal.SIGKILL:
            waited = f"{replay_timeout:g} s"
            reason = f"the replay did not finish in {waited} and was killed (a hang in the driver or RenderDoc)"
        else:
            reason = f"the replay crashed ({_exit_text(code)})"
        return CaptureReplay(None, False, reason), dispatches
    timed = {int(d["index"]): d for d in record.get("dispatches", [])}
    merged = []
    for dispatch in dispatches:
        measured = timed.get(dispatch.index)
        if measured is None:
            merged.append(dispatch)
            continue
        counts = measured.get("workgroup_count")
        merged.append(
            replace(
                dispatch,
                event_id=measured.get("event_id"),
                workgroup_count=tuple(counts) if counts else dispatch.workgroup_count,
                gpu_duration_us=measured.get("gpu_duration_us"),
                gpu_duration_us_min=measured.get("gpu_duration_us_min"),
            )
        )
    replay = CaptureReplay(
        device=record.get("device"),
        ok=bool(record.get("ok")),
        reason=str(record.get("reason", "")),
        passes=int(record.get("passes", 0)),
        seconds=record.get("seconds"),
    )
    return replay, tuple(merged)


def _dispatch_from_json(data: dict[str, Any]) -> CaptureDispatch:
    counts = data.get("workgroup_count")
    return CaptureDispatch(
        index=int(data["index"]),
        name=str(data["name"]),
        workgroup_count=tuple(int(c) for c in counts) if counts is not None else None,
        buffers=tuple(BoundBuffer(**buffer) for buffer in data.get("buffers", [])),
        pipeline=str(data.get("pipeline", "")),
        debug_name=data.get("debug_name"),
        chunk=int(data.get("chunk", 0)),
        event_id=data.get("event_id"),
        gpu_duration_us=data.get("gpu_duration_us"),
        gpu_duration_us_min=data.get("gpu_duration_us_min"),
    )


def capture_info_from_json(data: dict[str, Any]) -> CaptureInfo:
    """A `CaptureInfo` back from what `to_json` made of it (the verifier's answers)."""
    fields = dict(data)
    fields["dispatch_names"] = tuple(fields.get("dispatch_names", ()))
    fields["gpu_durations_us"] = tuple(fields.get("gpu_durations_us", ()))
    fields["dispatch_list"] = tuple(_dispatch_from_json(d) for d in fields.get("dispatch_list", ()))
    fields["actions"] = tuple(fields.get("actions", ()))
    replay = fields.get("replay")
    fields["replay"] = CaptureReplay(**replay) if replay is not None else None
    return CaptureInfo(**fields)


def _renderdoccmd_info(path: Path, size: int, timeout: float) -> CaptureInfo:
    """Verify a capture with `renderdoccmd convert` and count its dispatches."""
    tool = shutil.which("renderdoccmd")
    if tool is None:
        raise CaptureError(
            "reading captures needs RenderDoc's Python module (apt-get install python3-renderdoc) "
            "or renderdoccmd (apt-get install renderdoccmd)"
        )
    with tempfile.TemporaryDirectory(prefix="gputop-rdc-") as tmp:
        xml_path = Path(tmp) / "capture.xml"
        command = [tool, "convert", "-f", str(path), "-o", str(xml_path), "-c", "xml"]
        try:
            proc = subprocess.run(
                command, capture_output=True, text=True, timeout=timeout, env=renderdoc_env(), **child_options()
            )
        except subprocess.TimeoutExpired:
            raise CaptureError(f"{path}: renderdoccmd did not finish reading it in {timeout:g} s") from None
        if proc.returncode != 0 or not xml_path.exists():
            detail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
            why = detail[-1] if detail else "corrupt or truncated"
            if "shared libraries" in why:
                why += f" (LD_LIBRARY_PATH={renderdoc_env().get('LD_LIBRARY_PATH', '')})"
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
    """A helper process, started before RenderDoc is loaded, that reads captures.

    Once RenderDoc is in a process it hooks process creation there, and the
    children it starts cannot even load renderdoccmd's libraries. A helper
    started beforehand is a plain process: it runs `capture_info` for us.
    """

    def __init__(self) -> None:
        # No parent-death signal here: it would follow the thread that starts the helper, which may end
        # first. The helper reads requests from its stdin, so it leaves when gputop goes (end of file).
        self._process = subprocess.Popen(
            [sys.executable, "-m", "gputop.core.renderdoc.capture_files", "--verifier"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self._lock = threading.Lock()

    def verify(self, path: Path, *, replay: bool = False) -> CaptureInfo:
        """`capture_info(path, replay=replay)`, in the helper (blocking; its own deadlines bound it)."""
        with self._lock:
            process = self._process
            if process.poll() is not None or process.stdin is None or process.stdout is None:
                raise CaptureError("the capture verifier is not running")
            process.stdin.write(json.dumps({"path": str(path), "replay": replay}) + "\n")
            process.stdin.flush()
            line = process.stdout.readline()
        if not line:
            raise CaptureError("the capture verifier stopped")
        data = json.loads(line)
        if "error" in data:
            raise CaptureError(data["error"])
        return capture_info_from_json(data)

    def close(self) -> None:
        if self._process.poll() is None:
            if self._process.stdin is not None:
                self._process.stdin.close()  # the helper ends at the end of its input
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:  # mid-read: SIGTERM lets it kill its own reader first
                self._process.terminate()
                try:
                    self._process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()


def _verifier_main() -> None:
    def on_sigterm(_signum: int, _frame: Any) -> None:
        raise SystemExit(0)  # unwinds through the reader's context, which kills it

    signal.signal(signal.SIGTERM, on_sigterm)
    for line in sys.stdin:
        request = json.loads(line)
        path = str(request.get("path", ""))
        try:
            info = capture_info(Path(path), replay=bool(request.get("replay")))
            print(json.dumps(to_json(info)), flush=True)
        except GputopError as exc:
            print(json.dumps({"error": exc.message}), flush=True)
        except Exception as exc:  # keep serving: one bad file must not kill the helper
            print(json.dumps({"error": f"{path}: {exc}"}), flush=True)


if __name__ == "__main__" and sys.argv[1:] == ["--verifier"]:
    _verifier_main()
