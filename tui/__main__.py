"""`python -m gputop.tui` is the `gputop` command (handy inside a venv or in tests)."""

from gputop.tui.cli import main

__all__ = []

main()
