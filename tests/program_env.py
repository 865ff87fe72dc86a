"""A Python environment without gputop, for running the test programs as a user's own program runs.

`gputop -- python app.py` watches a program in its own environment, where only
the folder gputop puts on PYTHONPATH (core/program/inject) is gputop's. The
tests make such an environment: `python -m venv --without-pip`, then links to
this environment's `iree`, `numpy` and `ml_dtypes` (iree.runtime's own
requirements, with the native libraries beside them and their dist-info
folders), nothing else: `import gputop` fails in it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

__all__ = ["INJECT", "PROGRAMS", "make_program_env", "program_assets", "program_python", "watched_env"]

ROOT = Path(__file__).resolve().parents[1]
INJECT = ROOT / "core" / "program" / "inject"
PROGRAMS = ROOT / "tests" / "programs"
# iree-base-runtime's own requirements are numpy and ml_dtypes; the .libs folders hold their native libraries
LINKED = ("iree", "iree_base_runtime.libs", "ml_dtypes", "numpy", "numpy.libs")
LINKED_PREFIXES = ("iree_base_runtime-", "ml_dtypes-", "numpy-")  # their dist-info folders


def make_program_env(folder: Path) -> Path:
    """Make the environment in `folder`; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    ours = Path(sysconfig.get_paths()["purelib"])
    python = folder / "bin" / "python"
    theirs = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    for entry in sorted(ours.iterdir()):
        if entry.name in LINKED or entry.name.startswith(LINKED_PREFIXES):
            (theirs / entry.name).symlink_to(entry)
    return python


def watched_env(socket_path: str | os.PathLike[str], **extra: str) -> dict[str, str]:
    """The environment a watched program gets: gputop's inject folder first on PYTHONPATH, the socket named."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUTOP_", "PYTHON"))}
    env.update(PYTHONPATH=str(INJECT), GPUTOP_WATCH_SOCKET=str(socket_path), **extra)
    return env


@pytest.fixture(scope="session")
def program_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of an environment without gputop (made once per test session)."""
    return make_program_env(tmp_path_factory.mktemp("program-env") / "venv")


@pytest.fixture(scope="session")
def program_assets(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The test programs' model.vmfb and model.irpa (built once per test session)."""
    out = tmp_path_factory.mktemp("program-assets")
    subprocess.run([sys.executable, str(PROGRAMS / "make_assets.py"), str(out)], check=True, capture_output=True)
    return out / "model.vmfb", out / "model.irpa"
