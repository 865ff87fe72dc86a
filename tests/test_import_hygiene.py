"""The engine's shape: a plain library without Textual or Rich, whose import contracts hold.

import-linter checks five contracts (`make lint` runs them too): the engine
without the TUI, no import cycles inside `gputop.core`, building blocks that
use neither `run` nor `store`, a store that never drives a run, and panes that
reach the engine only through the bridge.
"""

from __future__ import annotations

import pkgutil
import shutil
import subprocess
import sys
import tomllib
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
    assert "5 kept, 0 broken" in proc.stdout


def test_every_engine_room_is_a_listed_building_block() -> None:
    """A new room (subpackage) or flat module under core/ must join the building-blocks contract, or it escapes it."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    blocks = next(c for c in config if c["name"].startswith("Building blocks"))
    listed = set(blocks["source_modules"])
    flat = {f"gputop.core.{p.stem}" for p in (ROOT / "core").glob("*.py") if p.stem not in ("__init__", "session")}
    rooms = {
        f"gputop.core.{p.parent.name}"
        for p in (ROOT / "core").glob("*/__init__.py")
        if p.parent.name not in ("run", "store")
    }
    assert flat | rooms == listed, (
        f"unlisted: {sorted((flat | rooms) - listed)}; listed but gone: {sorted(listed - flat - rooms)}"
    )
    assert set(blocks["forbidden_modules"]) == {"gputop.core.run", "gputop.core.store"}


def test_core_keeps_at_most_fifteen_flat_modules() -> None:
    """The engine's top level holds the shared basics; everything else lives in a named room."""
    flat = sorted(p.name for p in (ROOT / "core").glob("*.py"))
    assert len(flat) <= 15, flat


def test_no_private_access_across_modules() -> None:
    """Flows and the store use public names only: no `session._x` or `state._x` outside their module."""
    import re

    offenders = []
    for path in sorted((ROOT / "core").rglob("*.py")) + sorted((ROOT / "tui").rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for match in re.finditer(r"\b(session|state|ctx|controls|runner|flow)\._[a-z]\w*", line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {match.group(0)}")
    assert not offenders, "\n".join(offenders)


def test_every_module_says_what_it_exports() -> None:
    """`__all__` in every module of the engine and the TUI: its public names are a decision, not an accident."""
    missing = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "core").rglob("*.py")) + sorted((ROOT / "tui").rglob("*.py"))
        if not any(line.startswith("__all__") for line in path.read_text().splitlines())
    ]
    assert not missing, missing
