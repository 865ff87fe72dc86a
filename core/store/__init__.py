"""The session folder: written as a run goes (`writer`), read back afterwards (`reader`, `replay`).

A run's record outlives its process: `writer` is the only code that writes the manifest,
`samples.jsonl` and `report.json`; `report` builds the report from values; `reader` finds, lists and
reads past sessions; `replay` turns recorded samples back into snapshots. Nothing here knows how a
run is made.
"""

__all__ = []
