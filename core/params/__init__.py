"""Parameters: archives of weights, the streamed loader that moves them to a device, and the checks
that they fit before loading.
"""

from __future__ import annotations

__all__: list[str] = []
