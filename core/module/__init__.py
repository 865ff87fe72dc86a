"""A module before it runs: compiling it, its diagnostics and targets, its signature and inputs, the
devices it may run on, and checking what it returned.

Everything a run needs to know about the program itself lives here; nothing here makes a call or
profiles one.
"""

from __future__ import annotations

__all__: list[str] = []
