"""Serving a run to others: who may connect (`access`), the control socket that streams snapshots and
takes requests (`control_socket`), and the Prometheus metrics.
"""

from __future__ import annotations

__all__: list[str] = []
