"""A watched program's kernels carry their source ops, or why not, named as `gputop run` names them (issue 57, 4).

A profile of a watched program's calls came with `source_ops: null` and `source_ops_reason: null` on
every kernel. The program here is a real one (`tests/programs/load_and_call.py`, driven as
tests/test_program_profile.py drives it, paused after loading until the profile is asked for), run
from an environment without gputop under gputop's real engine (`ProgramHost`, as `gputop run -- CMD`
makes it). Without a GPU the program's watcher records the profile through the stand-in CUPTI of
test_program_profile.py, and the request goes to the watcher as the engine sends it, past the engine's
own refusal (the program's devices are local-task, not CUDA); on a GPU machine
`test_a_cuda_programs_kernels_are_named_through_the_real_command` runs `gputop run --profile -- python
...` itself with the real CUPTI. Independent source of the names: the model's own `.mlir` text, whose
line and column each source op must point at.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from program_env import PROGRAMS
from test_program_profile import (
    DRIVER,
    cuda_unavailable_reason,
    fake_cupti,
    profile_request,
    program_python_version,
    runtime_only_folder,
)

from gputop.core.program.profile import PROFILE_CALLS, PROFILE_WARMUP_CALLS

sys.path.insert(0, str(PROGRAMS))
import make_assets

KERNEL = "main_dispatch_0_matmul_32x512x512_f32"  # the stand-in CUPTI's kernel: the module's one dispatch
SOURCES_FLAGS = ("--iree-hal-dump-executable-sources-to={}", "--mlir-print-debuginfo")  # what gputop tells users


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A folder with a short path: the watcher's Unix socket lives under the session's folder."""
    folder = Path(tempfile.mkdtemp(prefix="gputop-kn-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def compile_with_sources(folder: Path, target: tuple[str, ...]) -> Path:
    """The program's model compiled as gputop's line tells a user to: model.sources/ kept beside model.vmfb."""
    folder.mkdir(parents=True, exist_ok=True)
    source, vmfb = folder / "model.mlir", folder / "model.vmfb"
    source.write_text(make_assets.MLIR)
    flags = [SOURCES_FLAGS[0].format(folder / "model.sources"), SOURCES_FLAGS[1]]
    compiler = Path(sys.executable).parent / "iree-compile"
    proc = subprocess.run(
        [str(compiler), str(source), *target, *flags, "-o", str(vmfb)], capture_output=True, text=True, cwd=folder
    )
    assert proc.returncode == 0, proc.stderr
    assert any((folder / "model.sources").glob("*.mlir"))
    return vmfb


def watched_profile(python: Path, vmfb: Path, irpa: Path, folder: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The driven program under the real engine, its next calls profiled; the session's report."""
    from gputop.core.program.program_host import ProgramHost

    shim = fake_cupti(folder / "shim")
    driver = folder / "app.py"
    driver.write_text(DRIVER.format(programs=str(PROGRAMS)))
    go = folder / "go"
    for name, value in {
        "GO_FILE": str(go), "SIDE_FILE": str(folder / "side.json"), "FAKE_CUPTI_LOG": str(folder / "cupti.log"),
        "PRETEND_CUDA": "1",
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    host = ProgramHost([str(python), str(driver), str(vmfb), str(irpa), "40"], session_dir=folder / "session")
    host.start()
    session = host.session
    deadline = time.monotonic() + 120
    while (session._agent is None or not session.snapshot.device_ids) and time.monotonic() < deadline:
        time.sleep(0.05)
    agent = session._agent
    assert agent is not None, session.snapshot.events
    # As the engine sends it (WatchedProcess.request_profile), to the real watcher in the program.
    calls = PROFILE_CALLS + PROFILE_WARMUP_CALLS
    assert agent.send(profile_request(calls, [str(shim)], program_python_version(python)))
    time.sleep(0.5)  # the watcher arms the profile on its own thread before the calls start
    go.touch()
    assert host.wait(180), session.snapshot.events
    return session.report or session.current_report()


def kernels_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    kernels = report["kernels"]
    assert kernels, [e["message"] for e in report.get("events", [])] if "events" in report else report.keys()
    return kernels


def test_a_module_loaded_from_a_file_with_sources_beside_names_its_kernels(
    program_python: Path, program_assets: tuple[Path, Path], short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
              "--iree-llvmcpu-target-cpu=generic")  # fmt: skip
    vmfb = compile_with_sources(short_dir / "model", target)
    report = watched_profile(program_python, vmfb, program_assets[1], short_dir, monkeypatch)
    [kernel] = kernels_of(report)
    assert kernel["name"] == KERNEL
    assert kernel["source_ops_reason"] is None
    assert kernel["source_ops"], kernel
    lines = make_assets.MLIR.splitlines()  # the file the compiler read: every loc points into it
    for op in kernel["source_ops"]:
        file, line, column = op["loc"].rsplit(":", 2)
        assert file == "model.mlir"
        assert lines[int(line) - 1][int(column) - 1 :].startswith(op["op"]), (op, lines[int(line) - 1])
    assert {op["op"] for op in kernel["source_ops"]} == {"linalg.matmul"}
    assert report["layers"][0]["name"] == kernel["source_ops"][0]["loc"]


def test_a_module_without_sources_says_why_its_kernels_have_none(
    program_python: Path, program_assets: tuple[Path, Path], short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vmfb = short_dir / "bare" / "model.vmfb"
    vmfb.parent.mkdir()
    shutil.copy(program_assets[0], vmfb)  # the module alone: no model.sources/ beside it
    report = watched_profile(program_python, vmfb, program_assets[1], short_dir, monkeypatch)
    [kernel] = kernels_of(report)
    assert kernel["source_ops"] is None
    reason = kernel["source_ops_reason"]
    # gputop run's own line for a .vmfb without sources, with how to compile one that has them.
    assert reason.startswith("model.vmfb carries no map from its kernels to the model's ops"), reason
    assert "--iree-hal-dump-executable-sources-to=model.sources --mlir-print-debuginfo" in reason


def prepare_cuda_sources(folder: Path) -> Path:
    """model.vmfb for CUDA (sm_80: H100/H200) with model.sources/ and model.work.json beside it, and model.irpa:
    made where the compiler is, for the GPU machines, which have none to read the sources with (the work file
    carries the ops' locations). Returns the folder.

    On the CPU machine: `python -c 'import sys; sys.path[:0] = ["tests", "tests/programs"]; from pathlib import
    Path; from test_program_kernel_names import prepare_cuda_sources as p; p(Path(".device/kernel_names"))'`
    """
    import iree.runtime as rt

    from gputop.core.profiling.work.ir_count import module_work

    vmfb = compile_with_sources(folder, ("--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80"))
    assert module_work(vmfb).with_locs and vmfb.with_suffix(".work.json").is_file()
    index = rt.ParameterIndex()
    for name, value in make_assets.weights().items():
        index.add_buffer(name, value.tobytes())
    index.create_archive_file(str(folder / "model.irpa"))
    return folder


@pytest.mark.gpu
def test_a_cuda_programs_kernels_are_named_through_the_real_command(short_dir: Path) -> None:
    """GPU machines: `gputop run --profile -- python load_and_call.py model.vmfb ...` with the real CUPTI.

    The program runs in an environment of its own (iree.runtime and what it needs, not gputop), as
    test_program_profile.py's GPU test runs it; its module comes from GPUTOP_TEST_CUDA_SOURCES
    (`prepare_cuda_sources`), or is compiled here where the compiler is.
    """
    reason = cuda_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    ready = os.environ.get("GPUTOP_TEST_CUDA_SOURCES")
    if ready:
        folder = Path(ready)
    elif (Path(sys.executable).parent / "iree-compile").exists():
        folder = prepare_cuda_sources(short_dir / "model")
    else:
        pytest.skip("no CUDA module with sources: set GPUTOP_TEST_CUDA_SOURCES (prepare_cuda_sources)")
    runtime = runtime_only_folder(short_dir / "runtime")
    python = short_dir / "python"
    # The program's path: gputop's watcher folder (the first entry gputop puts on it) and the runtime alone, not
    # whatever gputop itself was found on (on the GPU machines, PYTHONPATH holds gputop and every wheel).
    python.write_text(f'#!/bin/sh\nPYTHONPATH="${{PYTHONPATH%%:*}}:{runtime}" exec "{sys.executable}" -s "$@"\n')
    python.chmod(0o755)
    out = short_dir / "report.json"
    env = {k: v for k, v in os.environ.items() if k == "PYTHONPATH" or not k.startswith(("PYTHON", "GPUTOP_WATCH"))}
    proc = subprocess.run(
        [sys.executable, "-m", "gputop.tui", "run", "--profile", "--json", str(out), "--",
         str(python), str(PROGRAMS / "load_and_call.py"), str(folder / "model.vmfb"), str(folder / "model.irpa"),
         "20000", "--device", "cuda"],
        capture_output=True, text=True, timeout=300, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["kernels"], proc.stdout[-3000:]
    kernels = kernels_of(report)
    assert all(k["source_ops"] or k["source_ops_reason"] for k in kernels), kernels
    named = [k for k in kernels if k["source_ops"]]
    assert named, [(k["name"], k["source_ops_reason"]) for k in kernels]
    lines = make_assets.MLIR.splitlines()
    for op in (op for k in named for op in k["source_ops"]):
        file, line, column = op["loc"].rsplit(":", 2)
        assert file == "model.mlir" and lines[int(line) - 1][int(column) - 1 :].startswith(op["op"]), op
    print(json.dumps([(k["name"], k["source_ops"], k["source_ops_reason"]) for k in kernels]))
