"""The records a run publishes, one module per concern: frozen dataclasses, each stamped with its time.

Everything the engine hands the outside world is built from these values:
immutable, so they cross threads without locks, compare equal in tests and turn
into JSON (`base.to_json`) without knowing who reads them. Each module holds
the records one part of the engine makes and its readers need, so a module
that makes memory samples imports `records.memory`, not every record there is:

- `base`: `now` and `to_json`, which every record uses;
- `devices`, `memory`, `calls`, `progress` (phases and log events), `compile`,
  `checks` (tensors and the output check), `parameters`, `affinity`,
  `captures`, `neighbours`: one concern each;
- `profile` (the Kernels table of a profile pass) gathers `counters`,
  `breakdown`, `clocks` (with the peaks) and `neighbours`;
- `program`: what gputop saw of a user's own program;
- `pm`: the GPU's own counters sampled while the run goes (CUPTI PM sampling).

`gputop.core.snapshot` holds the two values that gather them all
(`RunSnapshot`, `RunSummary`); a record is imported from its module here. The
records import nothing of gputop's but each other (`base` first; no cycles).
"""

from __future__ import annotations

__all__: list[str] = []  # import the modules: each says what it exports
