"""What a new user trips on first: the command line's answers to a first run's mistakes and questions.

Each test runs the real `gputop` command line in a child process (`run_gputop`) and reads what a
person would: its exit code, its lines, `gputop sessions`, and the TUI's header over a recorded or a
live run. A failed output check is the run's state everywhere (stderr names the first wrong
elements, `gputop sessions` lists it, the header shows it in red); `gputop --version` answers;
an optional-value flag (`--capture [N]`, `--profile [LEVEL]`) never takes the target for its value;
a usage error leaves no session behind; and `gputop sessions` fits the terminal and narrows.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import assert_one_line_error, run_gputop

CPU = ("--device", "local-task")
ID_MLIR = "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n"


def bad_reference(folder: Path) -> Path:
    """A reference demo:mlp's one 256x256 output is not: zeros."""
    path = folder / "ref_bad.npy"
    np.save(path, np.zeros((256, 256), np.float32))
    return path


def sessions_json(env: dict[str, str]) -> list[dict[str, Any]]:
    proc = run_gputop("sessions", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    rows: list[dict[str, Any]] = json.loads(proc.stdout)
    return rows


# -- 1. a failed check is a state of the run ----------------------------------------------------------


def test_a_failed_check_names_its_first_wrong_elements(tmp_path: Path) -> None:
    """One error line with the count, then the first few wrong elements (index, got, expected), one line each."""
    proc = run_gputop("run", "demo:mlp", *CPU, "-n", "1", "--check", str(bad_reference(tmp_path)), "--quiet")
    error = assert_one_line_error(proc, 6, "outputs do not match the reference", "ref_bad.npy", "65536 elements differ")
    lines = proc.stderr.splitlines()
    at = lines.index(error)
    shown = [line for line in lines[at + 1 :] if line.startswith("gputop:   output 0 [")]
    assert 1 <= len(shown) <= 5, proc.stderr
    assert shown[0].startswith("gputop:   output 0 [0,0]: got ") and shown[0].endswith(", expected 0"), shown
    assert f"gputop:   ... and {65536 - len(shown)} more" in lines, proc.stderr
    report = run_gputop("report", Path(proc.stdout.split("session   ")[1].split()[0]).name, "--json", "-")
    check = json.loads(report.stdout)["check"]
    assert check["first_mismatch"] == check["first_mismatches"][0]  # the report's key is kept, and agrees
    assert len(check["first_mismatches"]) == len(shown)


def test_a_failed_check_is_the_state_gputop_sessions_lists(tmp_path: Path) -> None:
    env = {"GPUTOP_STATE_DIR": str(tmp_path / "state")}
    ok = run_gputop("run", "demo:mlp", *CPU, "-n", "1", "--quiet", env=env)
    failed = run_gputop("run", "demo:mlp", *CPU, "-n", "1", "--check", str(bad_reference(tmp_path)), "--quiet", env=env)
    assert (ok.returncode, failed.returncode) == (0, 6), failed.stderr
    rows = sessions_json(env)
    assert [row["state"] for row in rows] == ["finished", "check failed"]
    keys = {"id", "path", "started_at", "target", "device", "state", "duration_s", "exit_code", "samples"}
    assert set(rows[1]) == keys  # the same keys as ever: the state's value says it
    manifest = json.loads((Path(rows[1]["path"]) / "manifest.json").read_text())
    assert manifest["state"] == "finished" and manifest["check"] == "failed" and manifest["exit_code"] == 6
    table = run_gputop("sessions", env=env).stdout
    [line] = [line for line in table.splitlines() if rows[1]["id"] in line]
    assert "check failed (6)" in line, table


def _header_cell(header: Any, text: str) -> Any:
    """The style of the header's first drawn segment holding `text` (what the screen shows, colours and all)."""
    for y in range(header.size.height):
        for segment in header.render_line(y):
            if text in segment.text:
                return segment.style
    raise AssertionError(f"{text!r} is not in the header: {header.render()}")


def _on_red(style: Any) -> bool:
    from rich.color import Color

    return style.bgcolor is not None and style.bgcolor.get_truecolor() == Color.parse("red").get_truecolor()


async def test_gputop_open_shows_a_failed_check_in_red(tmp_path: Path) -> None:
    """A recorded run whose check failed opens with `check failed` as its state, in red (`gputop open`'s replay)."""
    from tui_pilot import until_drawn, wait_for

    from gputop.core.store.reader import read_tail
    from gputop.tui.app import GputopApp
    from gputop.tui.bridge import ReplaySource
    from gputop.tui.cli.open import OPEN_SNAPSHOTS
    from gputop.tui.panes.header import HeaderBar

    folder = tmp_path / "s"
    proc = run_gputop("run", "demo:mlp", *CPU, "-n", "2", "--check", str(bad_reference(tmp_path)),
                      "--session-dir", str(folder), "--quiet")  # fmt: skip
    assert proc.returncode == 6, proc.stderr
    app = GputopApp(ReplaySource(read_tail(folder, OPEN_SNAPSHOTS)))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.state == "finished")
        await until_drawn(pilot, app)
        header = app.query_one(HeaderBar)
        assert " check failed " in str(header.render()) and " finished " not in str(header.render())
        assert _on_red(_header_cell(header, "check failed"))


