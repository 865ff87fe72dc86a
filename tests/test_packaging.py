"""Packaging: building gputop from pyproject.toml is quiet and the wheel holds what the engine reads.

`make run` installs the project before the TUI starts; every warning the
build backend prints about our own metadata lands on the user's terminal
(`project.license` as a TOML table, demo files outside any listed package).
The wheel is built, as pip builds it, from a copy of the sources so that the
working tree gets no `build/` folder.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_builds_without_setuptools_warnings_and_holds_the_demos(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for folder in ("src", "core", "tui"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    output = proc.stdout + proc.stderr
    warnings = [
        line
        for line in output.splitlines()
        if "Warning" in line and ("setuptools" in line or "_Warning" in line or "Deprecat" in line)
    ]
    assert not warnings, "\n".join(warnings)
    assert "is absent from the `packages` configuration" not in output
    [wheel] = (tmp_path / "dist").glob("gputop-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    for demo in ("mlp.mlir", "conv.mlir", "opencl_chain.toml", "opencl_chain.cl"):
        assert f"gputop/core/demos/{demo}" in names, sorted(n for n in names if "demos" in n)
    assert "gputop/core/profiling/ireeprof/call_marks.c" in names
    # the package's top, from src/gputop: `import gputop; gputop.watch()`
    assert "gputop/__init__.py" in names
    # the watcher a watched program gets on its PYTHONPATH: sitecustomize.py and the gputop_agent package beside it
    for watcher in ("sitecustomize.py", "gputop_agent/__init__.py", "gputop_agent/agent.py"):
        assert f"gputop/core/program/inject/{watcher}" in names
    assert "License-Expression: Apache-2.0" in metadata
