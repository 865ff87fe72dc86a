"""The engine's shape: a plain library without Textual or Rich, whose import contracts hold.

import-linter checks five contracts (`make lint` runs them too): the engine
without the TUI, no import cycles inside `gputop.core`, building blocks that
use neither `run` nor `store`, a store that never drives a run, and faces (every
module of `gputop.tui` but the bridge and its sources) that reach the engine
only through the bridge. The bridge and the engine's face behind it
(`gputop.core.api`) load each name when it is first used: they are checked here
to load nothing on import and to hand out the rooms' own objects.
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
    # through the script `make lint` runs: it shows import-linter the package in a wheel's shape
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "lint_imports.py")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "6 kept, 0 broken" in proc.stdout


def test_every_engine_room_is_a_listed_building_block() -> None:
    """A new room (subpackage) or flat module under core/ must join the building-blocks contract, or it escapes it."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    blocks = next(c for c in config if c["name"].startswith("Building blocks"))
    listed = set(blocks["source_modules"])
    doors = ("__init__", "session", "api")  # the package, and two re-exports of the rooms: no blocks themselves
    flat = {f"gputop.core.{p.stem}" for p in (ROOT / "core").glob("*.py") if p.stem not in doors}
    rooms = {
        f"gputop.core.{p.parent.name}"
        for p in (ROOT / "core").glob("*/__init__.py")
        if p.parent.name not in ("run", "store", "program")  # rooms that make or record runs
    }
    assert flat | rooms == listed, (
        f"unlisted: {sorted((flat | rooms) - listed)}; listed but gone: {sorted(listed - flat - rooms)}"
    )
    assert set(blocks["forbidden_modules"]) == {"gputop.core.run", "gputop.core.store", "gputop.core.program"}


def test_every_face_is_held_by_the_bridge_contract() -> None:
    """All of gputop.tui is forbidden the engine, a new module included; only the bridge and the sources pass."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    faces = next(c for c in config if c["name"].startswith("The faces reach the engine"))
    assert faces["source_modules"] == ["gputop.tui"]
    assert faces["forbidden_modules"] == ["gputop.core"]
    assert sorted(faces["ignore_imports"]) == [
        "gputop.tui.bridge -> gputop.core.**",
        "gputop.tui.sources.** -> gputop.core.**",
    ]


def test_the_engine_face_names_each_thing_once_from_its_room() -> None:
    """`gputop.core.api` lists its names twice (imports for type checkers, ROOMS for the loader): they agree,
    and each name, through the face and through the bridge, is the room's own object."""
    import ast
    import importlib

    from gputop.core import api
    from gputop.tui import bridge

    typed = {
        alias.asname or alias.name: node.module
        for node in ast.walk(ast.parse((ROOT / "core" / "api.py").read_text()))
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gputop.")
        for alias in node.names
    }
    loaded = {name: room for room, names in api.ROOMS.items() for name in names}
    assert sum(len(names) for names in api.ROOMS.values()) == len(loaded), "a name listed under two rooms"
    assert typed == loaded
    assert api.__all__ == sorted(loaded)
    for name, room in loaded.items():
        assert getattr(api, name) is getattr(importlib.import_module(room), name), name
        assert getattr(bridge, name) is getattr(api, name), name
    sources = importlib.import_module("gputop.tui.sources")
    for name in bridge.SOURCES:
        assert getattr(bridge, name) is getattr(sources, name), name
    assert sorted(bridge.__all__) == sorted([*api.__all__, *bridge.SOURCES])


def test_the_bridge_loads_nothing_until_a_name_is_used() -> None:
    """`gputop --help` and `gputop devices` pay only for what they name: no Textual, store or Prometheus client."""
    code = (
        "import sys, gputop.tui.bridge, gputop.core.api\n"
        "heavy = ('textual', 'prometheus_client', 'gputop.tui.sources', 'gputop.core.run', 'gputop.core.store')\n"
        "print(','.join(sorted(m for m in sys.modules if m.startswith(heavy))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "", f"importing the bridge loaded: {proc.stdout}"


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
