"""A watched program's own calls profiled in its own process: the agent's `profile` request (CUPTI, CUDA kernels).

The real agent runs in a real program (`tests/programs/load_and_call.py`, loaded
and called by a small driver written here, which waits after loading until the
engine has had its answer) in an environment without gputop; a small Unix socket
server stands in for gputop's engine and sends the request. Without a GPU the
refusals are real (no CUDA device; another Python; `cupti` not importable), and
the profile's whole path on the program's thread runs against a stand-in `cupti`
module that records what the agent asked of it: where the real one is (a GPU
machine), `test_cuda_kernels_of_the_next_calls_arrive_from_cupti` runs the real thing.
Every test also holds the program's own output and exit code against an unwatched run.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from program_env import PROGRAMS, watched_env

CHECKSUM = -22.717041015625  # mlp.main's output summed (tests/test_program.py): exact in f32 on any device
RUN_TIMEOUT_S = 180

# The user's program, driven: load_and_call.py's own loading and calls, with a pause after loading until the
# engine has answered (GO_FILE), so that the request is handled before the calls it is about. PRETEND_CUDA marks
# the agent as having seen a CUDA device (white-box: the refusals behind that check, and the stand-in CUPTI,
# are reachable without a GPU). SIDE_FILE receives what the test reads beside the program's own output.
DRIVER = """
import json, os, sys, time
sys.path.insert(0, {programs!r})
import load_and_call as app

if os.environ.get("PRETEND_CUDA"):
    import gputop_agent
    gputop_agent._agent.device_drivers.add("cuda")
args = app.parse("load_and_call, paused after loading")
loaded = app.load(args.vmfb, args.irpa, args.style, args.device)
deadline = time.monotonic() + 60
while not os.path.exists(os.environ["GO_FILE"]) and time.monotonic() < deadline:
    time.sleep(0.01)
times = app.call_many(loaded, args.n, sleep_s=float(os.environ.get("SLEEP_MS", "0")) / 1000)
print(json.dumps(app.report(loaded, times, style=args.style)), flush=True)
with open(os.environ["SIDE_FILE"], "w") as side:
    json.dump({{"sys_path": sys.path, "cupti_imported": "cupti" in sys.modules}}, side)
"""

# A stand-in for cupti-python's `cupti.cupti`: the activity API calls the agent makes, each written to
# FAKE_CUPTI_LOG; FAKE_CUPTI_FAIL names a step that raises (enable, timestamp, flush). Each pair of timestamps
# read while recording is a call's window: the flush hands over two kernels inside each window, and a memcpy.
FAKE_CUPTI = """
import enum, os, time

class ActivityKind(enum.IntEnum):
    MEMCPY = 1
    CONCURRENT_KERNEL = 10

class _Record:
    def __init__(self, kind, name, start, end, correlation_id):
        self.kind, self.name, self.start, self.end = kind, name, start, end
        self.grid_x, self.grid_y, self.grid_z = 16, 2, 1
        self.block_x, self.block_y, self.block_z = 64, 1, 1
        self.device_id, self.stream_id, self.correlation_id = 0, 7, correlation_id

_FAIL = os.environ.get("FAKE_CUPTI_FAIL", "")
_callbacks = []
_enabled = set()
_stamps = []

def _log(*words):
    with open(os.environ["FAKE_CUPTI_LOG"], "a") as log:
        log.write(" ".join(str(w) for w in words) + "\\n")

def activity_register_callbacks(requested, completed):
    _log("register")
    _callbacks[:] = [requested, completed]

def activity_enable(kind):
    _log("enable", int(kind))
    if _FAIL == "enable":
        raise RuntimeError("CUPTI_ERROR_NOT_INITIALIZED: stand-in failure")
    _enabled.add(int(kind))
    _stamps.clear()

def activity_disable(kind):
    _log("disable", int(kind))
    _enabled.discard(int(kind))

def get_timestamp():
    now = time.perf_counter_ns()
    if _enabled:
        if _FAIL == "timestamp" and len(_stamps) >= 3:
            raise RuntimeError("CUPTI_ERROR_UNKNOWN: stand-in failure")
        _stamps.append(now)
    return now

