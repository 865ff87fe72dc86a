"""The import hook and `install`: how the agent waits, at almost no cost, for the program to import iree.runtime.

`sitecustomize` calls `install_from_environment()` at the program's start; `install`
puts `_RuntimeImportHook` first on `sys.meta_path`, and the moment the real loader
has run `iree.runtime`, the hook takes itself off and starts the agent on it (or
at once, when the runtime is already imported: `gputop.watch()` in a running
program). The agent under way, and the hook while it waits, are this module's
state (`_agent`, `_hook`): one of each per process.
"""

from __future__ import annotations

import os
import sys

from .helpers import connect, fault, one_line, say

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any

    from .agent import Agent

__all__ = ["SOCKET_ENV", "install", "install_from_environment"]

SOCKET_ENV = "GPUTOP_WATCH_SOCKET"

_agent: Agent | None = None
_hook: _RuntimeImportHook | None = None


def install_from_environment() -> None:
    """Watch this program if GPUTOP_WATCH_SOCKET names a socket (what sitecustomize calls)."""
    fault("hook")
    path = os.environ.get(SOCKET_ENV)
    if path:
        install(path)


def install(socket_path: str) -> bool:
    """Watch this program through `socket_path`: now if `iree.runtime` is imported, else when it is.

    Returns:
        False when the agent could not connect (it said why on stderr), True otherwise.
    """
    global _hook
    if _agent is not None:
        return True
    runtime = sys.modules.get("iree.runtime")
    if runtime is not None and hasattr(runtime, "VmContext"):
        return _start(socket_path, runtime)
    if _hook is None:
        _hook = _RuntimeImportHook(socket_path)
        sys.meta_path.insert(0, _hook)
    return True


class _RuntimeImportHook:
    """A meta-path finder that lets the real loader run `iree.runtime`, then starts the agent on it."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self.searching = False

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != "iree.runtime" or self.searching:
            return None
        self.searching = True
        try:
            spec = _spec_from_other_finders(fullname, path, target)
        finally:
            self.searching = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            try:
                run(module)
            finally:
                _forget_instance_attribute(loader, "exec_module")
            self.loaded(module)

        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError):
            spec.loader = _LoaderShim(loader, self.loaded)
        return spec

    def loaded(self, module: ModuleType) -> None:
        global _hook
        try:
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            _hook = None
            _start(self.socket_path, module)
        except Exception as exc:
            say(f"not watching this program: {one_line(exc)}")


class _LoaderShim:
    """Stands in for a loader whose `exec_module` cannot be shadowed on the instance (a rare C loader)."""

    def __init__(self, loader: Any, on_loaded: Callable[[ModuleType], None]) -> None:
        self.loader = loader
        self.on_loaded = on_loaded

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        self.on_loaded(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)


def _spec_from_other_finders(fullname: str, path: Any, target: Any) -> Any:
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        if isinstance(finder, _RuntimeImportHook) or find_spec is None:
            continue
        spec = find_spec(fullname, path, target)
        if spec is not None:
            return spec
    return None


def _forget_instance_attribute(owner: Any, name: str) -> None:
    try:  # noqa: SIM105
        delattr(owner, name)
    except AttributeError:
        pass


def _start(socket_path: str, runtime: ModuleType) -> bool:
    global _agent
    if _agent is not None:
        return True
    from .agent import Agent  # the agent's modules load with the runtime, not at the program's start

    try:
        fault("connect")
        connection = connect(socket_path)
    except Exception as exc:
        say(f"not watching this program: cannot connect to {socket_path} ({one_line(exc)})")
        return False
    _agent = Agent(socket_path, connection, runtime)
    _agent.start()
    return True
