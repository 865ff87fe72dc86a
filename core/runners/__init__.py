"""The backends that make calls: IREE in process, OpenCL, and IREE's own tools in a child, each behind
the same small interface.

A runner compiles nothing and records nothing: it loads what `module` prepared, calls it and reads
its memory.
"""

from __future__ import annotations

__all__: list[str] = []
