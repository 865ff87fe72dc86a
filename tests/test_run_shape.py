"""One decision per question: a config checked the same from Python and the command line, refusals said
the same by `gputop run` and the TUI, and one writer of report.json.

Each test runs the real engine (local-task, PoCL) or the real command line in a child process.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import assert_one_line_error, run_gputop
from gputop.core.errors import UsageError
from gputop.core.records.base import to_json
from gputop.core.run import RunConfig, Target, TargetKind
from gputop.core.store.reader import read_report
from gputop.tui.app import GputopApp
from gputop.tui.bridge import EngineBridge
from gputop.tui.panes.log import LogPane

BAD_OPTIONS = [
    ({"iterations": -1}, ["-n", "-1"], "--iterations must be 0 (first call only) or more"),
    ({"sample_interval_s": 0.0}, ["--sample-interval", "0"], "--sample-interval must be positive"),
    ({"profile_calls": 0}, ["--profile-calls", "0"], "--profile-calls must be at least 1"),
    ({"target": "model.txt"}, [], "no such file"),
    ({"target": "demo:nope"}, [], "unknown demo 'demo:nope'"),
    ({"devices": ("local:0",)}, ["--devices", "local:0"], "--devices takes two or more devices"),
]


@pytest.mark.parametrize(("fields", "flags", "message"), BAD_OPTIONS, ids=[m for _, _, m in BAD_OPTIONS])
def test_python_api_and_command_line_check_options_alike(
    fields: dict[str, object], flags: list[str], message: str
) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        RunConfig(**fields)  # type: ignore[arg-type]
    target = str(fields.get("target", "demo:mlp"))
    proc = run_gputop("run", target, "--device", "cpu", *flags, timeout=120)
    assert_one_line_error(proc, 2, message)


def test_target_kinds_are_decided_once(tmp_path: Path) -> None:
    module = tmp_path / "m.vmfb"
    module.write_bytes(b"x")
    assert Target.parse("demo:mlp").kind is TargetKind.DEMO
    assert Target.parse("demo:opencl-chain").kind is TargetKind.OPENCL_DEMO
    assert Target.parse(str(module)).kind is TargetKind.VMFB
    assert Target.parse("absent.onnx", must_exist=False).kind is TargetKind.ONNX
    assert Target.parse("spec.toml", must_exist=False).is_opencl
    with pytest.raises(UsageError, match=re.escape("absent.mlir: no such file")):
        Target.parse("absent.mlir")
    # The manifest records the target as given; the parsed one is not a field of the config.
    assert to_json(RunConfig())["target"] == "demo:mlp" and "target_info" not in to_json(RunConfig())


PROFILE_REFUSED = "profile: OpenCL kernels are timed by device events on every call already"


def test_profile_refusal_headless(opencl_device: str) -> None:
    proc = run_gputop("run", "demo:opencl-chain", "--device", opencl_device, "-n", "2", "--profile")
    assert proc.returncode == 0, proc.stderr
    assert f"gputop: {PROFILE_REFUSED}" in proc.stderr.splitlines(), proc.stderr


async def test_profile_refusal_in_the_tui_says_the_same(opencl_device: str) -> None:
    app = GputopApp(EngineBridge(RunConfig(target="demo:opencl-chain", device=opencl_device, iterations=None)))
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(600):
            if app.snapshot is not None and app.snapshot.state == "running":
                break
            await pilot.pause(0.1)
        await pilot.press("p")
        await pilot.pause(0.2)
        assert f"warning: {PROFILE_REFUSED}" in app.query_one(LogPane).messages


def test_capture_refusal_is_the_same_headless_and_in_the_tui() -> None:
    # The TUI's `c` on local-task says exactly this (tests/test_tui.py::test_keys_that_say_why_not).
    proc = run_gputop("run", "demo:mlp", "--device", "cpu", "-n", "1", "--capture")
    assert proc.returncode == 0, proc.stderr
    assert (
        "gputop: capture: RenderDoc captures Vulkan work; this run is on local-task (RenderDoc captures Vulkan only)"
        in proc.stderr
    )


def test_a_mid_run_export_never_stands_in_for_the_final_report(tmp_path: Path) -> None:
    """`e` then a crash: `gputop report` rebuilds from the samples instead of showing the export as the end."""
    folder = tmp_path / "s"
    script = textwrap.dedent(
        f"""
        import os, time
        from pathlib import Path
        from gputop.core.run import RunConfig, Session
        config = RunConfig(target="demo:mlp", device="cpu", iterations=None, session_dir=Path({str(folder)!r}))
        session = Session(config)
        session.start()
        while session.snapshot.calls.count < 3:
            time.sleep(0.05)
        print(session.export_report(), flush=True)
        while session.snapshot.calls.count < 6:
            time.sleep(0.05)
        os._exit(9)  # a crash: no teardown, no report.json
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 9, proc.stderr
    export = Path(proc.stdout.strip())
    assert export.parent == folder and export.name.startswith("report-") and export.exists()
    assert json.loads(export.read_text())["record"]["samples_published"] >= 1
    assert not (folder / "report.json").exists()
    rebuilt = read_report(folder)
    assert "rebuilt" in rebuilt and rebuilt["state"] == "crashed" and rebuilt["calls"]["count"] >= 3
