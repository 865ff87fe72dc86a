"""IREE's own profiles: the pass IREE's benchmark tool makes, and the `.ireeprof` bundle it writes, read.

`tools.py` finds IREE's shipped tools and builds their commands; `tool_pass.py` runs the pass;
`call_marks.py` (with `call_marks.c`) marks each call's window in the tool; `ireeperf.py` decodes
the bundle; `queue_events.py` reads its queue operations; `call_records.py` lays the records on
each call for the breakdown. Imports the shared modules of `gputop.core.profiling`, never the other
sources.
"""

from __future__ import annotations

__all__: list[str] = []
