"""The house's measures (issue 54's "done when"), held as a test so that a room does not quietly crowd again.

Each measure was a number in a review before it was a rule: modules of 771
lines, a command-line module back over its line, functions of 134 lines, one
name (`ClockSample`) with two meanings, a thread of its own in the profiling
rooms. Every measure reads the source (no import), so a failure names the
file and the figure. `RunState`'s count of public methods is held where the
state is tested (tests/test_run_state.py), not twice.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULE_LINES = 600  # any module under core/ or tui/
CLI_LINES = 300  # a command-line module: its arguments, its function, its SPEC; the work lives elsewhere
FUNCTION_LINES = 80  # a function a reader holds in one screen


def modules() -> Iterator[Path]:
    """Every Python module of the engine and the faces."""
    yield from sorted((ROOT / "core").rglob("*.py"))
    yield from sorted((ROOT / "tui").rglob("*.py"))


def name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_no_module_is_over_600_lines() -> None:
    long = {name(p): lines(p) for p in modules() if lines(p) > MODULE_LINES}
    assert not long, long


def test_no_command_line_module_is_over_300_lines() -> None:
    long = {name(p): lines(p) for p in sorted((ROOT / "tui" / "cli").rglob("*.py")) if lines(p) > CLI_LINES}
    assert not long, long


def test_no_function_is_over_80_lines() -> None:
    long = {
        f"{name(p)}:{node.name}": node.end_lineno - node.lineno + 1
        for p in modules()
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > FUNCTION_LINES
    }
    assert not long, long


def test_clock_sample_is_defined_once() -> None:
    """`ClockSample` meant device ticks in one room and a (perf_counter, MHz) pair in another: one meaning now."""
    definition = re.compile(r"^\s*(class ClockSample\b|ClockSample\s*[:=]|type ClockSample\b)")
    homes = [
        f"{name(p)}:{number}"
        for p in modules()
        for number, line in enumerate(p.read_text().splitlines(), 1)
        if definition.match(line)
    ]
    assert len(homes) == 1, homes


# The one pool the profiling rooms may make: the CPU's copy bandwidth, measured once per machine by one
# copy per core (a single thread would measure one core's bandwidth, not the memory's) and joined before
# the function returns. Nothing of it runs beside the calls; a thread that does is a watcher in core/watch/.
JOINED_POOLS = {("core/profiling/work/peaks.py", "measured_bandwidth_gbps")}


FUNCTIONS = ast.FunctionDef | ast.AsyncFunctionDef
STARTS = re.compile(r"\b(threading\.Thread|Thread|ThreadPoolExecutor|ProcessPoolExecutor)\(")


def starts_one(node: ast.AST) -> bool:
    return STARTS.search(ast.unparse(node)) is not None


def test_no_thread_is_started_in_the_profiling_rooms() -> None:
    found = set()
    for p in sorted((ROOT / "core" / "profiling").rglob("*.py")):
        tree = ast.parse(p.read_text())
        for node in ast.walk(tree):
            # the innermost function that starts one: a nested helper's own name, else its parent's
            if isinstance(node, FUNCTIONS) and starts_one(node):
                inner = [n for n in ast.walk(node) if n is not node and isinstance(n, FUNCTIONS) and starts_one(n)]
                if not inner:
                    found.add((name(p), node.name))
        top = [n for n in tree.body if not isinstance(n, FUNCTIONS | ast.ClassDef)]
        assert not any(starts_one(n) for n in top), name(p)
    assert found <= JOINED_POOLS, sorted(found - JOINED_POOLS)
