"""Every face of gputop: the `gputop` command line and the live Textual app.

Nothing here holds engine logic. The command line and the app reach the
engine in `gputop.core` through `gputop.tui.bridge` (the app) or its public
session API (the headless commands).
"""

__all__ = []
