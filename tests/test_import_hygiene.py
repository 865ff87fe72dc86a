"""The engine is a plain library: importing it pulls in no Textual and no Rich."""

from __future__ import annotations

import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import gputop.core

ROOT = Path(__file__).resolve().parents[1]


def test_core_imports_no_ui_library() -> None:
    modules = [m.name for m in pkgutil.walk_packages(gputop.core.__path__, "gputop.core.")]
    assert "gputop.core.session" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich') or m.startswith('gputop.tui'))\n"
        "print(','.join(bad))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "", f"gputop.core pulled in: {proc.stdout}"


def test_import_linter_contract_holds() -> None:
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint, "import-linter is a test dependency"
    proc = subprocess.run([lint], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 kept, 0 broken" in proc.stdout
