"""Two runs side by side: what differs in their conditions, whether their times differ, and where.

`gputop compare A B`, the CI gate (`--fail-above`) and the TUI's baseline
all read two reports (with their kept samples, `samples.py`) and ask this
room: `significance.py` holds the tests (Mann-Whitney U, a bootstrap interval),
`diff.py` builds the comparison, `text.py` says it in lines a person reads.
It is a building block: it reads report dictionaries, never a live run or
the session store.
"""

from gputop.core.compare.diff import (
    DEFAULT_NOISE,
    Change,
    Comparison,
    Gate,
    KernelChange,
    compare_reports,
    gate,
    parse_metric,
    parse_percent,
)
from gputop.core.compare.samples import CALLS_FILE
from gputop.core.compare.text import comparison_text, verdict_line

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