def activity_flush_all(flag):
    _log("flush", flag, len(_stamps) // 2)
    if _FAIL == "flush":
        raise RuntimeError("CUPTI_ERROR_INVALID_OPERATION: stand-in failure")
    size, most = _callbacks[0]()
    records = []
    for index, (start, end) in enumerate(zip(_stamps[0::2], _stamps[1::2])):
        third = max(1, (end - start) // 3)
        name = "main_dispatch_0_matmul_32x512x512_f32"
        records.append(_Record(ActivityKind.CONCURRENT_KERNEL, name, start + 1, start + third, 2 * index))
        records.append(_Record(ActivityKind.CONCURRENT_KERNEL, name, start + third + 1, end - 1, 2 * index + 1))
    if _stamps:
        records.append(_Record(ActivityKind.MEMCPY, "a copy", _stamps[0], _stamps[0] + 1, -1))
    _stamps.clear()
    _log("buffer", size, most, len(records))
    _callbacks[1](records)
"""


class Engine:
    """gputop's end of the socket, as small as a test needs: every event kept, requests sent back on cue."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "agent.sock"
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(self.path))
        self.server.listen(4)
        self.server.settimeout(RUN_TIMEOUT_S)
        self.events: list[dict[str, Any]] = []
        self.changed = threading.Condition()
        self.conn: socket.socket | None = None
        self.on_event: Callable[[dict[str, Any]], None] = lambda event: None
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.server.accept()
        except OSError:
            return
        self.conn = conn
        buffer = b""
        with conn:
            while True:
                try:
                    data = conn.recv(1 << 20)
                except OSError:
                    return
                if not data:
                    return
                buffer += data
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    event = json.loads(line)
                    with self.changed:
                        self.events.append(event)
                        self.changed.notify_all()
                    self.on_event(event)

    def send(self, request: dict[str, Any]) -> None:
        assert self.conn is not None
        self.conn.sendall(json.dumps(request).encode() + b"\n")

    def of_kind(self, *kinds: str) -> list[dict[str, Any]]:
        with self.changed:
            return [e for e in self.events if e.get("kind") in kinds]

    def close(self) -> None:
        self.server.close()
        self.thread.join(timeout=10)


class Outcome:
    """One driven run: the program's process, what the engine received, and what the test reads beside them."""

    def __init__(self, proc: subprocess.CompletedProcess[str], engine: Engine | None, folder: Path) -> None:
        self.proc = proc
        self.events = engine.events if engine is not None else []
        side = folder / "side.json"
        self.side = json.loads(side.read_text()) if side.exists() else None
        log = folder / "cupti.log"
        self.cupti_log = log.read_text().splitlines() if log.exists() else []

    def own(self) -> dict[str, Any]:
        """The program's own JSON line: its only output on stdout."""
        lines = self.proc.stdout.splitlines()
        assert len(lines) == 1, (self.proc.stdout, self.proc.stderr)
        return json.loads(lines[0])

    def of_kind(self, *kinds: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("kind") in kinds]

    def answers(self) -> list[dict[str, Any]]:
        return self.of_kind("kernels", "profile_refused")

    def calls_recorded(self) -> int:
        return sum(len(e["calls"]) for e in self.of_kind("calls"))


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A folder with a short path: a Unix socket's path must fit in 108 bytes."""
    folder = Path(tempfile.mkdtemp(prefix="gputop-prof-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def fake_cupti(folder: Path, version: str = "99.1.0") -> Path:
    """A folder as gputop's environment would be for the agent: `cupti` (the stand-in) and its dist-info."""
    (folder / "cupti").mkdir(parents=True)
    (folder / "cupti" / "__init__.py").write_text("")
    (folder / "cupti" / "cupti.py").write_text(FAKE_CUPTI)
    (folder / f"cupti_python-{version}.dist-info").mkdir()
    return folder


def drive(
    python: Path | str,
    assets: tuple[Path, Path],
    folder: Path,
    requests: list[dict[str, Any]] | None,
    calls: int = 40,
    env: dict[str, str] | None = None,
    react: Callable[[Engine, dict[str, Any]], None] | None = None,
    device: str = "local-task",
) -> Outcome:
    """Run the driven program; with `requests`, watched: they go to the agent once the program has made its device.

    The engine sends `requests` then a ping when the device phase comes; the pong
    (the agent answers in order, so every request has been handled) lets the
    program go on to its calls. `react` sees every later event, on the engine's thread.
    """
    vmfb, irpa = assets
    driver = folder / "app.py"
    driver.write_text(DRIVER.format(programs=str(PROGRAMS)))
    go = folder / "go"
    extra = {"GO_FILE": str(go), "SIDE_FILE": str(folder / "side.json"), "FAKE_CUPTI_LOG": str(folder / "cupti.log")}
    extra.update(env or {})
    engine: Engine | None = None
    if requests is None:
        go.touch()
        run_env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUTOP_", "PYTHON"))}
        run_env.update(extra)
    else:
        engine = Engine(folder)
        run_env = watched_env(engine.path, **extra)
        started = [False]

        def on_event(event: dict[str, Any]) -> None:
            assert engine is not None
            if event.get("kind") == "phase" and event.get("name") == "device" and not started[0]:
                started[0] = True
                for request in requests:
                    engine.send(request)
                engine.send({"op": "ping"})
            elif event.get("kind") == "pong":
                go.touch()
            elif react is not None:
                react(engine, event)

        engine.on_event = on_event
    command = [str(python), str(driver), str(vmfb), str(irpa), str(calls), "--device", device]
    try:
        proc = subprocess.run(
            command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=run_env, stdin=subprocess.DEVNULL
        )
    finally:
        if engine is not None:
            engine.close()
    return Outcome(proc, engine, folder)


def program_python_version(python: Path | str) -> str:
    return subprocess.run(
        [str(python), "-c", "import sys; print('{}.{}'.format(*sys.version_info[:2]))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def profile_request(calls: int, paths: list[str], python: str) -> dict[str, Any]:
    """The request as gputop's engine sends it (core/program/watched.py)."""
    return {"op": "profile", "calls": calls, "level": "default", "cupti_paths": paths, "python": python}


@pytest.fixture(scope="module")
def unwatched(
    program_python: Path, program_assets: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The driven program's own output without gputop: what every watched run must print too."""
    outcome = drive(program_python, program_assets, tmp_path_factory.mktemp("unwatched"), None)
    assert outcome.proc.returncode == 0, outcome.proc.stderr
    own = outcome.own()
    assert own["checksum"] == pytest.approx(CHECKSUM)
    return own


def assert_program_untouched(outcome: Outcome, unwatched: dict[str, Any], calls: int = 40) -> None:
    """Same exit code, one stdout line with the same figures, no traceback, every call counted by the watcher."""
    assert outcome.proc.returncode == 0, outcome.proc.stderr
    assert "Traceback" not in outcome.proc.stderr, outcome.proc.stderr
    own = outcome.own()
    assert own["calls"] == calls
    for key in ("function", "checksum", "params_bytes", "style"):
        assert own[key] == unwatched[key], (key, own, unwatched)
    assert outcome.calls_recorded() == calls
    assert outcome.of_kind("bye"), [e.get("kind") for e in outcome.events]
    assert outcome.side is not None


# -- refusals: real, without a GPU -----------------------------------------------------------------------


def test_a_program_without_a_cuda_device_is_refused_at_once(
    program_python: Path, program_assets: tuple[Path, Path], short_dir: Path, unwatched: dict[str, Any]
) -> None:
    python = program_python_version(program_python)
    site = fake_cupti(short_dir / "site")
    outcome = drive(program_python, program_assets, short_dir, [profile_request(5, [str(site)], python)])
    assert outcome.answers() == [
        {"kind": "profile_refused", "reason": "CUPTI times CUDA kernels; this program's devices are local-task"}
    ]
    assert_program_untouched(outcome, unwatched)
    # refused before anything was imported: gputop's folder never reached the program
    assert outcome.side is not None and not outcome.side["cupti_imported"] and not outcome.cupti_log


def test_a_program_on_another_python_is_told_what_to_run_instead(
    program_python: Path, program_assets: tuple[Path, Path], short_dir: Path, unwatched: dict[str, Any]
) -> None:
    ours = program_python_version(program_python)
    paths = [str(fake_cupti(short_dir / "site"))]
    outcome = drive(
        program_python, program_assets, short_dir, [profile_request(5, paths, "3.99")], env={"PRETEND_CUDA": "1"}
    )
    [answer] = outcome.answers()
    assert answer["kind"] == "profile_refused"
    reason = answer["reason"]
    assert reason.startswith(
        f"CUPTI's Python package is gputop's, built for Python 3.99; this program runs {ours}: "
        "profile it with nsys profile python"
    ), reason
    assert f"{short_dir / 'app.py'} " in reason and reason.endswith(", or run gputop on its .vmfb"), reason
    assert "\n" not in reason
    assert_program_untouched(outcome, unwatched)
    assert outcome.side is not None and not outcome.side["cupti_imported"]


def test_cupti_that_cannot_be_imported_is_refused_with_the_import_error(
    program_python: Path, program_assets: tuple[Path, Path], short_dir: Path, unwatched: dict[str, Any]
) -> None:
    python = program_python_version(program_python)
    empty = short_dir / "empty-site"
    empty.mkdir()
    outcome = drive(
        program_python,
        program_assets,
        short_dir,
        [profile_request(5, [str(empty)], python), profile_request(5, [], python)],
        env={"PRETEND_CUDA": "1"},
    )
    assert [a["reason"] for a in outcome.answers()] == [
        f"CUPTI's Python package (cupti) cannot be imported from {empty}: ModuleNotFoundError: No module named 'cupti'",
        "gputop named no folder to import CUPTI's Python package (cupti) from",
    ]
    assert_program_untouched(outcome, unwatched)
    assert outcome.side is not None and str(empty) not in outcome.side["sys_path"]  # put back after the import


# -- the profile's path, against the stand-in CUPTI -----------------------------------------------------


def test_the_next_calls_are_timed_on_cuptis_clock_and_their_kernels_sent(
    program_python: Path, program_assets: tuple[Path, Path], short_dir: Path, unwatched: dict[str, Any]
) -> None:
    python = program_python_version(program_python)
    site = fake_cupti(short_dir / "site")
    request = profile_request(5, [str(site)], python)
    second = profile_request(3, [str(site)], python)
    asked_again = threading.Event()

    def again(engine: Engine, event: dict[str, Any]) -> None:
        if event.get("kind") == "kernels" and not asked_again.is_set():
            asked_again.set()
            engine.send(second)  # CUPTI is loaded and its callbacks registered already: both are reused

    outcome = drive(
        program_python,
        program_assets,
        short_dir,
        [request, request],
        calls=100,
        env={"PRETEND_CUDA": "1", "SLEEP_MS": "20"},
        react=again,
    )
    assert_program_untouched(outcome, unwatched, calls=100)
    answers = outcome.answers()
    assert answers[0] == {"kind": "profile_refused", "reason": "a profile of this program's calls is already under way"}
    first, then = answers[1:]
    for kernels, calls in ((first, 5), (then, 3)):
        assert kernels["kind"] == "kernels" and kernels["calls"] == kernels["asked"] == calls
        assert kernels["source"] == "CUPTI 99.1.0" and kernels["level"] == "default"
        windows = kernels["windows"]
        assert len(windows) == calls
        assert all(start < end for start, end in windows)
        assert all(a[1] < b[0] for a, b in itertools.pairwise(windows))  # one call after another
        # the kernels only (the memcpy is left out), each inside its call's window
        records = kernels["records"]
        assert len(records) == 2 * calls
        for index, row in enumerate(records):
            name, start, end, *sizes, device, stream, correlation = row
            assert name == "main_dispatch_0_matmul_32x512x512_f32"
            assert sizes == [16, 2, 1, 64, 1, 1] and (device, stream, correlation) == (0, 7, index)
            window = windows[index // 2]
            assert window[0] < start <= end < window[1]
    assert [line.split()[0] for line in outcome.cupti_log] == [
        *("register", "enable", "flush", "buffer", "disable"),  # registered once, for both profiles
        *("enable", "flush", "buffer", "disable"),
    ]
    assert outcome.cupti_log[2] == "flush 1 5" and outcome.cupti_log[3] == f"buffer {8 * 1024 * 1024} 0 11"
    # the answer follows the calls it is about: all five went out before it
    kinds = [e.get("kind") for e in outcome.events]
    before = sum(len(e["calls"]) for e in outcome.events[: kinds.index("kernels")] if e.get("kind") == "calls")
    assert before >= 5
    assert outcome.side is not None and str(site) not in outcome.side["sys_path"]


@pytest.mark.parametrize(
    ("step", "reason"),
    [
        ("enable", "CUPTI would not record kernels: RuntimeError: CUPTI_ERROR_NOT_INITIALIZED: stand-in failure"),
        ("timestamp", "CUPTI failed during the profiled calls: RuntimeError: CUPTI_ERROR_UNKNOWN: stand-in failure"),
        (
            "flush",
            "CUPTI could not hand over its records: RuntimeError: CUPTI_ERROR_INVALID_OPERATION: stand-in failure",
        ),
    ],
)
def test_a_cupti_step_that_fails_is_one_line_and_the_program_runs_on(
    program_python: Path,
    program_assets: tuple[Path, Path],
    short_dir: Path,
    unwatched: dict[str, Any],
    step: str,
    reason: str,
) -> None:
    python = program_python_version(program_python)
    site = fake_cupti(short_dir / "site")
    outcome = drive(
        program_python,
        program_assets,
        short_dir,
        [profile_request(5, [str(site)], python)],
        env={"PRETEND_CUDA": "1", "FAKE_CUPTI_FAIL": step},
    )
    assert outcome.answers() == [{"kind": "profile_refused", "reason": reason}]
    assert_program_untouched(outcome, unwatched)
    assert outcome.cupti_log[-1] == "disable 10"  # recording is off again, whichever step failed


def test_a_program_that_ends_during_a_profile_sends_the_calls_it_made(
    program_python: Path, program_assets: tuple[Path, Path], short_dir: Path, unwatched: dict[str, Any]
) -> None:
    python = program_python_version(program_python)
    site = fake_cupti(short_dir / "site")
    outcome = drive(
        program_python,
        program_assets,
        short_dir,
        [profile_request(1000, [str(site)], python)],
        calls=7,
        env={"PRETEND_CUDA": "1"},
    )
    assert_program_untouched(outcome, unwatched, calls=7)
    [kernels] = outcome.answers()
    assert kernels["kind"] == "kernels" and kernels["calls"] == 7 and kernels["asked"] == 1000
    assert len(kernels["windows"]) == 7 and len(kernels["records"]) == 14
    kinds = [e.get("kind") for e in outcome.events]
    assert kinds.index("kernels") < kinds.index("bye")
    assert outcome.cupti_log[-1] == "disable 10"


def test_a_profile_armed_when_the_program_ends_is_refused(
    program_python: Path, program_assets: tuple[Path, Path], short_dir: Path
) -> None:
    python = program_python_version(program_python)
    site = fake_cupti(short_dir / "site")
    outcome = drive(
        program_python,
        program_assets,
        short_dir,
        [profile_request(5, [str(site)], python)],
        calls=0,
        env={"PRETEND_CUDA": "1"},
    )
    assert outcome.proc.returncode == 0 and outcome.own()["calls"] == 0
    assert outcome.answers() == [
        {"kind": "profile_refused", "reason": "the program ended before its calls could be profiled"}
    ]
    assert [line.split()[0] for line in outcome.cupti_log] == ["register"]  # CUPTI never recorded anything


# -- the real thing, on a GPU ---------------------------------------------------------------------------


def cuda_unavailable_reason() -> str | None:
    try:
        import iree.runtime as rt

        if "cuda" not in rt.query_available_drivers():
            return "IREE has no cuda driver here"
        if not rt.get_driver("cuda").query_available_devices():
            return "IREE's cuda driver lists no device"
    except Exception as exc:
        return f"no CUDA device: {type(exc).__name__}: {exc}"
    import importlib.util

    if importlib.util.find_spec("cupti") is None:
        return "cupti-python is not installed in gputop's environment"
    return None


def cuda_assets(folder: Path) -> tuple[Path, Path] | None:
    """The test module compiled for CUDA and its parameters: from GPUTOP_TEST_CUDA_ASSETS (the GPU machines have
    no compiler: model_cuda.vmfb and model.irpa made beforehand), else compiled here; None when neither can be."""
    ready = os.environ.get("GPUTOP_TEST_CUDA_ASSETS")
    if ready:
        vmfb, irpa = Path(ready) / "model_cuda.vmfb", Path(ready) / "model.irpa"
        return (vmfb, irpa) if vmfb.exists() and irpa.exists() else None
    sys.path.insert(0, str(PROGRAMS))
    try:
        import make_assets
    finally:
        sys.path.remove(str(PROGRAMS))
    compiler = make_assets.default_compiler()
    if shutil.which(compiler) is None and not os.path.exists(compiler):
        return None
    source = folder / "model.mlir"
    source.write_text(make_assets.MLIR)
    vmfb = folder / "model_cuda.vmfb"
    target = ["--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80"]  # sm_80 runs on H100/H200 (PLATFORM.md)
    subprocess.run([compiler, *target, str(source), "-o", str(vmfb)], check=True, capture_output=True)
    import iree.runtime as rt

    index = rt.ParameterIndex()
    for name, value in make_assets.weights().items():
        index.add_buffer(name, value.tobytes())
    index.create_archive_file(str(folder / "model.irpa"))
    return vmfb, folder / "model.irpa"


def runtime_only_folder(folder: Path) -> Path:
    """A folder with links to iree.runtime and its requirements only, from wherever this Python has them.

    The program's environment on the GPU machines: gputop's packages (cupti among
    them) are not on its path, as in a user's own environment; the agent must bring
    CUPTI in from the folders the engine names.
    """
    import iree.runtime

    site = Path(iree.runtime.__file__).resolve().parents[2]
    folder.mkdir()
    for entry in site.iterdir():
        if entry.name in (
            "iree",
            "iree_base_runtime.libs",
            "ml_dtypes",
            "numpy",
            "numpy.libs",
        ) or entry.name.startswith(("iree_base_runtime-", "ml_dtypes-", "numpy-")):
            (folder / entry.name).symlink_to(entry)
    return folder


@pytest.mark.gpu
def test_cuda_kernels_of_the_next_calls_arrive_from_cupti(short_dir: Path) -> None:
    reason = cuda_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    assets = cuda_assets(short_dir)
    if assets is None:
        pytest.skip("no CUDA module: set GPUTOP_TEST_CUDA_ASSETS (model_cuda.vmfb, model.irpa) or install iree-compile")
    from gputop.core.program.watched import cupti_paths

    paths = cupti_paths()
    python = "{}.{}".format(*sys.version_info[:2])
    runtime = runtime_only_folder(short_dir / "runtime")
    outcome = drive_with_runtime(short_dir, assets, [profile_request(10, paths, python)], runtime, calls=60)
    assert outcome.proc.returncode == 0, outcome.proc.stderr
    own = outcome.own()
    assert own["calls"] == 60 and own["checksum"] == pytest.approx(CHECKSUM), own
    assert outcome.calls_recorded() == 60
    [kernels] = outcome.answers()
    assert kernels["kind"] == "kernels", kernels
    assert kernels["calls"] == 10 and len(kernels["windows"]) == 10, kernels
    assert kernels["source"].startswith("CUPTI"), kernels["source"]
    records = kernels["records"]
    assert len(records) >= 10, records  # two matmuls a call
    first, last = kernels["windows"][0][0], kernels["windows"][-1][1]
    for name, start, end, gx, gy, gz, bx, by, bz, *_ in records:
        assert "dispatch_" in name and name.startswith("main"), name
        assert first <= start <= end <= last, (name, start, end, first, last)
        assert min(gx, gy, gz, bx, by, bz) >= 1
    print(json.dumps({k: v for k, v in kernels.items() if k != "records"} | {"records": records[:4]}))


def drive_with_runtime(
    folder: Path, assets: tuple[Path, Path], requests: list[dict[str, Any]], runtime: Path, calls: int
) -> Outcome:
    """`drive` with this Python, on whose path are gputop's inject folder (first) and `runtime` only."""
    shim = folder / "python"
    # watched_env leaves PYTHONPATH = the inject folder; the runtime's folder goes after it
    shim.write_text(f'#!/bin/sh\nPYTHONPATH="$PYTHONPATH:{runtime}" exec "{sys.executable}" -s "$@"\n')
    shim.chmod(0o755)
    return drive(shim, assets, folder, requests, calls=calls, device="cuda")
