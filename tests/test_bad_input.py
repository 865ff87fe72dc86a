"""Every bad input in one table: its exit code and one line, never a traceback or a hang.

Each row builds its bad input for real (files on disk, a FIFO, a 3 GiB sparse
file, a module that allocates beyond the machine) and runs the real `gputop`
command line in a child process with a timeout, so a hang fails the test.
The "When things go wrong" table of docs/sessions.md lists the same cases.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from conftest import assert_one_line_error, run_gputop

ID_MLIR = "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n"
BAD_MLIR = "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32\n}\n"
# An op no IREE target lowers: a call to a function that does not exist anywhere.
UNCOMPILABLE_MLIR = (
    "func.func private @nowhere(tensor<4xf32>) -> tensor<4xf32>\n"
    "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
    "  %r = func.call @nowhere(%a) : (tensor<4xf32>) -> tensor<4xf32>\n"
    "  return %r : tensor<4xf32>\n}\n"
)
# Allocates as many f32 as its input says: 10^11 of them is 400 GB, beyond any machine here.
ALLOCATE_MLIR = """func.func @big(%t: tensor<1xi64>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %v = tensor.extract %t[%c0] : tensor<1xi64>
  %n = arith.index_cast %v : i64 to index
  %e = tensor.empty(%n) : tensor<?xf32>
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  return %f : tensor<?xf32>
}
"""
PARAM_MLIR = """util.global private @weight = #flow.parameter.named<"model"::"weight"> : tensor<4xf32>
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = util.global.load @weight : tensor<4xf32>
  %r = arith.mulf %x, %w : tensor<4xf32>
  return %r : tensor<4xf32>
}
"""
RDC_FIXTURE = Path(__file__).parent / "data" / "scale_vulkan_h200.rdc"


def write(path: Path, data: str | bytes) -> Path:
    if isinstance(data, str):
        path.write_text(data)
    else:
        path.write_bytes(data)
    return path


def irpa_with(path: Path, **buffers: np.ndarray) -> Path:
    import iree.runtime as rt

    index = rt.ParameterIndex()
    for key, array in buffers.items():
        index.add_buffer(key, array.tobytes())
    index.create_archive_file(str(path))
    return path


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as handle:
        handle.truncate(size)
    return path


@dataclass(frozen=True)
class Case:
    name: str
    argv: Callable[[Path], list[str]]
    exit_code: int
    fragments: tuple[str, ...]
    needs: str | None = None  # "vulkan", "renderdoccmd", "non-root"


CPU = ["--device", "cpu", "-n", "1"]

CASES = [
    # -- files --------------------------------------------------------------------------------------
    Case("missing file", lambda t: ["run", str(t / "absent.mlir"), *CPU], 2, ("absent.mlir: no such file",)),
    Case(
        "directory",
        lambda t: ["run", str((t / "dir.mlir").mkdir() or t / "dir.mlir"), *CPU],
        2,
        ("is a directory",),
    ),
    Case(
        "unreadable file",
        lambda t: ["run", str(write(t / "secret.mlir", ID_MLIR).chmod(0) or t / "secret.mlir"), *CPU],
        2,
        ("permission denied",),
        needs="non-root",
    ),
    Case("FIFO (would block a reader)", lambda t: ["run", str(fifo(t / "pipe.mlir")), *CPU], 2, ("not a regular",)),
    Case("empty .mlir", lambda t: ["run", str(write(t / "e.mlir", "")), *CPU], 2, ("file is empty",)),
    Case("empty .vmfb", lambda t: ["run", str(write(t / "e.vmfb", b"")), *CPU], 2, ("file is empty",)),
    Case("binary as .mlir", lambda t: ["run", str(write(t / "b.mlir", bytes(range(256)) * 4)), *CPU], 2, ("binary",)),
    Case("huge file", lambda t: ["run", str(sparse(t / "huge.mlir", 3 << 30)), *CPU], 2, ("too large", "2 GiB")),
    Case("wrong extension", lambda t: ["run", str(write(t / "m.txt", "hi")), *CPU], 2, ("expected a .mlir",)),
    Case("unknown demo", lambda t: ["run", "demo:nope"], 2, ("unknown demo",)),
    # -- compile ------------------------------------------------------------------------------------
    Case(
        "MLIR syntax error",
        lambda t: ["run", str(write(t / "bad.mlir", BAD_MLIR)), *CPU],
        3,
        ("bad.mlir:2:27:", "expected '>'", "`return %a : tensor<4xf32`", "full log:"),
    ),
    Case(
        "op the target cannot compile",
        lambda t: ["run", str(write(t / "call.mlir", UNCOMPILABLE_MLIR)), *CPU, "--no-cache"],
        3,
        ("call.mlir",),
    ),
    Case(
        "compiler crash",
        lambda t: [
            "run",
            "demo:mlp",
            "--device",
            "vulkan",
            "--no-cache",
            "--target-flags",
            "--iree-hal-target-device=vulkan --iree-vulkan-target=sm_90",
        ],
        3,
        ("crashed", "ampere"),
        needs="vulkan",
    ),
    # -- devices ------------------------------------------------------------------------------------
    Case("device that does not exist", lambda t: ["run", "demo:mlp", "--device", "vulkan:9"], 4, ("vulkan:9",)),
    Case("unknown backend", lambda t: ["run", "demo:mlp", "--device", "tpu"], 4, ("tpu",)),
    Case(
        "out of memory (allocates 400 GB)",
        lambda t: ["run", str(write(t / "big.mlir", ALLOCATE_MLIR)), *CPU, "--input", "1xi64=100000000000"],
        5,
        ("ran out of memory",),
    ),
    Case(
        "input larger than the host's memory",
        lambda t: ["run", str(write(t / "id.mlir", ID_MLIR)), *CPU, "--input", "100000000000xf32=0"],
        5,
        ("out of memory", "GiB"),
    ),
    # -- inputs -------------------------------------------------------------------------------------
    Case(
        "too few inputs",
        lambda t: ["run", "demo:mlp", *CPU, "--input", "256x1024xf32=1"],
        2,
        ("takes 4 inputs (256x1024xf32, 1024x1024xf32, 1024x512xf32, 512x256xf32), 1 given",),
    ),
    Case(
        "wrong input shape",
        lambda t: (
            ["run", "demo:mlp", *CPU]
            + [a for s in ("2x2xf32=1", "1024x1024xf32=1", "1024x512xf32=1", "512x256xf32=1") for a in ("--input", s)]
        ),
        2,
        ("input 0 has shape 2x2",),
    ),
    Case(
        "wrong input dtype",
        lambda t: ["run", str(write(t / "id.mlir", ID_MLIR)), *CPU, "--input", f"@{_npy(t, np.int32)}"],
        2,
        ("dtype int32",),
    ),
    Case("unknown element type", lambda t: ["run", "demo:mlp", *CPU, "--input", "4xq9=1"], 2, ("bad --input",)),
    Case("missing input file", lambda t: ["run", "demo:mlp", *CPU, "--input", "@/nope.npy"], 2, ("no such file",)),
    Case("unknown function", lambda t: ["run", "demo:mlp", *CPU, "--function", "nope"], 2, ("no function 'nope'",)),
    # -- parameters ---------------------------------------------------------------------------------
    Case(
        "parameter file missing a key",
        lambda t: [
            "run",
            str(write(t / "p.mlir", PARAM_MLIR)),
            *CPU,
            "--input",
            "4xf32=1",
            "--params",
            str(irpa_with(t / "other.irpa", bias=np.ones(4, np.float32))),
        ],
        5,
        ("needs parameter 'weight'", "other.irpa"),
    ),
    Case(
        "corrupt .irpa",
        lambda t: ["run", str(write(t / "id.mlir", ID_MLIR)), *CPU, "--params", str(write(t / "j.irpa", b"x" * 999))],
        5,
        ("j.irpa: not a valid irpa",),
    ),
    # -- corrupt artefacts --------------------------------------------------------------------------
    Case("corrupt .vmfb", lambda t: ["run", str(write(t / "j.vmfb", b"not a module" * 20)), *CPU], 5, ("not a valid",)),
    Case("corrupt .ireeprof", lambda t: ["profile-info", str(write(t / "j.ireeprof", b"RIFF" + bytes(200)))], 5, ()),
    Case("empty .ireeprof", lambda t: ["profile-info", str(write(t / "e.ireeprof", b""))], 5, ("empty profile",)),
    Case(
        "truncated .rdc",
        lambda t: ["capture-info", str(write(t / "cut.rdc", RDC_FIXTURE.read_bytes()[:4096]))],
        5,
        ("cut.rdc",),
        needs="renderdoccmd",
    ),
    Case(
        "not an .rdc", lambda t: ["capture-info", str(write(t / "p.rdc", b"\x89PNG" + bytes(500)))], 5, ("not a Ren",)
    ),
    Case(
        "bad OpenCL run spec", lambda t: ["run", str(write(t / "s.toml", "[[kernel\n")), *CPU], 2, ("not valid TOML",)
    ),
    # -- sessions -----------------------------------------------------------------------------------
    Case("unknown session", lambda t: ["report", "no-such-session"], 2, ("no such session",)),
    Case("folder that is not a session", lambda t: ["report", str(t)], 2, ("not a gputop session",)),
    Case("corrupt manifest", lambda t: ["report", str(_session_with(t, "{not json"))], 2, ("unreadable manifest",)),
]


def _npy(folder: Path, dtype: type) -> Path:
    path = folder / "wrong.npy"
    np.save(path, np.ones(4, dtype))
    return path


def _session_with(folder: Path, manifest: str) -> Path:
    session = folder / "s"
    session.mkdir()
    (session / "manifest.json").write_text(manifest)
    return session


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input(case: Case, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if case.needs == "vulkan":
        request.getfixturevalue("vulkan_device")
    if case.needs == "renderdoccmd" and not Path("/usr/bin/renderdoccmd").exists():
        pytest.skip("renderdoccmd is not installed")
    if case.needs == "non-root" and os.geteuid() == 0:
        pytest.skip("root reads any file: permission errors cannot happen")
    proc = run_gputop(*case.argv(tmp_path), timeout=300)
    assert_one_line_error(proc, case.exit_code, *case.fragments)


def test_usage_error_exit_code() -> None:
    proc = run_gputop("run", "--iterations", "many")
    assert proc.returncode == 2 and "invalid int value" in proc.stderr


def test_module_compiled_for_another_device(tmp_path: Path) -> None:
    from gputop.core.module.compile import compile_module
    from gputop.core.module.demos import DEMOS
    from gputop.core.module.targets import VULKAN_DEFAULT_FLAGS

    compiled = compile_module(Path("mlp.mlir"), VULKAN_DEFAULT_FLAGS, source_bytes=DEMOS["mlp"].source())
    proc = run_gputop("run", str(compiled.vmfb_path), "--device", "cpu")
    assert_one_line_error(proc, 5, "compiled for vulkan, not for local-task")


@pytest.mark.parametrize("argv", [["--help"], ["devices", "--json"], ["sessions", "--json"]])
def test_reader_leaving_early_is_quiet(argv: list[str]) -> None:
    """`gputop ... | head`: the closed pipe ends gputop with 141 (as SIGPIPE would), silently."""
    writer = subprocess.Popen(
        [sys.executable, "-m", "gputop.tui", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert writer.stdout is not None and writer.stderr is not None
    writer.stdout.close()  # the reader leaves while gputop is still starting (a second of imports)
    stderr = writer.stderr.read().decode()
    assert writer.wait(timeout=120) == 141, stderr
    assert stderr == "", stderr


@pytest.mark.parametrize("command", ["run", "serve", "sessions", "devices"])
def test_every_command_help_says_what_it_does(command: str) -> None:
    """`gputop COMMAND --help` has a description paragraph between its usage and its arguments."""
    proc = run_gputop(command, "--help", env={"COLUMNS": "100"})
    assert proc.returncode == 0, proc.stderr
    paragraphs = proc.stdout.split("\n\n")
    assert paragraphs[0].startswith(f"usage: gputop {command}")
    assert not paragraphs[1].startswith(("positional arguments:", "options:")), proc.stdout[:600]
    if command in ("run", "serve"):
        assert paragraphs[1].startswith("Run TARGET headless"), paragraphs[1]
