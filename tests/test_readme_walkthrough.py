"""The README's "Your model in ten lines", run exactly as written.

A newcomer copies that section's shell block into a terminal and expects what the README says next: the
check passes and the kernel table names the kernel that costs most. So the block is taken from the README
itself (every fenced `sh` block of the section, in order), run by bash in an empty folder with the venv's
`bin` first on PATH (as `. .venv/bin/activate` puts it), and the kernel the prose names as the costliest
must head the table it prints. The session store and compile cache are the test run's own (conftest).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECTION = "Your model in ten lines"


def walkthrough() -> str:
    """The section's text, from its heading to the next heading of its level."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(SECTION)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f'README.md has no "## {SECTION}" section'
    return match.group(1)


def shell_blocks(section: str) -> list[str]:
    return re.findall(r"^```(?:sh|bash|shell)\n(.*?)^```\s*$", section, re.M | re.S)


def named_costliest(section: str) -> str:
    """The kernel the README says costs most (`name`, ... is the kernel that costs most)."""
    name = r"`([\w$]+_dispatch_\d+_\w+)`"
    match = re.search(name + r"(?:(?!_dispatch_).)*?is\s+the\s+kernel\s+that\s+costs\s+most", section, re.S)
    assert match, "the walkthrough no longer names the kernel that costs most"
    return match.group(1)


def kernel_rows(report: str) -> list[str]:
    """The kernel names of the report's kernel table, in its order."""
    lines = report.splitlines()
    header = next(i for i, line in enumerate(lines) if re.match(r"\s+kernel\s.*\bcount\b", line))
    rows = []
    for line in lines[header + 1 :]:
        if not line.startswith("  ") or not line.strip():
            break
        rows.append(line.split()[0])
    return rows


def test_the_walkthrough_runs_as_written_and_names_the_costliest_kernel(tmp_path: Path) -> None:
    section = walkthrough()
    blocks = shell_blocks(section)
    assert blocks, f'"{SECTION}" has no shell block to run'
    script = "\n".join(blocks)
    assert "--device local-task" in script, "the walkthrough must stay on the CPU"
    venv_bin = Path(sys.executable).parent
    assert (venv_bin / "gputop").exists(), f"no gputop beside {sys.executable}: run `make test` (pip install -e .)"
    env = {**os.environ, "PATH": f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert re.search(r"^check\s+PASSED against ref\.npy", proc.stdout, re.M), proc.stdout
    rows = kernel_rows(proc.stdout)
    assert rows, proc.stdout
    assert rows[0] == named_costliest(section), (rows, proc.stdout)
