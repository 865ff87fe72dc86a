"""Tensors at a glance: the shape, type and a few numbers of each input and output.

A report cannot hold a model's outputs, but a person reading it wants to see
that they are the right shape and not all zeros or NaN. These summaries are
what the report keeps of every input and output.
"""

from __future__ import annotations

import numpy as np

from gputop.core.records.checks import TensorSummary

__all__ = ["summarize"]


def summarize(arrays: list[np.ndarray]) -> tuple[TensorSummary, ...]:
    """Shape, dtype and mean/min/max (numeric arrays only) of each array, in order."""
    rows = []
    for index, array in enumerate(arrays):
        dtype = str(array.dtype)
        # ml_dtypes' floats (bfloat16, float8) are not np.number: read them as float32
        values = array.astype(np.float32) if dtype.startswith(("bfloat16", "float8", "float4")) else array
        numeric = values.size > 0 and np.issubdtype(values.dtype, np.number)
        rows.append(
            TensorSummary(
                index=index,
                shape=tuple(int(d) for d in array.shape),
                dtype=dtype,
                mean=float(values.mean()) if numeric else None,
                min=float(values.min()) if numeric else None,
                max=float(values.max()) if numeric else None,
            )
        )
    return tuple(rows)
