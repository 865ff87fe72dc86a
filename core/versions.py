"""Which gputop, IREE and Python a run used: every record of a run says so.

A timing or a failure means little without the compiler and runtime that
produced it, so the manifest, the report and the metrics all carry these
versions. They come from the installed packages' metadata, never from a
hard-coded string.
"""

from __future__ import annotations

import importlib.metadata
import platform

__all__ = ["package_version", "versions"]


def package_version(name: str) -> str | None:
    """The installed version of distribution `name`, or None when it is not installed."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str | None]:
    """gputop's, IREE's compiler and runtime, and Python's versions, as the manifest records them."""
    return {
        "gputop": package_version("gputop"),
        "iree_compiler": package_version("iree-base-compiler"),
        "iree_runtime": package_version("iree-base-runtime"),
        "python": platform.python_version(),
    }
