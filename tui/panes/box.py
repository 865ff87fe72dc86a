"""The frame every live pane sits in: a rounded border with the pane's name on it.

Run, Memory pools, Kernels, Exports and Captures look alike on purpose, so
the eye finds each by its title; one class holds that look so the frame is
one edit, and each pane states only its title and what is inside.
"""

from __future__ import annotations

from textual.containers import Vertical


class BoxPane(Vertical):
    DEFAULT_CSS = """
    BoxPane { height: auto; border: round $primary; padding: 0 1; }
    """
