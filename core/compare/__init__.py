"""Two runs side by side: what differs in their conditions, whether their times differ, and where.

`gputop compare A B`, the CI gate (`--fail-above`) and the TUI's baseline
all read two reports (with their kept samples, `samples.py`) and ask this
room, one module per step: `reading.py` reads a report's values, samples and
plain rows; `conditions.py` sets the runs' conditions side by side;
`significance.py` holds the one test of a change (Mann-Whitney U, a bootstrap
interval, the noise floor); `pairing.py` pairs and tests the kernels;
`verdict.py` builds the comparison and its verdict; `ci_gate.py` judges it
against `--fail-above`; `text.py` says it in lines a person reads. `live.py`
is the TUI's baseline, `modes.py` and `pm_condition.py` the call groups' and PM
sampling's parts.
It is a building block: it reads report dictionaries, never a live run or
the session store.
"""

from gputop.core.compare.ci_gate import Gate, gate, parse_metric, parse_percent
from gputop.core.compare.pairing import KernelChange
from gputop.core.compare.samples import CALLS_FILE
from gputop.core.compare.significance import DEFAULT_NOISE, Change
from gputop.core.compare.text import comparison_text, verdict_line
from gputop.core.compare.verdict import Comparison, compare_reports

__all__ = [
    "CALLS_FILE",
    "DEFAULT_NOISE",
    "Change",
    "Comparison",
    "Gate",
    "KernelChange",
    "compare_reports",
    "comparison_text",
    "gate",
    "parse_metric",
    "parse_percent",
    "verdict_line",
]
