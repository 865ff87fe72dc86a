"""The state of one run: `RunState`, the composition, and its parts, one per concern, each owning its behaviour.

`RunState` (in `run_state`) is what a run's producers report to: Session's
flows, its memory sampler, its neighbour, clock and PM watches now, a watched
program's events, and any other source of a run later. It owns one lock, the
session writer and the parts below, and publishes snapshots. A producer tells
the part its fact belongs to (`state.calls.add(...)`, `state.lifecycle.enter(...)`);
each part takes the run's lock to change its data, asks the run to publish
where a viewer must see the change (`link.RunLink`), and builds its own piece
of every `RunSnapshot` (`fields()`, a TypedDict whose keys are the snapshot's
own, so the snapshot's JSON stays flat) and, where it has one, of the run's
`RunSummary` (`summary_fields()`):

- `lifecycle`: the state and since when, the phases' seconds, the error;
- `log`: the newest events and the count of errors;
- `module`: the function (a watched program's busiest), its result types, the compiler's diagnostics;
- `devices`: the run's devices, their names in the module, the affinity analysis;
- `calls`: the call timers (a watched program's busiest function's) and the samples a comparison needs;
- `memory`: the newest sample, the sparkline's history, the peaks, the module's weights;
- `profile`: profile and counters passes and the Kernels table they make;
- `captures`: RenderDoc's captures and status;
- `parameters`: the parameters' load as it runs;
- `neighbours`: who else uses the GPU and the host, now and over the calls;
- `clocks`: the GPU's clocks over the calls, and the newest readings with their times;
- `pm`: the PM sampling strip and each call's own averages (the PM watch's listener);
- `program`: a watched program's view and one call timer per function;
- `outcome`: what the run produced besides snapshots (`RunOutcome`).
"""

from __future__ import annotations

from gputop.core.run.state.outcome import RunOutcome
from gputop.core.run.state.run_state import PUBLISH_INTERVAL_S, RunState, Subscriber

__all__ = ["PUBLISH_INTERVAL_S", "RunOutcome", "RunState", "Subscriber"]
