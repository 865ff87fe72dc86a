"""Run import-linter on gputop as a wheel lays it out: `gputop/` holding `__init__.py`, `core/` and `tui/`.

Why not `lint-imports` alone: the source tree maps three folders into one
package (`gputop` is src/gputop, `gputop.core` is core/, `gputop.tui`
is tui/, through setuptools' package-dir), and import-linter finds a
package's modules by walking its one folder, where the editable install's
`gputop` holds only `__init__.py`. This makes a throwaway folder of links in
the wheel's shape and puts it first on the path for import-linter's run.
Exits with import-linter's code; its output is import-linter's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

__all__: list[str] = []


def main() -> int:
    lint = Path(sys.executable).parent / "lint-imports"
    with tempfile.TemporaryDirectory(prefix="gputop-lint-") as tree:
        package = Path(tree) / "gputop"
        package.mkdir()
        (package / "__init__.py").symlink_to(ROOT / "src" / "gputop" / "__init__.py")
        (package / "core").symlink_to(ROOT / "core", target_is_directory=True)
        (package / "tui").symlink_to(ROOT / "tui", target_is_directory=True)
        path = os.environ.get("PYTHONPATH")
        env = {**os.environ, "PYTHONPATH": tree + (os.pathsep + path if path else "")}
        return subprocess.run([str(lint), *sys.argv[1:]], cwd=ROOT, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
