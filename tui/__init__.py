"""Every face of gputop: the `gputop` command line and the live Textual app.

Nothing here holds engine logic. Every face (the app, the command line, the
web server, the text they print) reaches the engine in `gputop.core` through
`gputop.tui.bridge`; only the bridge and the app's snapshot sources
(`gputop.tui.sources`) import the engine itself.
"""

__all__ = []
