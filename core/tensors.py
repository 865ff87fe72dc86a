"""Tensors at a glance: the shape, type and a few numbers of each input and output.

A report cannot hold a model's outputs, but a person reading it wants to see
that they are the right shape and not all zeros or NaN. These summaries are
what the report keeps of every input and output.
"""

from __future__ import annotations

import numpy as np

from gputop.core.snapshot import TensorSummary

__all__ = ["summarize"]


def summarize(arrays: list[np.ndarray]) -> tuple[TensorSummary, ...]:
    """Shape, dtype and mean/min/max (numeric arrays only) of each array, in order."""
    rows = []
    for index, array in enumerate(arrays):
        numeric = array.size > 0 and np.issubdtype(array.dtype, np.number)
        rows.append(
            TensorSummary(
                index=index,
                shape=tuple(int(d) for d in array.shape),
                dtype=str(array.dtype),
                mean=float(array.mean()) if numeric else None,
                min=float(array.min()) if numeric else None,
                max=float(array.max()) if numeric else None,
            )
        )
    return tuple(rows)
