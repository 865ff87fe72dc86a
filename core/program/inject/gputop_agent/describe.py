"""What a phase event says of a wrapped call of the runtime, read from its arguments and result.

Each `describe_*` takes a wrapped call's `(args, kwargs, result, ahead)` (`ahead`: what
the wrapper read before the call, such as an index's length) and returns the phase's
own fields (see the package's docstring), or None for no event. These need nothing of
the agent's state; those that do are methods of `wrappers.RuntimeWrappers`.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Describe = Callable[[tuple[Any, ...], dict[str, Any], Any, Any], "dict[str, Any] | None"]

__all__ = [
    "argument",
    "buffer_size",
    "context_details",
    "describe_add_buffer",
    "describe_add_splat",
    "describe_instance",
    "describe_io_module",
    "describe_module",
    "describe_provider",
    "describe_register",
    "entry_bytes",
    "file_size",
    "parameters",
]


def describe_instance(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, ahead: Any) -> dict[str, Any]:
    return {}


def describe_module(how: str) -> Describe:
    def describe(args: tuple[Any, ...], kwargs: dict[str, Any], module: Any, ahead: Any) -> dict[str, Any]:
        source = argument(args, kwargs, 1, "filepath") or kwargs.get("buffer")
        if how == "mmap":
            path: str | None = os.fspath(str(source))
            size = file_size(path)
        else:
            path, size = None, buffer_size(source)
        return {"how": how, "path": path, "bytes": size, "module": module.name}

    return describe


def argument(args: tuple[Any, ...], kwargs: dict[str, Any], position: int, name: str) -> Any:
    """An argument of a wrapped call, given by position (`self` is 0) or by name."""
    return args[position] if len(args) > position else kwargs.get(name)


def describe_add_buffer(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, ahead: Any) -> dict[str, Any]:
    size = buffer_size(argument(args, kwargs, 2, "buffer"))
    return parameters("add_buffer", None, [], size, 1, "host memory", args[0])


def describe_add_splat(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, ahead: Any) -> dict[str, Any]:
    size = int(argument(args, kwargs, 3, "total_length"))
    return parameters("add_splat", None, [], size, 1, "splat", args[0])


def describe_provider(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, ahead: Any) -> dict[str, Any]:
    details = parameters("create_provider", None, [], None, len(args[0]), None, args[0])
    details["scope"] = kwargs.get("scope", "")
    return details


def describe_io_module(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, ahead: Any) -> dict[str, Any]:
    details = parameters("create_io_parameters_module", None, [], None, None, None, None)
    details["providers"] = max(0, len(args) - 1)
    return details


def context_details(op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    vm_context = args[0]
    modules = argument(args, kwargs, 2 if op == "create" else 1, "modules")
    names = [m.name for m in modules] if modules is not None else []
    return {"op": op, "modules": names, "context": id(vm_context), "context_id": vm_context.context_id}


def describe_register(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, ahead: Any) -> dict[str, Any]:
    return context_details("register", args, kwargs)


def parameters(
    api: str,
    mode: str | None,
    files: list[str],
    size: int | None,
    tensors: int | None,
    through: str | None,
    index: Any,
) -> dict[str, Any]:
    return {
        "api": api,
        "mode": mode,
        "files": files,
        "bytes": size,
        "tensors": tensors,
        "through": through,
        "index": id(index) if index is not None else None,
        "calls": 1,
    }


def entry_bytes(index: Any, before: Any) -> int | None:
    """Bytes of the entries a load added to `index` (those after the first `before`); None where unreadable."""
    if not isinstance(before, int):
        return None
    try:
        return sum(int(entry.length) for _key, entry in list(index.items())[before:])
    except Exception:
        return None


def file_size(path: str | None) -> int | None:
    try:
        return os.stat(path).st_size if path else None
    except OSError:
        return None


def buffer_size(buffer: Any) -> int | None:
    try:
        with memoryview(buffer) as view:
            return view.nbytes
    except TypeError:
        return None
