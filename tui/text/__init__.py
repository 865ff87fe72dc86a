"""Every face's sentences in one place: the headless commands' text, the report's, and the TUI's last line.

The Textual panes draw; what they and the commands *say* is written here, from
the same dictionaries `--json` writes, so the printout, the TUI and a script
reading the JSON can never disagree. Numbers are the engine's units' and the
engine's own sentences (limits, neighbours, tolerances) its wording's, both
through the bridge; this package only puts them together, one module per
thing said:

- `report`: a report's terminal text, one function per section: `gputop run`'s and `gputop report`'s
  (`SECTIONS`), and a watched program's (`PROGRAM_SECTIONS`, `gputop run -- CMD`).
- `program`: a watched program's title, ending, function rows and held results, for the panes and the report.
- `kernels`: the profile pass's part of it (kernel table, limits, cost, call breakdown).
- `layers`: kernels in the model's words: the `from` cell, a kernel's source ops, time by layer.
- `counters`: the counters pass's part of it.
- `parameters`: a parameters load's progress line and its stages.
- `pm_strip`: the GPU's own counters sampled live (CUPTI PM sampling), the Run pane's strip of them.
- `affinity`, `capture`, `tables`: `gputop affinity`, `capture-info`, `devices` and `sessions`.
- `farewell`: the TUI's last line on the terminal.
"""

from __future__ import annotations

from gputop.tui.text.affinity import FLAG_TEXT, affinity_table
from gputop.tui.text.capture import DISPATCH_COLUMNS, capture_text, dispatch_rows, replay_line
from gputop.tui.text.counters import COUNTER_COLUMNS, counters_lines
from gputop.tui.text.farewell import Farewell, farewell
from gputop.tui.text.kernels import BREAKDOWN_ROWS, KERNEL_NUMBERS, breakdown_table, kernel_table, overhead_lines
from gputop.tui.text.parameters import parameter_stages_line, parameters_progress
from gputop.tui.text.pm_strip import pm_calls_lines, pm_strip_lines
from gputop.tui.text.report import PHASES, PROGRAM_SECTIONS, SECTIONS, program_report_text, run_report
from gputop.tui.text.tables import cut_middle, devices_table, sessions_table

__all__ = [
    "BREAKDOWN_ROWS",
    "COUNTER_COLUMNS",
    "DISPATCH_COLUMNS",
    "FLAG_TEXT",
    "KERNEL_NUMBERS",
    "PHASES",
    "PROGRAM_SECTIONS",
    "SECTIONS",
    "Farewell",
    "affinity_table",
    "breakdown_table",
    "capture_text",
    "counters_lines",
    "cut_middle",
    "devices_table",
    "dispatch_rows",
    "farewell",
    "kernel_table",
    "overhead_lines",
    "parameter_stages_line",
    "parameters_progress",
    "pm_calls_lines",
    "pm_strip_lines",
    "program_report_text",
    "replay_line",
    "run_report",
    "sessions_table",
]
