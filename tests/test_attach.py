"""Watching a run another process drives: its control channel, `gputop attach`, and `open`'s hint.

A real `gputop serve` on local-task runs in a child process. Its session
folder holds `control.sock` while it runs; these tests ask it things as a
viewer would, follow the folder with the TUI's `AttachSource` through
Textual's Pilot, and check what is left when the run ends.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tui_pilot import wait_for

from conftest import end_child, poll, run_gputop, spawn_gputop
from gputop.core.serving.control_socket import CONTROL_SOCKET, ControlServer, ControlUnavailable, ask

SERVE = ("serve", "demo:mlp", "--device", "local-task", "--metrics-port", "0", "--profile-every", "0", "--quiet")
RECORDED = Path(__file__).parent / "data" / "mlp_local_task.jsonl"


def sample_lines(folder: Path) -> int:
    return (folder / "samples.jsonl").read_bytes().count(b"\n")


def running(folder: Path) -> bool:
    try:
        return bool(ask(folder, "hello")["state"] == "running")
    except ControlUnavailable:
        return False  # not there yet


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    yield from serve_in(tmp_path / "run")


@pytest.fixture()
def served_in_the_open() -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """A run whose folder every user may reach (pytest's own temp root is private to its user)."""
    base = Path(tempfile.mkdtemp(prefix="gputop-test-"))
    os.chmod(base, 0o755)
    try:
        yield from serve_in(base / "run")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def serve_in(folder: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    child = spawn_gputop(*SERVE, "--session-dir", str(folder))
    try:
        poll(lambda: child.poll() is not None or running(folder), timeout=180, every=0.2)
    except AssertionError:
        end_child(child)
        raise
    assert child.poll() is None, child.communicate()[1]
    yield folder, child
    stderr = end_child(child)
    assert "Traceback" not in stderr


def test_the_control_channel_answers_with_the_runs_own_reasons(served: tuple[Path, subprocess.Popen[str]]) -> None:
    folder, child = served
    mode = (folder / CONTROL_SOCKET).stat().st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600  # the user's, nobody else's
    assert ask(folder, "hello") == {"ok": True, "pid": child.pid, "state": "running", "session_dir": str(folder)}
    capture = ask(folder, "capture")
    assert capture == {
        "ok": False,
        "reason": "RenderDoc captures Vulkan work; this run is on local-task (RenderDoc captures Vulkan only)",
    }
    assert ask(folder, "teleport")["reason"].startswith("unknown request 'teleport'")
    assert ask(folder, "toggle_pause") == {"ok": True, "state": "paused"}
    poll(lambda: json.loads((folder / "manifest.json").read_text())["state"] == "paused")
    assert ask(folder, "toggle_pause") == {"ok": True, "state": "running"}
    assert ask(folder, "profile", level="most") == {
        "ok": False,
        "reason": "no profile level 'most': one of default, full",
    }
    # A profile pass asked for from outside arrives in the record, as one asked for with `P` would, at its level.
    assert ask(folder, "profile", level="full") == {"ok": True}
    poll(lambda: any(json.loads(line).get("profile") for line in (folder / "samples.jsonl").read_text().splitlines()))
    profiled = [json.loads(line)["profile"] for line in (folder / "samples.jsonl").read_text().splitlines()]
    assert [p["level"] for p in profiled if p][-1] == "full"
    report = ask(folder, "report")["report"]
    assert report["state"] == "running" and report["kernels"] and report["calls"]["count"] > 0
    exported = Path(ask(folder, "export")["path"])
    assert exported.parent == folder and json.loads(exported.read_text())["calls"]["count"] > 0


def test_watching_keeps_a_thinned_record_dense(served: tuple[Path, subprocess.Popen[str]]) -> None:
    folder, _ = served  # gputop serve keeps one sample per 5 s unless something changes
    # The line that says "running" is written by the record's own thread, maybe after the socket said so: the
    # quiet window starts once it is in the file, or a loaded machine counts it in the window.
    poll(lambda: b'"state": "running"' in (folder / "samples.jsonl").read_bytes().rsplit(b"\n", 2)[-2])
    before = sample_lines(folder)
    time.sleep(3)
    quiet = sample_lines(folder) - before
    assert ask(folder, "watch", seconds=6) == {"ok": True}
    before = sample_lines(folder)
    time.sleep(3)
    watched = sample_lines(folder) - before
    assert quiet <= 1 and watched >= 4, (quiet, watched)


def test_the_socket_goes_with_the_run(served: tuple[Path, subprocess.Popen[str]]) -> None:
    folder, child = served
    end_child(child)
    assert child.returncode == 143 and not (folder / CONTROL_SOCKET).exists()
    with pytest.raises(ControlUnavailable, match="has ended"):
        ask(folder, "hello")


def ask_as_nobody(folder: Path, op: str) -> str:
    """`ask` from a forked child that has become the user nobody (65534); what it got, as text."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no exec (nobody may not run this venv's python), just the socket
        try:
            os.setgid(65534)
            os.setuid(65534)
            try:
                said = repr(ask(folder, op))
            except ControlUnavailable as exc:
                said = f"unavailable: {exc}"
            os.write(write_end, said.encode())
        finally:
            os._exit(0)
    os.close(write_end)
    os.waitpid(pid, 0)
    with os.fdopen(read_end, "rb") as handle:
        return handle.read().decode()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")
def test_another_user_cannot_drive_the_run(served_in_the_open: tuple[Path, subprocess.Popen[str]]) -> None:
    folder, _ = served_in_the_open
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755  # others may read the record, as on a shared machine
    said = ask_as_nobody(folder, "toggle_pause")
    assert said.startswith("unavailable:") and "control.sock belongs to another user" in said
    os.chmod(folder / CONTROL_SOCKET, 0o666)  # even with the file opened up, the server checks who asks
    assert ask_as_nobody(folder, "toggle_pause") == repr({"ok": False, "reason": "this run belongs to another user"})
    assert json.loads((folder / "manifest.json").read_text())["state"] == "running"


def test_a_socket_path_longer_than_sun_path(tmp_path: Path) -> None:
    folder = tmp_path / ("d" * 120)
    folder.mkdir()
    server = ControlServer(folder, lambda request: {"ok": True, "echo": request["op"]})
    server.start()
    try:
        assert ask(folder, "ping") == {"ok": True, "echo": "ping"}
    finally:
        server.close()
    assert not (folder / CONTROL_SOCKET).exists()


async def test_attach_follows_the_run_and_its_keys_reach_it(served: tuple[Path, subprocess.Popen[str]]) -> None:
    from gputop.tui.app import GputopApp
    from gputop.tui.bridge import AttachSource
    from gputop.tui.panes.header import HeaderBar
    from gputop.tui.panes.log import LogPane

    folder, child = served
    app = GputopApp(AttachSource(folder))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.calls.count > 0, timeout=90)
        first = app.snapshot.calls.count  # type: ignore[union-attr]
        await wait_for(pilot, lambda: app.snapshot.calls.count > first, timeout=90)  # type: ignore[union-attr]
        header = str(app.query_one(HeaderBar).render())
        assert f"attached pid {child.pid} on " in header and "gputop serve demo:mlp" in header
        await pilot.press("p")
        await wait_for(pilot, lambda: app.snapshot.profile is not None, timeout=90)  # type: ignore[union-attr]
        assert app.snapshot.profile.kernels  # type: ignore[union-attr]
        await pilot.press("space")
        await wait_for(pilot, lambda: app.snapshot.state == "paused", timeout=90)  # type: ignore[union-attr]
        await pilot.press("space")
        await wait_for(pilot, lambda: app.snapshot.state == "running", timeout=90)  # type: ignore[union-attr]
        await pilot.press("r")
        await pilot.press("c")
        reload_said = f"reload: the run belongs to pid {child.pid} (gputop serve demo:mlp"
        capture_said = "capture: RenderDoc captures Vulkan work; this run is on local-task"
        await wait_for(
            pilot,
            lambda: all(said in "\n".join(app.query_one(LogPane).messages) for said in (reload_said, capture_said)),
            timeout=30,
        )
        await pilot.press("q")
        await pilot.pause(0.5)
    assert app.return_code == 0
    assert child.poll() is None, "leaving the viewer leaves the run running"


async def test_attach_says_when_the_run_ends(tmp_path: Path) -> None:
    from gputop.tui.app import GputopApp
    from gputop.tui.bridge import AttachSource
    from gputop.tui.panes.log import LogPane

    folder = tmp_path / "run"
    child = spawn_gputop("run", "demo:mlp", "--device", "local-task", "-n", "100000", "--session-dir", str(folder))
    poll(lambda: (folder / CONTROL_SOCKET).exists(), timeout=120)
    app = GputopApp(AttachSource(folder))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.calls.count > 0, timeout=90)
        end_child(child)

        def log() -> str:
            return "\n".join(app.query_one(LogPane).messages)

        await wait_for(pilot, lambda: "the run has ended" in log(), timeout=30)
        assert "the run has ended: interrupted, exit code 143" in log()
        assert app.snapshot.state == "stopped"  # its last sample; "interrupted" is the manifest's word
        await pilot.press("p")
        await wait_for(pilot, lambda: "profile: the run has ended (interrupted)" in log(), timeout=30)


def test_open_points_to_attach_while_the_run_lives_and_attach_to_open_after(
    served: tuple[Path, subprocess.Popen[str]], tmp_path: Path
) -> None:
    folder, _ = served
    proc = run_gputop("open", str(folder))
    assert proc.returncode == 2 and f"gputop attach {folder.name}" in proc.stderr and "still running" in proc.stderr
    finished = tmp_path / "finished"
    assert run_gputop("run", "demo:mlp", "--device", "cpu", "-n", "2", "--session-dir", str(finished)).returncode == 0
    proc = run_gputop("attach", str(finished))
    assert proc.returncode == 2 and "the run has ended (finished)" in proc.stderr and "gputop open" in proc.stderr


def test_the_follower_reads_only_whole_new_lines(tmp_path: Path) -> None:
    from gputop.core.store.follow import SessionFollower

    folder = tmp_path / "run"
    finished = run_gputop("run", "demo:mlp", "--device", "cpu", "-n", "1", "--session-dir", str(folder))
    assert finished.returncode == 0
    lines = RECORDED.read_bytes().splitlines(keepends=True)
    samples = folder / "samples.jsonl"
    samples.write_bytes(b"".join(lines[:5]))
    follower = SessionFollower(folder)
    assert follower.newest().timestamp == json.loads(lines[4])["timestamp"]  # type: ignore[union-attr]
    assert follower.newest() is None  # nothing new
    with open(samples, "ab") as handle:
        handle.write(lines[5] + lines[6][:40])  # a whole line and the start of the next
    assert follower.newest().timestamp == json.loads(lines[5])["timestamp"]  # type: ignore[union-attr]
    with open(samples, "ab") as handle:
        handle.write(lines[6][40:])
    assert follower.newest().timestamp == json.loads(lines[6])["timestamp"]  # type: ignore[union-attr]
    assert follower.ended() == "finished"
    assert "gputop run demo:mlp --device cpu -n 1" in follower.origin
    shutil.rmtree(folder)


def test_a_refusal_names_the_run_by_its_command_before_its_options() -> None:
    """The refusal a viewer logs stays one row: the owner's command without its options (a session path among them)."""
    from gputop.core.store.follow import describe_command

    served = {"command_line": ["/venv/bin/gputop", "serve", "demo:mlp", "--session-dir", "/tmp/" + "x" * 200]}
    assert describe_command(served, brief=True) == "gputop serve demo:mlp ..."
    assert describe_command(served).endswith("x" * 200)  # the header's origin keeps it whole
    module = {"command_line": ["/venv/bin/python", "-m", "gputop.tui", "model dir/m.mlir"]}
    assert describe_command(module, brief=True) == "gputop 'model dir/m.mlir'"
