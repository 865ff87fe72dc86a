"""Demos compiled and run on local-task and lavapipe Vulkan, checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import run_json
from gputop.core.module.demos import DEMOS
from gputop.core.session import RunConfig, Session

REPORT_KEYS = {"device", "phases", "calls", "memory", "kernels", "exports", "captures", "diagnostics"}
PHASES = {"compile_s", "load_s", "parameters_s", "context_s", "first_call_s", "teardown_s"}
CALL_KEYS = {"count", "min_ms", "p50_ms", "p95_ms", "max_ms"}


def _run_session(target: str, device: str, iterations: int) -> Session:
    session = Session(RunConfig(target=target, device=device, iterations=iterations))
    session.start()
    assert session.wait(900)
    assert session.error is None, session.error
    return session


@pytest.mark.parametrize("demo", ["mlp", "conv"])
def test_demo_on_local_task_matches_numpy(demo: str) -> None:
    session = _run_session(f"demo:{demo}", "local-task", 2)
    outputs = session.outcome.outputs
    expected = DEMOS[demo].reference(session.outcome.inputs)
    scale = float(np.abs(expected[0]).max())
    assert outputs[0].shape == expected[0].shape
    assert float(np.abs(outputs[0] - expected[0]).max()) <= 1e-4 * scale
    assert session.outcome.check is not None and session.outcome.check.passed
    snap = session.snapshot
    assert snap.state == "finished" and snap.calls.count == 2


def test_mlp_on_lavapipe_matches_numpy(vulkan_device: str) -> None:
    session = _run_session("demo:mlp", vulkan_device, 1)
    expected = DEMOS["mlp"].reference(session.outcome.inputs)
    np.testing.assert_allclose(session.outcome.outputs[0], expected[0], atol=1e-4 * float(np.abs(expected[0]).max()))


@pytest.mark.slow
def test_conv_on_lavapipe_matches_numpy(vulkan_device: str) -> None:
    # ~50 s a call on lavapipe with 2 cores: the first call only.
    session = _run_session("demo:conv", vulkan_device, 0)
    expected = DEMOS["conv"].reference(session.outcome.inputs)
    np.testing.assert_allclose(session.outcome.outputs[0], expected[0], atol=1e-4 * float(np.abs(expected[0]).max()))


def test_run_json_report_has_the_contract_keys() -> None:
    proc, report = run_json("demo:mlp", "--device", "cpu", "--iterations", "5")
    assert proc.returncode == 0, proc.stderr
    assert report.keys() >= REPORT_KEYS
    assert set(report["phases"]) >= PHASES
    assert all(report["phases"][k] is not None for k in PHASES)
    assert set(report["calls"]) >= CALL_KEYS and report["calls"]["count"] == 5
    assert report["calls"]["min_ms"] <= report["calls"]["p50_ms"] <= report["calls"]["max_ms"]
    assert report["kernels"] == [] and report["captures"] == []
    # One device: mlp's one result, produced and exported there (issue 57; before it, `exports` was []).
    assert [(r["function"], r["value_type"], r["export_affinity"], r["flag"]) for r in report["exports"]] == [
        ("mlp", "256x256xf32", "local-task", None)
    ]
    assert report["device"]["id"] == "local-task"
    assert report["check"]["passed"] is True
    [memory] = report["memory"]["devices"]
    assert memory["peak_live_bytes"] >= 256 * 1024 * 4  # at least the inputs' size
    assert report["memory"]["host_rss_peak_bytes"] > 0


def test_human_report_on_stdout() -> None:
    from conftest import run_gputop

    proc = run_gputop("run", "demo:mlp", "--device", "cpu", "-n", "3")
    assert proc.returncode == 0, proc.stderr
    assert "calls     3 synced" in proc.stdout
    assert "check     PASSED" in proc.stdout
    assert "compiling demo:mlp" in proc.stderr  # progress lines


def test_vmfb_skips_compilation(tmp_path: object) -> None:
    _, first = run_json("demo:mlp", "--device", "cpu", "-n", "1")
    vmfb = first["compile"]["vmfb"]
    proc, report = run_json(vmfb, "--device", "cpu", "-n", "1")
    assert proc.returncode == 0, proc.stderr
    assert report["phases"]["compile_s"] == 0.0 and report["function"] == "mlp"
    assert report["outputs"][0]["shape"] == [256, 256]


def test_pipeline_demo_on_two_local_devices() -> None:
    proc, report = run_json("demo:pipeline", "--device", "cpu", "-n", "2")
    assert proc.returncode == 0, proc.stderr
    assert report["check"]["passed"]
    assert [d["device_id"] for d in report["memory"]["devices"]] == ["local-task#0", "local-task#1"]


def test_given_inputs_are_used() -> None:
    proc, report = run_json(
        "demo:pipeline",
        "--device",
        "cpu",
        "-n",
        "1",
        "--input",
        "256x512xf32=1",
        "--input",
        "512x512xf32=0.5",
        "--input",
        "512x256xf32=2",
    )
    assert proc.returncode == 0, proc.stderr
    # every output element is 512 * (512 * 0.5) * 2
    out = report["outputs"][0]
    assert out["min"] == out["max"] == pytest.approx(512 * 256 * 2)


@pytest.mark.parametrize(
    ("argv", "target", "level"),
    [
        (["run", "--profile", "demo:mlp"], "demo:mlp", "default"),  # the flag alone before the target
        (["run", "demo:mlp", "--profile"], "demo:mlp", "default"),
        (["run", "demo:mlp", "--profile", "full"], "demo:mlp", "full"),
        (["run", "--profile", "full", "demo:mlp"], "demo:mlp", "full"),
        (["run", "demo:mlp", "--profile=full"], "demo:mlp", "full"),
        (["run", "demo:mlp"], "demo:mlp", None),
    ],
)
def test_profile_takes_its_level_only_when_one_follows(argv: list[str], target: str, level: str | None) -> None:
    from gputop.tui.cli import build_parser, command_parser
    from gputop.tui.cli.optional_values import optional_values_alone

    args = build_parser().parse_args([argv[0], *optional_values_alone(command_parser(argv[0]), argv[1:])])
    assert (args.target, args.profile) == (target, level)
