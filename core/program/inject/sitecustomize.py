"""gputop's foothold in a watched Python program: Python imports this at startup from PYTHONPATH.

With GPUTOP_WATCH_SOCKET set it puts `gputop_agent`'s import hook in place (nothing
more: the agent connects only when the program imports `iree.runtime`). Then it
runs the `sitecustomize` this file shadows, the next one on `sys.path`, so a
site's or a user's own customisation still happens. It never raises: a failure
of gputop's own is one stderr line, and the program runs on unwatched.
"""

from __future__ import annotations

import os
import sys

__all__: list[str] = []


def _watch() -> None:
    if not os.environ.get("GPUTOP_WATCH_SOCKET"):
        return
    try:
        import gputop_agent

        gputop_agent.install_from_environment()
    except Exception as exc:
        sys.stderr.write(f"gputop: watcher not loaded: {type(exc).__name__}: {exc}\n")


def _run_shadowed_sitecustomize() -> None:
    """Find the next `sitecustomize` after this folder on sys.path and run it as Python's `site` would have."""
    try:
        import importlib.machinery
        import importlib.util

        here = os.path.dirname(os.path.abspath(__file__))
        folders = [os.path.abspath(p or os.curdir) for p in sys.path]
        after = sys.path[folders.index(here) + 1 :] if here in folders else []
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", after)
        if spec is None or spec.loader is None:
            return
        ours = sys.modules.get("sitecustomize")
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module  # `import sitecustomize` finds the one it shadowed, as without gputop
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            if ours is not None:
                sys.modules["sitecustomize"] = ours
            # site.py's own words for a failing sitecustomize
            sys.stderr.write(f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{type(exc).__name__}: {exc}\n")
    except Exception as exc:
        sys.stderr.write(f"gputop: the program's own sitecustomize was not run: {type(exc).__name__}: {exc}\n")


_watch()
_run_shadowed_sitecustomize()