async def test_the_live_header_shows_a_failed_check_in_red(tmp_path: Path) -> None:
    """While the calls go on after a failed check, the state says both: `running, check failed`, in red."""
    from tui_pilot import live_app, wait_for

    from gputop.tui.panes.header import HeaderBar

    app = live_app(checks=(bad_reference(tmp_path),))
    async with app.run_test(size=(120, 40)) as pilot:
        header = app.query_one(HeaderBar)
        await wait_for(pilot, lambda: "running, check failed" in str(header.render()), timeout=120)
        assert _on_red(_header_cell(header, "running, check failed"))


# -- 2. gputop --version -------------------------------------------------------------------------------


def test_version_prints_the_installed_version() -> None:
    proc = run_gputop("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"gputop {importlib.metadata.version('gputop')} "), proc.stdout
    assert len(proc.stdout.splitlines()) == 1 and not proc.stderr


# -- 3. an optional-value flag never takes the target ----------------------------------------------------

# Every optional-value flag (nargs='?') of every command, and what shows it was given alone.
OPTIONAL_VALUE_FLAGS = {("run", "--capture"), ("run", "--profile")}


@pytest.mark.parametrize(
    "argv",
    [
        ["--capture", "demo:mlp"],
        ["--capt", "demo:mlp"],
        ["--profile", "demo:mlp"],
        ["--capture", "--profile", "demo:mlp"],
    ],
    ids=["--capture", "--capture abbreviated", "--profile", "both"],
)
def test_an_optional_value_flag_before_the_target_takes_its_default(argv: list[str]) -> None:
    """`gputop run --capture demo:mlp` read the target as --capture's N (`invalid int value: 'demo:mlp'`)."""
    proc = run_gputop("run", *argv, *CPU, "-n", "1", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["target"] == "demo:mlp"
    if any(flag.startswith("--capt") for flag in argv):  # N = 1: asked for, and refused off Vulkan with why
        assert "gputop: capture: RenderDoc captures Vulkan" in proc.stderr, proc.stderr
    if "--profile" in argv:
        assert report["profile"] is not None


def test_every_optional_value_flag_is_covered() -> None:
    """A new flag with an optional value is read the same way (options.optional_values_alone), and listed here."""
    from gputop.tui.cli import COMMANDS, build_tui_parser, command_parser

    found = {
        (spec.name, action.option_strings[-1])
        for spec in COMMANDS
        for action in command_parser(spec.name)._actions
        if action.nargs == argparse.OPTIONAL and action.option_strings
    }
    found |= {
        ("tui", action.option_strings[-1])
        for action in build_tui_parser()._actions
        if action.nargs == argparse.OPTIONAL and action.option_strings
    }
    assert found == OPTIONAL_VALUE_FLAGS


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--capture", "3", "demo:mlp"], ("demo:mlp", 3, None)),  # a value it takes is its value
        (["demo:mlp", "--capture"], ("demo:mlp", 1, None)),
        (["--capture=2", "demo:mlp"], ("demo:mlp", 2, None)),
        (["--profile", "full", "demo:mlp"], ("demo:mlp", 0, "full")),
        (["--capture", "--profile", "demo:mlp"], ("demo:mlp", 1, "default")),
        (["--profile", "demo:conv", "--capture"], ("demo:conv", 1, "default")),
    ],
)
def test_optional_values_are_read_only_where_given(argv: list[str], expected: tuple[object, ...]) -> None:
    from gputop.tui.cli import build_parser, command_parser
    from gputop.tui.cli.optional_values import optional_values_alone

    args = build_parser().parse_args(["run", *optional_values_alone(command_parser("run"), argv)])
    assert (args.target, args.capture, args.profile) == expected


# -- 4. a usage error records no session ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--calls", "notanumber"], "unrecognized arguments"),
        (["-n", "many"], "invalid int value"),
        (["--check", "/nonexistent/ref.npy"], "reference /nonexistent/ref.npy: no such file"),
        (["--input", "@/nonexistent/x.npy"], "input file /nonexistent/x.npy: no such file"),
        (["--params", "/nonexistent/p.irpa"], "parameter file /nonexistent/p.irpa: no such file"),
        (["--json", "/nonexistent/folder/report.json"], "cannot write /nonexistent/folder/report.json"),
        # Only the module can tell these: the session made for the run is discarded.
        (["--function", "nope"], "no function 'nope'"),
        (["--input", "4xf32=1"], "mlp takes 4 inputs"),
    ],
    ids=["unknown flag", "bad int", "missing reference", "missing input", "missing params", "unwritable --json",
         "unknown function", "input count"],
)  # fmt: skip
def test_a_usage_error_records_no_session(tmp_path: Path, argv: list[str], fragment: str) -> None:
    env = {"GPUTOP_STATE_DIR": str(tmp_path / "state")}
    before = run_gputop("run", "demo:mlp", *CPU, "-n", "1", "--quiet", env=env)
    assert before.returncode == 0, before.stderr
    listed = sessions_json(env)
    proc = run_gputop("run", "demo:mlp", *CPU, "-n", "1", *argv, env=env)
    assert proc.returncode == 2 and fragment in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "session   " not in proc.stdout  # no session to point at
    assert sessions_json(env) == listed
    assert sorted(os.listdir(tmp_path / "state" / "sessions")) == [row["id"] for row in listed]


