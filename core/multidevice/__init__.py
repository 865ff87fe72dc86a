"""Multi-device modules: which device produces and exports every result, the stream IR dataflow behind
it, and the transfers checked against a profiled call.
"""

from __future__ import annotations

__all__: list[str] = []
