"""A Python program that never imports iree.runtime: gputop's watcher must stay out of its way.

Usage: python no_iree.py [ANY...]; prints one JSON line and exits with code 3.
"""

from __future__ import annotations

import json
import os
import sys

__all__: list[str] = []


def main() -> None:
    imported = "iree.runtime" in sys.modules
    print(json.dumps({"calls": 0, "pid": os.getpid(), "argv": sys.argv[1:], "iree_imported": imported}))
    sys.exit(3)


if __name__ == "__main__":
    main()