def test_a_usage_error_in_gputop_serve_records_no_session(tmp_path: Path) -> None:
    env = {"GPUTOP_STATE_DIR": str(tmp_path / "state")}
    proc = run_gputop("serve", "demo:mlp", *CPU, "--function", "nope", "--metrics-port", "0", "--quiet", env=env)
    assert_one_line_error(proc, 2, "no function 'nope'")
    assert sessions_json(env) == []


def test_a_session_dir_given_is_kept_after_a_usage_error(tmp_path: Path) -> None:
    """--session-dir names the user's own folder: the record of even a usage error stays there."""
    folder = tmp_path / "mine"
    proc = run_gputop("run", "demo:mlp", *CPU, "-n", "1", "--function", "nope", "--session-dir", str(folder))
    assert_one_line_error(proc, 2, "no function 'nope'")
    assert json.loads((folder / "manifest.json").read_text())["exit_code"] == 2


# -- 5. gputop sessions fits the terminal, and narrows ----------------------------------------------------


def _deep_model(tmp_path: Path) -> Path:
    deep = tmp_path / ("a-folder-with-a-long-name-" * 4) / "and-deeper-still" / "models"
    deep.mkdir(parents=True)
    model = deep / "identity.mlir"
    model.write_text(ID_MLIR)
    return model


def test_sessions_fit_80_columns_in_a_pipe_keeping_the_file_name(tmp_path: Path) -> None:
    """Into a pipe (no terminal, no $COLUMNS) rows fit 80 columns; a long target keeps its tail, whole ids."""
    env = {"GPUTOP_STATE_DIR": str(tmp_path / "state"), "COLUMNS": ""}
    model = _deep_model(tmp_path)
    for target in (str(model), "demo:mlp"):
        proc = run_gputop("run", target, *CPU, "-n", "1", "--quiet", env=env)
        assert proc.returncode == 0, proc.stderr
    rows = sessions_json(env)
    table = run_gputop("sessions", env=env)
    lines = table.stdout.splitlines()
    assert len(lines) == 3 and max(len(line) for line in lines) <= 80, table.stdout
    [row] = [line for line in lines if rows[0]["id"] in line]
    assert "…/models/identity.mlir" in row or "…/identity.mlir" in row, row
    assert all(any(r["id"] in line for line in lines) for r in rows)
    narrow = run_gputop("sessions", env={**env, "COLUMNS": "60"})
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 60, narrow.stdout
    wide = run_gputop("sessions", "--wide", env=env)
    assert str(model) in wide.stdout


def test_sessions_narrow_by_target_and_last(tmp_path: Path) -> None:
    env = {"GPUTOP_STATE_DIR": str(tmp_path / "state")}
    model = _deep_model(tmp_path)
    for target in ("demo:mlp", str(model), "demo:mlp"):
        proc = run_gputop("run", target, *CPU, "-n", "1", "--quiet", env=env)
        assert proc.returncode == 0, proc.stderr
    every = sessions_json(env)
    ids = [row["id"] for row in every]

    def listed(*args: str) -> list[str]:
        proc = run_gputop("sessions", *args, "--json", env=env)
        assert proc.returncode == 0, proc.stderr
        rows = json.loads(proc.stdout)
        assert all(set(row) == set(every[0]) for row in rows)  # the same keys, only fewer rows
        return [row["id"] for row in rows]

    assert listed("--target", "IDENTITY") == [ids[1]]
    assert listed("--target", "mlp") == [ids[0], ids[2]]
    assert listed("--last", "2") == ids[1:]
    assert listed("--target", "demo:", "--last", "1") == [ids[2]]
    assert listed("--last", "9") == ids
    text = run_gputop("sessions", "--target", "mlp", "--last", "1", env=env).stdout.splitlines()
    assert len(text) == 2 and ids[2] in text[1]
    none = run_gputop("sessions", "--target", "resnet", env=env)
    assert none.returncode == 0 and "no sessions whose target contains 'resnet' (3 in all" in none.stdout
    assert_one_line_error(run_gputop("sessions", "--last", "0", env=env), 2, "--last 0")
