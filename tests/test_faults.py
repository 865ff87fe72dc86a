"""Faults injected for real: a corrupt cached module, a killed gputop, poisoned sessions, a scrape flood.

Each test makes the fault happen (flipped bytes on disk, SIGKILL, SIGSTOP,
manifests that lie, half-open sockets) and checks that gputop says one line
and goes on, and that nothing it started is left behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pytest

from conftest import assert_one_line_error, fill_disk, poll, run_gputop, spawn_gputop, tmpfs
from gputop.core.module.compile import find_compiler
from gputop.core.processes import run_logged

LOCAL_FLAGS = ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu")


@pytest.fixture
def own_cache(tmp_path: Path) -> dict[str, str]:
    """A compile cache of the test's own (in its tmp_path), so flipped bytes and leftovers hurt no other test."""
    return {"GPUTOP_CACHE_DIR": str(tmp_path / "cache")}


def _cached_modules(cache: Path) -> list[Path]:
    return sorted((cache / "vmfb").glob("*.vmfb"))


# --- 3. a cached module is checked against its digest ---------------------------------------------------


def test_a_corrupt_cached_module_is_rebuilt_not_loaded(own_cache: dict[str, str]) -> None:
    cache = Path(own_cache["GPUTOP_CACHE_DIR"])
    first = run_gputop("run", "demo:mlp", "--device", "local-task", "-n", "2", "--json", "-", env=own_cache)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["compile"]["cache_hit"] is False
    [vmfb] = _cached_modules(cache)

    # 64 flipped bytes in the middle of the module: loading it crashed the process (SIGSEGV, SIGILL, SIGBUS).
    data = bytearray(vmfb.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(b ^ 0xFF for b in data[middle : middle + 64])
    vmfb.write_bytes(bytes(data))

    again = run_gputop("run", "demo:mlp", "--device", "local-task", "-n", "2", "--json", "-", env=own_cache)
    assert again.returncode == 0, (again.returncode, again.stderr)
    report = json.loads(again.stdout)
    assert report["compile"]["cache_hit"] is False
    assert report["check"]["passed"] is True
    notes = [line for line in again.stderr.splitlines() if "is corrupt" in line]
    assert len(notes) == 1, again.stderr
    assert str(vmfb) in notes[0] and "sha256 does not match" in notes[0] and "compiling it again" in notes[0]
    assert vmfb.read_bytes() != bytes(data)
    # The digest beside it, in `sha256sum -c` format.
    assert vmfb.with_suffix(".sha256").read_text().split() == [hashlib.sha256(vmfb.read_bytes()).hexdigest(), vmfb.name]

    # Rebuilt and its digest rewritten: the third run is a plain cache hit, with nothing said.
    third = run_gputop("run", "demo:mlp", "--device", "local-task", "-n", "2", "--json", "-", env=own_cache)
    assert third.returncode == 0, third.stderr
    assert json.loads(third.stdout)["compile"]["cache_hit"] is True
    assert "is corrupt" not in third.stderr


def test_a_truncated_or_undigested_cached_module_is_rebuilt(own_cache: dict[str, str]) -> None:
    cache = Path(own_cache["GPUTOP_CACHE_DIR"])
    assert run_gputop("run", "demo:mlp", "--device", "local-task", "-n", "1", env=own_cache).returncode == 0
    [vmfb] = _cached_modules(cache)
    with open(vmfb, "r+b") as handle:  # truncated, as by a full disk or a copy cut short
        handle.truncate(vmfb.stat().st_size // 3)
    proc = run_gputop("run", "demo:mlp", "--device", "local-task", "-n", "1", "--json", "-", env=own_cache)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["compile"]["cache_hit"] is False
    assert "sha256 does not match" in proc.stderr

    vmfb.with_suffix(".sha256").unlink()  # a cache written before digests were kept
    proc = run_gputop("run", "demo:mlp", "--device", "local-task", "-n", "1", "--json", "-", env=own_cache)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["compile"]["cache_hit"] is False
    assert "it has no digest" in proc.stderr


# --- 5. children die with gputop; what a killed compile leaves is removed; a stopped compiler is said ------


def _slow_module(folder: Path, layers: int = 150) -> Path:
    """MLIR that takes the compiler a while (seconds per few dozen layers): a chain of matmuls of distinct widths."""
    sizes = [16 + 8 * i for i in range(layers + 1)]
    weights = ", ".join(f"%w{i}: tensor<{sizes[i]}x{sizes[i + 1]}xf32>" for i in range(layers))
    lines = [
        f"func.func @chain(%x: tensor<8x{sizes[0]}xf32>, {weights}) -> tensor<8x{sizes[-1]}xf32> {{",
        "  %zero = arith.constant 0.0 : f32",
    ]
    previous = "%x"
    for i in range(layers):
        a, b = sizes[i], sizes[i + 1]
        lines += [
            f"  %e{i} = tensor.empty() : tensor<8x{b}xf32>",
            f"  %f{i} = linalg.fill ins(%zero : f32) outs(%e{i} : tensor<8x{b}xf32>) -> tensor<8x{b}xf32>",
            f"  %m{i} = linalg.matmul ins({previous}, %w{i} : tensor<8x{a}xf32>, tensor<{a}x{b}xf32>)"
            f" outs(%f{i} : tensor<8x{b}xf32>) -> tensor<8x{b}xf32>",
        ]
        previous = f"%m{i}"
    lines += [f"  return {previous} : tensor<8x{sizes[-1]}xf32>", "}"]
    path = folder / f"slow{layers}.mlir"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _compilers_of(pid: int) -> list[psutil.Process]:
    try:
        return [c for c in psutil.Process(pid).children(recursive=True) if "iree-compile" in c.name()]
    except psutil.NoSuchProcess:
        return []


def _gone(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE  # killed, waiting for init to reap it
    except psutil.NoSuchProcess:
        return True


def test_a_killed_gputop_takes_its_compiler_along_and_the_next_run_cleans_up(
    tmp_path: Path, own_cache: dict[str, str]
) -> None:
    vmfb_dir = Path(own_cache["GPUTOP_CACHE_DIR"]) / "vmfb"
    source = _slow_module(tmp_path)
    child = spawn_gputop("run", str(source), "--device", "local-task", "-n", "1", env=own_cache)
    compilers: list[psutil.Process] = []
    try:
        compilers = poll(lambda: _compilers_of(child.pid), timeout=60)
        # The compiler has started writing: its dump of executable sources goes into a *.partial folder.
        poll(lambda: list(vmfb_dir.glob("*.partial")), timeout=60)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
        # The compiler (at full CPU for seconds more) dies with it.
        poll(lambda: all(_gone(c) for c in compilers), timeout=5)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for compiler in compilers:  # without the parent-death signal, it would run on: end it here
            if not _gone(compiler):
                compiler.kill()
        if child.stderr is not None:
            child.stderr.close()
    left = sorted(p.name for p in vmfb_dir.glob("*.partial"))
    assert left and all(f".{child.pid}." in name for name in left), left

    # The next run's compile removes what the killed one left (its pid is gone), and only that.
    alive = vmfb_dir / f"{'0' * 32}.{os.getpid()}.1.partial"  # a compile of this live process: kept
    alive.write_bytes(b"")
    proc = run_gputop("run", "demo:mlp", "--device", "local-task", "-n", "1", env=own_cache)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in vmfb_dir.glob("*.partial")) == [alive.name]
    alive.unlink()


def test_a_stopped_compiler_is_said_to_make_no_progress(tmp_path: Path) -> None:
    source = _slow_module(tmp_path, layers=120)
    command = [find_compiler(), str(source), *LOCAL_FLAGS, "-o", str(tmp_path / "slow.vmfb")]
    said: list[float] = []
    cancel = threading.Event()
    outcome: list[BaseException] = []

    def compile_it() -> None:
        try:
            run_logged(command, tmp_path / "compile.log", cancel, what="compile", on_stall=said.append, stall_s=1.0)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=compile_it)
    worker.start()
    compiler: psutil.Process | None = None
    try:
        compiler = poll(lambda: next(iter(_compilers_of(os.getpid())), None), timeout=30)
        poll(lambda: sum(compiler.cpu_times()[:2]) > 0.2, timeout=30)  # busy compiling
        assert said == []
        compiler.send_signal(signal.SIGSTOP)
        time.sleep(3.5)
        assert said[:3] == [1.0, 2.0, 3.0][: len(said[:3])] and 2 <= len(said) <= 4, said
        compiler.send_signal(signal.SIGCONT)
    finally:
        if compiler is not None and not _gone(compiler):
            compiler.send_signal(signal.SIGCONT)
        cancel.set()
        worker.join(timeout=30)
    assert not worker.is_alive()
    assert outcome and "cancelled" in str(outcome[0])


# --- 4 and 8. one bad session folder hides nothing; a report is rebuilt from the last valid sample ------


def _good_session(state: Path, cache: dict[str, str]) -> Path:
    proc = run_gputop(
        "run", "demo:mlp", "--device", "local-task", "-n", "2", "--json", "-", "--quiet",
        env={**cache, "GPUTOP_STATE_DIR": str(state)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return Path(json.loads(proc.stdout)["session_dir"])


def _poison(good: Path, name: str, **changes: object) -> Path:
    """A copy of a real session, without its report, whose manifest says `changes` (inf is written as Infinity)."""
    folder = good.parent / name
    shutil.copytree(good, folder)
    (folder / "report.json").unlink()  # cut off before its end: its report is rebuilt from the manifest
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest.update(changes, id=name)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_poisoned_session_folders_are_named_and_the_rest_listed(
    tmp_path: Path, own_cache: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gputop.core.store.reader import scan_sessions

    state = tmp_path / "state"
    good = _good_session(state, own_cache)
    bad = {
        _poison(good, "20000101-000000-null", started_at=None): "started_at is null, not a time",
        _poison(good, "20000101-000001-string", started_at="yesterday"): 'started_at is "yesterday", not a time',
        _poison(good, "20000101-000002-inf", started_at=float("inf")): "started_at is Infinity, not a time",
        _poison(good, "20000101-000003-list", target=["demo:mlp"]): 'target is ["demo:mlp"], not a str',
    }
    as_folder = _poison(good, "20000101-000004-folder")
    (as_folder / "manifest.json").unlink()
    (as_folder / "manifest.json").mkdir()  # reading it fails with EISDIR
    bad[as_folder] = "unreadable manifest (is a directory)"
    binary = _poison(good, "20000101-000005-binary")
    (binary / "manifest.json").write_bytes(b"\xff\xfe{not json")
    bad[binary] = "unreadable manifest ("

    monkeypatch.setenv("GPUTOP_STATE_DIR", str(state))
    scan = scan_sessions()
    assert [e.id for e in scan.entries] == [good.name]
    skipped = {s.path: s.reason for s in scan.skipped}
    for folder, reason in bad.items():
        assert reason in skipped.pop(str(folder)), (folder, skipped)
    assert skipped == {}

    env = {**own_cache, "GPUTOP_STATE_DIR": str(state)}
    listing = run_gputop("sessions", env=env)
    assert listing.returncode == 0, listing.stderr
    assert good.name in listing.stdout and "internal error" not in listing.stderr
    for folder in bad:  # each bad one named on stderr, in one line
        assert f"gputop: skipped {folder}: " in listing.stderr, listing.stderr
    as_json = run_gputop("sessions", "--json", env=env)
    assert as_json.returncode == 0 and [e["id"] for e in json.loads(as_json.stdout)] == [good.name]
    report = run_gputop("report", good.name, "--json", "-", env=env)
    assert report.returncode == 0 and json.loads(report.stdout)["state"] == "finished", report.stderr
    for folder, reason in bad.items():
        for command in ("report", "open"):
            proc = run_gputop(command, folder.name, env=env)
            assert_one_line_error(proc, 2, reason)


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="needs POSIX users")
def test_an_unreadable_session_folder_is_named(
    tmp_path: Path, own_cache: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gputop.core.store.reader import scan_sessions

    # Root reads every folder: the scan then runs as nobody (effective uid), for whom mode 000 is unreadable.
    as_root = os.geteuid() == 0
    state = Path(tempfile.mkdtemp(prefix="gputop-unreadable-")) if as_root else tmp_path / "state"
    hidden: Path | None = None
    try:
        good = _good_session(state, own_cache)
        hidden = _poison(good, "20000101-000000-hidden")
        for path in [state, *state.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        hidden.chmod(0)
        monkeypatch.setenv("GPUTOP_STATE_DIR", str(state))
        if as_root:
            os.seteuid(65534)
        try:
            scan = scan_sessions()
        finally:
            if as_root:
                os.seteuid(0)
        assert [e.id for e in scan.entries] == [good.name]
        assert [(s.path, s.reason) for s in scan.skipped] == [(str(hidden), "cannot be read (permission denied)")]
    finally:
        if hidden is not None:
            hidden.chmod(0o755)
        if as_root:
            shutil.rmtree(state)


def test_a_report_is_rebuilt_from_the_last_valid_sample(
    tmp_path: Path, own_cache: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gputop.core.store.reader import read_report, scan_samples

    folder = tmp_path / "s"
    proc = run_gputop(
        "run", "demo:mlp", "--device", "local-task", "-n", "3", "--session-dir", str(folder), env=own_cache
    )
    assert proc.returncode == 0, proc.stderr
    lines = (folder / "samples.jsonl").read_bytes().splitlines()
    last = json.loads(lines[-1])
    # Cut off as by a kill: no report, the manifest still running; then lines that are JSON but no samples.
    (folder / "report.json").unlink()
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest.update(state="running", ended_at=None, duration_s=None, exit_code=None)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with open(folder / "samples.jsonl", "ab") as handle:
        handle.write(b'{"note": "not a sample"}\n[1, 2]\n"text"\nnull\n{"state": "runn')

    count, tail = scan_samples(folder, 2)
    assert count == len(lines) + 4 and [s.seq for s in tail] == [json.loads(lines[-2])["seq"], last["seq"]]
    report = read_report(folder)
    assert report["state"] == "crashed" and report["calls"]["count"] == last["calls"]["count"]
    assert report["rebuilt"].startswith("no report.json: rebuilt from the last of")
    text = run_gputop("report", str(folder), env=own_cache)
    assert text.returncode == 0, text.stderr
    assert "state     crashed" in text.stdout


# --- 9. names that sort and never collide -------------------------------------------------------------


def test_session_ids_sort_by_time_whatever_the_time_zone(tmp_path: Path, own_cache: dict[str, str]) -> None:
    env = {**own_cache, "GPUTOP_STATE_DIR": str(tmp_path / "state")}
    folders = []
    for zone in ("EAST-14", "WEST+12"):  # POSIX TZ: UTC+14, then UTC-12 (26 hours behind)
        proc = run_gputop(
            "run", "demo:mlp", "--device", "local-task", "-n", "1", "--json", "-", "--quiet", env={**env, "TZ": zone}
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        folders.append(Path(json.loads(proc.stdout)["session_dir"]))
        time.sleep(1.1)  # the second run starts in a later second
    first, second = folders
    # Named by their start in UTC: the later run sorts after the earlier one, as `ls` and prefixes see them.
    assert sorted([second.name, first.name]) == [first.name, second.name], (first.name, second.name)
    assert first.name[8] == "-" and first.name[15] == "Z", first.name
    listing = run_gputop("sessions", "--json", env=env)
    assert [e["id"] for e in json.loads(listing.stdout)] == [first.name, second.name]
    for session in folders:  # an id's time part is a unique prefix
        report = run_gputop("report", session.name[:16], "--json", "-", env=env)
        assert report.returncode == 0, report.stderr
        assert json.loads(report.stdout)["session_dir"] == str(session)


def test_two_profile_passes_or_exports_in_one_second_keep_their_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gputop.core.profiling.dispatches import pass_stem
    from gputop.core.run.profiling import PASS_FILE
    from gputop.core.store.writer import SessionWriter

    stems = []
    for _ in range(3):  # three passes, well within a second: each writes its files under its own stem
        stem = pass_stem(tmp_path)
        for suffix in (".ireeprof", "-calls.json", ".log"):
            (tmp_path / f"{stem}{suffix}").write_text(stem)
        stems.append(stem)
    assert len(set(stems)) == 3
    assert all((tmp_path / f"{stem}.ireeprof").read_text() == stem for stem in stems)
    assert {PASS_FILE.match(f"{stem}-calls.json").group(1) for stem in stems} == set(stems)  # type: ignore[union-attr]

    monkeypatch.setenv("GPUTOP_STATE_DIR", str(tmp_path / "state"))  # its index line stays out of other tests'
    (tmp_path / "s").mkdir()
    writer = SessionWriter(tmp_path / "s", {"target": "demo:mlp"})
    try:
        paths = [writer.write_export({"n": n}, published=0) for n in range(3)]
    finally:
        writer.close(None, state="finished", exit_code=0, published=0)
    assert len(set(paths)) == 3 and [json.loads(p.read_text())["n"] for p in paths] == [0, 1, 2]


# --- 6. the metrics server under a flood of half-open connections ----------------------------------------


def test_half_open_connections_cost_no_threads_and_a_scrape_still_answers() -> None:
    import socket
    import urllib.request

    from gputop.core.serving.metrics import MAX_HANDLERS, MetricsServer

    server = MetricsServer(lambda: None, port=0)
    url = server.start()
    before = threading.active_count()
    connections: list[socket.socket] = []
    try:
        for n in range(200):  # connected, and then nothing (or half a request line): as a scanner or a stuck peer
            connection = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            if n % 25 == 0:
                connection.sendall(b"GET /metr")
            connections.append(connection)
        time.sleep(1.0)
        assert threading.active_count() - before <= MAX_HANDLERS, threading.active_count() - before
        started = time.monotonic()
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.status == 200
            response.read()
        assert time.monotonic() - started < 5
        assert threading.active_count() - before <= MAX_HANDLERS
    finally:
        for connection in connections:
            connection.close()
        server.stop()
    poll(lambda: threading.active_count() <= before, timeout=30)


# --- mounts: a read-only or a tiny tmpfs, made for the test and always taken away ------------------------


# --- 7. the crash log is the user's own ---------------------------------------------------------------


def _internal_error_report(folder: Path) -> Path:
    """A report file whose `kernels` is a number: `gputop compare` meets a value it does not expect."""
    report = folder / "odd-report.json"
    report.write_text(json.dumps({"target": "t", "calls": {"count": 5, "p50_ms": 1.0}, "kernels": 3}))
    return report


def test_an_internal_error_beside_a_foreign_crash_log_is_one_line(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("chown to another user needs root")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    foreign = tmpdir / "gputop-crash.log"  # where every user's tracebacks went, left there by another user
    foreign.write_text("someone else's\n")
    foreign.chmod(0o600)
    os.chown(foreign, 65534, 65534)
    report = _internal_error_report(tmp_path)
    state = tmp_path / "state"
    proc = run_gputop("compare", str(report), str(report), env={"TMPDIR": str(tmpdir), "GPUTOP_STATE_DIR": str(state)})
    assert proc.returncode == 5, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    [line] = proc.stderr.splitlines()
    log = state / "crash.log"
    assert line.startswith("gputop: internal error:") and f"(traceback in {log})" in line, line
    assert "Traceback" in log.read_text() and "_kernel_rows" in log.read_text()
    assert log.stat().st_mode & 0o777 == 0o600 and log.stat().st_uid == os.geteuid()
    assert foreign.read_text() == "someone else's\n"


def test_an_internal_error_with_nowhere_to_write_is_still_one_line(tmp_path: Path) -> None:
    report = _internal_error_report(tmp_path)
    with tmpfs(tmp_path / "ro-state", "ro,size=1m") as state:
        proc = run_gputop(
            "compare", str(report), str(report), env={"TMPDIR": str(state), "GPUTOP_STATE_DIR": str(state)}
        )
    assert proc.returncode == 5, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith("gputop: internal error:") and "no crash log could be written" in line, line


# --- 2. a state folder, cache or HOME that cannot be written -------------------------------------------

_HINT = "set GPUTOP_STATE_DIR to a writable folder"


def test_a_read_only_state_folder_is_one_line_headless_and_in_the_tui(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "ro-state", "ro,size=1m") as state:
        env = {"GPUTOP_STATE_DIR": str(state), "TMPDIR": str(tmp_path)}
        headless = run_gputop("run", "demo:mlp", "--device", "local-task", "-n", "2", env=env, timeout=120)
        tui = run_gputop("demo:mlp", "--device", "local-task", env=env, timeout=120)
    for proc in (headless, tui):
        line = assert_one_line_error(proc, 5, str(state), "Read-only file system", _HINT)
        assert "internal error" not in line


def test_a_full_state_folder_is_one_line_headless_and_in_the_tui(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "full-state", "size=64k") as state:
        (state / "sessions").mkdir()
        fill_disk(state / "filler")
        env = {"GPUTOP_STATE_DIR": str(state), "TMPDIR": str(tmp_path)}
        headless = run_gputop("run", "demo:mlp", "--device", "local-task", "-n", "2", env=env, timeout=120)
        tui = run_gputop("demo:mlp", "--device", "local-task", env=env, timeout=120)
        assert list((state / "sessions").iterdir()) == []  # no half-made session folder left
    for proc in (headless, tui):
        line = assert_one_line_error(proc, 5, str(state / "sessions"), "No space left on device", _HINT)
        assert "internal error" not in line


def test_a_read_only_home_names_the_state_folder(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "home", "ro,size=1m") as home:
        env = {
            "HOME": str(home),
            "GPUTOP_STATE_DIR": "",
            "GPUTOP_CACHE_DIR": "",
            "XDG_STATE_HOME": "",
            "XDG_CACHE_HOME": "",
            "TMPDIR": str(tmp_path),
        }
        proc = run_gputop("run", "demo:mlp", "--device", "local-task", "-n", "2", env=env, timeout=120)
    assert_one_line_error(proc, 5, str(home), _HINT)


def test_a_read_only_cache_runs_uncached_with_a_warning(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with tmpfs(tmp_path / "ro-cache", "ro,size=1m") as cache:
        env = {"GPUTOP_CACHE_DIR": str(cache), "GPUTOP_STATE_DIR": str(state)}
        proc = run_gputop("run", "demo:mlp", "--device", "local-task", "-n", "2", "--json", "-", env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["check"]["passed"] is True and report["compile"]["cache_hit"] is False
    warnings = [line for line in proc.stderr.splitlines() if "cannot be written" in line]
    assert len(warnings) == 1, proc.stderr
    assert warnings[0].startswith("gputop: warning: the compile cache") and str(cache) in warnings[0]
    assert "running uncached" in warnings[0] and "GPUTOP_CACHE_DIR" in warnings[0]
    assert list((Path(report["session_dir"]) / "uncached" / "vmfb").glob("*.vmfb"))


# --- 1. a disk that fills mid-run ---------------------------------------------------------------------


def test_a_disk_that_fills_mid_run_is_said_and_the_ending_still_written(
    tmp_path: Path, own_cache: dict[str, str]
) -> None:
    # 768 KiB: the manifest and the first samples fit, 3000 calls' samples do not (about 1.3 MB).
    with tmpfs(tmp_path / "small-state", "size=768k") as state:
        env = {**own_cache, "GPUTOP_STATE_DIR": str(state)}
        proc = run_gputop("run", "demo:mlp", "--device", "local-task", "-n", "3000", env=env, timeout=120)
        [folder] = list((state / "sessions").iterdir())
        manifest = json.loads((folder / "manifest.json").read_text())
        report = json.loads((folder / "report.json").read_text())
        leftovers = sorted(p.name for p in folder.iterdir() if p.name.startswith("."))
    line = assert_one_line_error(proc, 5, "record is incomplete", str(folder / "samples.jsonl"), "No space left")
    warnings = [w for w in proc.stderr.splitlines() if w.startswith("gputop: warning: the record stopped")]
    assert len(warnings) == 1 and "No space left on device" in warnings[0], proc.stderr
    assert "GPUTOP_STATE_DIR" in line
    assert manifest["state"] == "finished" and manifest["exit_code"] == 5, manifest
    assert "No space left on device" in manifest["write_error"]
    assert report["record"]["write_error"] == manifest["write_error"] and report["calls"]["count"] > 0
    assert leftovers == []  # neither the room kept for the ending nor a half-written temporary file


# --- 6. a viewer's pause that the run's channel did not answer ------------------------------------------


def test_a_viewer_says_a_timed_out_pause_was_not_answered(tmp_path: Path, own_cache: dict[str, str]) -> None:
    import socket

    from gputop.tui.bridge import AttachSource

    folder = _good_session(tmp_path / "state", own_cache)
    # A run whose control channel accepts and never answers: busy, stopped with SIGSTOP, stuck.
    stuck = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    fd = os.open(folder, os.O_PATH | os.O_DIRECTORY)  # the folder's path is longer than a socket address holds
    try:
        stuck.bind(f"/proc/self/fd/{fd}/control.sock")
    finally:
        os.close(fd)
    stuck.listen(8)
    try:
        source = AttachSource(folder)
        started = time.monotonic()
        assert source.toggle_pause() is None
        assert time.monotonic() - started < 10
        reason = source.pause_refused
        assert reason is not None and "did not answer" in reason and "nothing to pause" not in reason, reason
    finally:
        stuck.close()
        (folder / "control.sock").unlink()


# --- 10. a dumb terminal or a C locale -------------------------------------------------------------------


@pytest.mark.parametrize(
    "locale_env",
    [{"TERM": "dumb"}, {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}],
    ids=["TERM=dumb", "LC_ALL=C"],
)
def test_text_output_falls_back_to_ascii(tmp_path: Path, own_cache: dict[str, str], locale_env: dict[str, str]) -> None:
    state = tmp_path / "state"
    folder = _good_session(state, own_cache)
    env = {**own_cache, "GPUTOP_STATE_DIR": str(state), **locale_env}
    plain = run_gputop("report", folder.name, env={**own_cache, "GPUTOP_STATE_DIR": str(state)})
    assert plain.returncode == 0 and "\u00b5s" in plain.stdout + plain.stderr  # what there is to fall back from
    for args in (("report", folder.name), ("sessions",), ("report", folder.name, "--json", "-")):
        proc = subprocess.run(
            [sys.executable, "-m", "gputop.tui", *args],
            capture_output=True,
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            timeout=120,
            check=False,
        )
        out, err = proc.stdout.decode("ascii", "replace"), proc.stderr.decode("ascii", "replace")
        assert proc.returncode == 0, (args, proc.returncode, err)
        assert proc.stdout.isascii() and proc.stderr.isascii(), (args, out, err)
        assert "\\u" not in out and "internal error" not in err and "?" not in out
    report = subprocess.run(
        [sys.executable, "-m", "gputop.tui", "report", folder.name],
        capture_output=True,
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )
    text = report.stdout.decode("ascii") + report.stderr.decode("ascii")
    assert " us" in text or "us " in text, text  # microseconds as `us`, not `?` nor an escape
