"""The control socket's live snapshot stream and its manners under slow, stopped and rude peers.

A real `Session` on local-task publishes; viewers subscribe on its
`control.sock` as `gputop attach` and the TUI do. What is checked: every
published snapshot reaches a reader quickly (its age on arrival, against the
snapshot's own timestamp), a subscriber that never reads costs the run
nothing and the others keep getting snapshots, one sender that trickles a
request byte by byte does not hold up anybody else, and only the run's owner
(by the peer's pid, never by what a request says) may stop it.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import poll
from gputop.core.run import RunConfig, Session
from gputop.core.run.run_host import RunHost
from gputop.core.serving.control_socket import CONTROL_SOCKET, ControlServer, SnapshotStream, StreamReader, ask


def mlp_config(folder: Path, iterations: int | None = None) -> RunConfig:
    return RunConfig(target="demo:mlp", device="local-task", session_dir=folder, iterations=iterations)


@pytest.fixture()
def live_session(tmp_path: Path) -> Iterator[Session]:
    session = Session(mlp_config(tmp_path / "run"))
    session.start()
    poll(lambda: session.snapshot.state == "running", timeout=180)
    yield session
    session.stop()
    assert session.wait(60)


def read_lines(reader: StreamReader, count: int, out: list[dict[str, object]]) -> None:
    for line in reader.lines():
        out.append(json.loads(line))
        if len(out) >= count:
            return


def test_a_subscriber_gets_every_publish_fresh(live_session: Session) -> None:
    reader = StreamReader.open(live_session.session_dir)
    got: list[dict[str, object]] = []
    thread = threading.Thread(target=read_lines, args=(reader, 20, got))
    thread.start()
    thread.join(30)
    reader.close()
    assert len(got) >= 20
    arrived = time.time()
    seqs = [int(str(s["seq"])) for s in got]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)  # newest first, never one twice
    # At the run's publish rate (10 a second, every one of them while the reader keeps up).
    span = float(str(got[-1]["timestamp"])) - float(str(got[1]["timestamp"]))
    assert span < 0.1 * (len(got) - 2) * 2.5, span
    assert arrived - float(str(got[-1]["timestamp"])) < 1.0
    assert reader.engine_pid is not None


def test_a_stopped_subscriber_costs_the_run_nothing(live_session: Session) -> None:
    folder = live_session.session_dir
    stuck = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stuck.connect(str(folder / CONTROL_SOCKET))
    stuck.sendall(b'{"op": "subscribe"}\n')  # and never reads another byte: a viewer under Ctrl-Z
    try:
        time.sleep(1.0)  # its socket fills
        calls_before = live_session.snapshot.calls.count
        reader = StreamReader.open(folder)
        got: list[dict[str, object]] = []
        thread = threading.Thread(target=read_lines, args=(reader, 15, got))
        thread.start()
        thread.join(30)
        reader.close()
        assert len(got) >= 15, "a stuck subscriber held up the others"
        assert live_session.snapshot.calls.count > calls_before + 10  # the calls went on
        assert ask(folder, "hello")["state"] == "running"
    finally:
        stuck.close()


def test_no_line_is_made_while_every_subscriber_is_stalled_and_the_next_one_is_the_newest() -> None:
    """A subscriber whose socket is full (a viewer under Ctrl-Z) is `stalled`: with it alone, the stream wants
    no line, so the engine serialises no snapshot for it. Once it reads again it gets the rest of the line it
    was sent, whole, and then the next line offered, not one that waited while it was stopped."""
    stream = SnapshotStream()
    engine_end, viewer_end = socket.socketpair()
    viewer_end.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    engine_end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    try:
        assert not stream.wanting  # nobody subscribed: nothing wanted
        assert stream.add(engine_end, None)
        assert stream.wanting
        line = b'{"seq": %d, "pad": "' + b"x" * 2000 + b'"}\n'
        seq = 0
        while stream.wanting and seq < 1000:  # it never reads: its socket fills
            seq += 1
            stream.offer(line % seq)
            time.sleep(0.01)
        assert not stream.wanting, "a subscriber that reads nothing still wanted lines"
        assert stream.subscribers == 1  # still subscribed (viewers_now counts it): only not served
        # Offered meanwhile (the record's own sample): the stalled one's next try finds its socket still full and
        # lets it go, so no line that waited out the stop is sent when it reads again.
        stream.offer(line % 9998)
        time.sleep(0.3)
        viewer_end.setblocking(False)
        received = b""
        deadline = time.monotonic() + 10
        while not stream.wanting and time.monotonic() < deadline:  # it reads again (SIGCONT)
            with contextlib.suppress(BlockingIOError):
                received += viewer_end.recv(65536)
            time.sleep(0.01)
        assert stream.wanting, "a subscriber that reads again was not served again"
        stream.offer(line % 9999)
        deadline = time.monotonic() + 10
        while not received.endswith(line % 9999) and time.monotonic() < deadline:
            with contextlib.suppress(BlockingIOError):
                received += viewer_end.recv(65536)
            time.sleep(0.01)
        seqs = [json.loads(one)["seq"] for one in received.splitlines()]  # every line whole
        assert seqs[-1] == 9999 and 9998 not in seqs, seqs[-3:]
        assert seqs[:-1] == sorted(seqs[:-1]) and max(seqs[:-1]) <= seq
    finally:
        stream.close()
        viewer_end.close()


def test_a_viewer_that_leaves_a_paused_run_is_no_longer_counted(live_session: Session) -> None:
    """`viewers_now` counts those subscribed now, paused or not; `viewers` every one there has been."""
    folder = live_session.session_dir
    assert ask(folder, "toggle_pause")["state"] == "paused"
    reader = StreamReader.open(folder)
    engine = poll(lambda: (e := ask(folder, "report")["report"]["engine"])["viewers_now"] == 1 and e, timeout=10)
    assert engine["viewers"] >= 1
    reader.close()
    started = time.monotonic()
    poll(lambda: ask(folder, "report")["report"]["engine"]["viewers_now"] == 0, timeout=10)
    assert time.monotonic() - started < 1.0
    assert ask(folder, "report")["report"]["engine"]["viewers"] >= 1  # every viewer there has been, still


def test_a_trickling_sender_holds_up_nobody(live_session: Session) -> None:
    folder = live_session.session_dir
    slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    slow.connect(str(folder / CONTROL_SOCKET))
    try:
        slow.sendall(b'{"op"')  # ... and the rest never comes
        started = time.monotonic()
        for _ in range(5):
            assert ask(folder, "hello", timeout=1.0)["ok"] is True
        assert time.monotonic() - started < 1.0
        reply = slow.recv(4096)  # the slow one is told, in its own time
        assert b"did not arrive whole" in reply
    finally:
        slow.close()


def test_many_viewers_saying_hello_at_once_all_get_in(live_session: Session) -> None:
    folder = live_session.session_dir
    answers: list[bool] = []
    lock = threading.Lock()

    def hello() -> None:
        ok = bool(ask(folder, "hello", timeout=10.0).get("ok"))
        with lock:
            answers.append(ok)

    threads = [threading.Thread(target=hello) for _ in range(100)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert answers.count(True) == 100


def test_only_the_owner_may_stop_the_run(tmp_path: Path) -> None:
    """The owner is the peer whose pid the engine was given; a request cannot claim it."""
    host = RunHost(mlp_config(tmp_path / "run"), owner_pid=-1)  # nobody here is its owner
    host.start()
    folder = host.session.session_dir
    try:
        poll(lambda: host.session.snapshot.state == "running", timeout=180)
        refused = ask(folder, "stop", owner=True)
        assert refused == {"ok": False, "reason": "only the process that started this run may stop it"}
        assert ask(folder, "restart")["ok"] is False
        assert host.session.snapshot.state == "running"
    finally:
        host.stop()
        assert host.wait(60)


def test_the_owner_reloads_and_stops_over_the_socket(tmp_path: Path) -> None:
    import os

    host = RunHost(mlp_config(tmp_path / "run"), owner_pid=os.getpid())
    host.start()
    folder = host.session.session_dir
    poll(lambda: host.session.snapshot.state == "running", timeout=180)
    assert ask(folder, "restart", device="local-sync") == {"ok": True}
    poll(lambda: host.session.segment == 1 and host.session.snapshot.state == "running", timeout=180)
    assert host.session.snapshot.device is not None and host.session.snapshot.device.id.startswith("local-sync")
    assert host.session.session_dir == folder  # the same folder goes on as a new segment
    devices = ask(folder, "devices", timeout=60.0)
    assert devices["ok"] and any(row["id"].startswith("local-task") for row in devices["devices"])
    assert ask(folder, "stop") == {"ok": True}
    poll(lambda: host.wait(0.1), timeout=60)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["state"] == "stopped" and [s["segment"] for s in manifest["segments"]] == [0, 1]


def test_a_server_without_an_owner_marks_no_request_as_the_owners(tmp_path: Path) -> None:
    seen: list[dict[str, object]] = []

    def answer(request: dict[str, object]) -> dict[str, object]:
        seen.append(request)
        return {"ok": True}

    server = ControlServer(tmp_path, answer)
    server.start()
    try:
        ask(tmp_path, "hello", owner=True)
    finally:
        server.close()
    assert seen == [{"op": "hello", "owner": False}]
