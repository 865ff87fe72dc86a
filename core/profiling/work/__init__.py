"""The work estimates: what each dispatch computes and moves, what the device can do, and how close a kernel came.

`dispatch_work.py` holds a dispatch's and a module's work and its `.work.json`; `ir_count.py`
counts it from the dispatch's IR, `name_work.py` reads it from its name; `peaks.py` gives the
device's ceilings; `efficiency.py` sets each kernel's time against both (the roofline);
`source_ops.py` names each kernel by the ONNX nodes or source lines it came from. Imports no other
room of `gputop.core.profiling`.
"""

from __future__ import annotations

__all__: list[str] = []
