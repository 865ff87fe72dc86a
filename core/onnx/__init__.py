"""ONNX models in: the import to MLIR in a child process, the node names kept as locations, and the
model's interface.

The `onnx` package is imported only inside the functions that need it, so importing the engine stays
fast.
"""

from __future__ import annotations

__all__: list[str] = []
