"""The engine's public face: the names gputop's faces use, grouped by what a host does, each loaded when first named.

nvitop keeps `api/` apart from its `tui/`; this is gputop's `api`. The TUI's
bridge (`gputop.tui.bridge`) re-exports it whole, and a script may import it
too: `from gputop.core.api import RunConfig, Session, human_bytes`. The names
come in six groups, one per thing a host does: `RUN` a target, `WATCH` a
user's own program, `READ` a run (its snapshot and records, a session
folder), `COMPARE` two runs, `SERVE` a run to others, and `SAY` it (the
numbers and sentences every face prints alike). What is listed is the surface
the faces rely on; every other name is imported from its room (the folder
tree is the import path: `gputop.core.records.memory.MemorySample`), and the
rooms behind this face may change shape without a face noticing.

Each name is loaded from its room on first use (PEP 562), not when this
module is imported, so a face pays only for what it names: `gputop --help`
loads neither the session store nor the Prometheus client, and `gputop run`
no comparison. The names are written twice, as imports for type checkers and
as the groups' rooms for the loader (`ROOMS`, the groups merged);
tests/test_import_hygiene.py holds the two equal.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gputop.core.call_modes import modes_text
    from gputop.core.compare import (
        DEFAULT_NOISE,
        compare_reports,
        comparison_text,
        gate,
        parse_metric,
        parse_percent,
        verdict_line,
    )
    from gputop.core.compare.live import LiveBaseline
    from gputop.core.compare.pm_condition import pm_sampling_text
    from gputop.core.compare.text import comparison_json
    from gputop.core.errors import (
        EXIT_OK,
        EXIT_REGRESSION,
        EXIT_RUNTIME,
        EXIT_SIGHUP,
        EXIT_SIGINT,
        EXIT_SIGPIPE,
        EXIT_SIGTERM,
        EXIT_UNDECIDED,
        DeviceUnavailableError,
        GputopError,
        Interrupted,
        UsageError,
    )
    from gputop.core.fleet import (
        FLEET_SORTS,
        FLEET_TIMEOUT_S,
        FLEET_WINDOW,
        FleetPoll,
        FleetQueries,
        FleetRow,
        PrometheusClient,
        PrometheusUnreachable,
        QueryRefused,
        check_window,
        poll_fleet,
        sort_rows,
    )
    from gputop.core.module.demos import demo_targets
    from gputop.core.module.device_discovery import list_devices, resolve_device, target_flags_for_spec
    from gputop.core.module.targets import device_names
    from gputop.core.multidevice.affinity import AffinityAnalysis, affinity_flags, analyse_module
    from gputop.core.multidevice.transfer_check import observe_module
    from gputop.core.paths import discard_session_dir, new_session_dir, write_crash_log
    from gputop.core.profiling.breakdown import breakdown_groups_text
    from gputop.core.profiling.ireeprof.ireeperf import read_profile
    from gputop.core.profiling.overhead import (
        PROFILE_LEVELS,
        breakdown_cost_text,
        kernels_cost_text,
        overhead_text,
        overhead_warning,
    )
    from gputop.core.profiling.work.efficiency import ridge_intensity
    from gputop.core.profiling.work.layer_names import layer_name, named_layer
    from gputop.core.program import WATCH_PATH_DIR, ProgramHost, find_command, program_label
    from gputop.core.program.refusals import program_refusal
    from gputop.core.program.trace import program_trace
    from gputop.core.records.base import to_json
    from gputop.core.records.breakdown import CallBreakdown, CallSegment
    from gputop.core.records.calls import CallStats
    from gputop.core.records.captures import CaptureInfo
    from gputop.core.records.checks import OutputCheck
    from gputop.core.records.counters import CountersPass
    from gputop.core.records.devices import DeviceInfo
    from gputop.core.records.parameters import ParameterLoad
    from gputop.core.records.pm import PmMetric, PmSampling
    from gputop.core.records.profile import KernelTiming, ProfileSummary
    from gputop.core.records.progress import Event, Phases
    from gputop.core.renderdoc.capture_files import capture_info
    from gputop.core.run import RunConfig, Session
    from gputop.core.run.config import RENDERDOC_MODES, Target, TargetKind, config_default
    from gputop.core.run.run_host import RunHost, tune_interpreter_for_calls
    from gputop.core.runners.iree_runner import PARAMETER_MODES
    from gputop.core.serving.access import LOOPBACK, TOKEN_ENV, bearer_matches, exposure_warning, load_token, url_host
    from gputop.core.serving.metrics import DEFAULT_PORT, METRICS, MetricsServer
    from gputop.core.snapshot import BUSY_STATES, RunSnapshot
    from gputop.core.store.baseline import baseline_choices, load_baseline
    from gputop.core.store.completeness import RecordCheck
    from gputop.core.store.follow import ENDED_STATES, SessionFollower
    from gputop.core.store.reader import (
        effective_state,
        read_manifest,
        read_report,
        read_side,
        read_tail,
        resolve_session,
        scan_sessions,
    )
    from gputop.core.units import (
        ABOVE_ESTIMATE,
        ESTIMATE_NOTE,
        RATE,
        TIME_US,
        column,
        estimate_ratio,
        fixed,
        flop_per_byte,
        gbps,
        human_bytes,
        mhz,
        ms,
        ms_fixed,
        pct_of_bound,
        percent,
        seconds,
        share_of_ceiling,
        si,
    )
    from gputop.core.versions import versions
    from gputop.core.watch.neighbour_watch import host_load_limit
    from gputop.core.wording import (
        CHECK_FAILED,
        NAME_MARK,
        NAME_NOTE,
        call_clocks_lines,
        call_clocks_text,
        check_tolerances,
        dram_bytes,
        estimated_work,
        exception_line,
        host_load_text,
        limits_line,
        limits_lines,
        mismatch_text,
        module_bytes_text,
        name_marked,
        neighbours_lines,
        neighbours_text,
        unchecked_outputs,
        weight_bytes,
        work_lines,
    )

Rooms = dict[str, tuple[str, ...]]

# Run a target: its configuration, the session that runs it, the host of an engine process, the devices, the
# demos, what a multi-device run places where, where a session's folder goes, and how a run ends (errors, exit
# codes).
RUN: Rooms = {
    "gputop.core.run": (
        "RunConfig",
        "Session",
    ),
    "gputop.core.run.config": (
        "RENDERDOC_MODES",
        "Target",
        "TargetKind",
        "config_default",
    ),
    "gputop.core.run.run_host": (
        "RunHost",
        "tune_interpreter_for_calls",
    ),
    "gputop.core.runners.iree_runner": ("PARAMETER_MODES",),
    "gputop.core.module.demos": ("demo_targets",),
    "gputop.core.module.device_discovery": (
        "list_devices",
        "resolve_device",
        "target_flags_for_spec",
    ),
    "gputop.core.module.targets": ("device_names",),
    "gputop.core.multidevice.affinity": (
        "AffinityAnalysis",
        "affinity_flags",
        "analyse_module",
    ),
    "gputop.core.multidevice.transfer_check": ("observe_module",),
    "gputop.core.paths": (
        "discard_session_dir",
        "new_session_dir",
        "write_crash_log",
    ),
    "gputop.core.versions": ("versions",),
    "gputop.core.errors": (
        "EXIT_OK",
        "EXIT_REGRESSION",
        "EXIT_RUNTIME",
        "EXIT_SIGHUP",
        "EXIT_SIGINT",
        "EXIT_SIGPIPE",
        "EXIT_SIGTERM",
        "EXIT_UNDECIDED",
        "DeviceUnavailableError",
        "GputopError",
        "Interrupted",
        "UsageError",
    ),
}

# Watch a user's own program (`gputop -- CMD`, `gputop.watch()`): its host, the command found, its label, the
# folder for an environment without gputop, its trace, and why a request cannot act on it.
WATCH: Rooms = {
    "gputop.core.program": (
        "WATCH_PATH_DIR",
        "ProgramHost",
        "find_command",
        "program_label",
    ),
    "gputop.core.program.refusals": ("program_refusal",),
    "gputop.core.program.trace": ("program_trace",),
}

# Read a run, live or past: the snapshot and the records it gathers, a session folder listed, read, followed and
# checked, a baseline, IREE's profile bundle and a RenderDoc capture; and a fleet's runs, read from Prometheus.
READ: Rooms = {
    "gputop.core.snapshot": (
        "BUSY_STATES",
        "RunSnapshot",
    ),
    "gputop.core.records.base": ("to_json",),
    "gputop.core.records.breakdown": (
        "CallBreakdown",
        "CallSegment",
    ),
    "gputop.core.records.calls": ("CallStats",),
    "gputop.core.records.captures": ("CaptureInfo",),
    "gputop.core.records.checks": ("OutputCheck",),
    "gputop.core.records.counters": ("CountersPass",),
    "gputop.core.records.devices": ("DeviceInfo",),
    "gputop.core.records.parameters": ("ParameterLoad",),
    "gputop.core.records.pm": (
        "PmMetric",
        "PmSampling",
    ),
    "gputop.core.records.profile": (
        "KernelTiming",
        "ProfileSummary",
    ),
    "gputop.core.records.progress": (
        "Event",
        "Phases",
    ),
    "gputop.core.store.reader": (
        "effective_state",
        "read_manifest",
        "read_report",
        "read_side",
        "read_tail",
        "resolve_session",
        "scan_sessions",
    ),
    "gputop.core.store.follow": (
        "ENDED_STATES",
        "SessionFollower",
    ),
    "gputop.core.store.completeness": ("RecordCheck",),
    "gputop.core.store.baseline": (
        "baseline_choices",
        "load_baseline",
    ),
    "gputop.core.profiling.ireeprof.ireeperf": ("read_profile",),
    "gputop.core.renderdoc.capture_files": ("capture_info",),
    "gputop.core.fleet": (
        "FLEET_SORTS",
        "FLEET_TIMEOUT_S",
        "FLEET_WINDOW",
        "FleetPoll",
        "FleetQueries",
        "FleetRow",
        "PrometheusClient",
        "PrometheusUnreachable",
        "QueryRefused",
        "check_window",
        "poll_fleet",
        "sort_rows",
    ),
}

# Compare two runs (`gputop compare`, the gate, the TUI's baseline): the comparison, its verdict and gate, its
# text and JSON.
COMPARE: Rooms = {
    "gputop.core.compare": (
        "DEFAULT_NOISE",
        "compare_reports",
        "comparison_text",
        "gate",
        "parse_metric",
        "parse_percent",
        "verdict_line",
    ),
    "gputop.core.compare.live": ("LiveBaseline",),
    "gputop.core.compare.pm_condition": ("pm_sampling_text",),
    "gputop.core.compare.text": ("comparison_json",),
}

# Serve a run to others (`gputop serve`, `gputop web`, `--metrics-port`): who may connect, and the Prometheus
# metrics.
SERVE: Rooms = {
    "gputop.core.serving.access": (
        "LOOPBACK",
        "TOKEN_ENV",
        "bearer_matches",
        "exposure_warning",
        "load_token",
        "url_host",
    ),
    "gputop.core.serving.metrics": (
        "DEFAULT_PORT",
        "METRICS",
        "MetricsServer",
    ),
}

# Say it: the one formatter of every number a person reads, and the engine's own sentences (limits, work,
# neighbours, a pass's cost, the call modes, a kernel's model layers), so every face prints a figure alike.
SAY: Rooms = {
    "gputop.core.units": (
        "ABOVE_ESTIMATE",
        "ESTIMATE_NOTE",
        "RATE",
        "TIME_US",
        "column",
        "estimate_ratio",
        "fixed",
        "flop_per_byte",
        "gbps",
        "human_bytes",
        "mhz",
        "ms",
        "ms_fixed",
        "pct_of_bound",
        "percent",
        "seconds",
        "share_of_ceiling",
        "si",
    ),
    "gputop.core.wording": (
        "CHECK_FAILED",
        "NAME_MARK",
        "NAME_NOTE",
        "call_clocks_lines",
        "call_clocks_text",
        "check_tolerances",
        "dram_bytes",
        "estimated_work",
        "exception_line",
        "host_load_text",
        "limits_line",
        "limits_lines",
        "mismatch_text",
        "module_bytes_text",
        "name_marked",
        "neighbours_lines",
        "neighbours_text",
        "unchecked_outputs",
        "weight_bytes",
        "work_lines",
    ),
    "gputop.core.profiling.overhead": (
        "PROFILE_LEVELS",
        "breakdown_cost_text",
        "kernels_cost_text",
        "overhead_text",
        "overhead_warning",
    ),
    "gputop.core.profiling.breakdown": ("breakdown_groups_text",),
    "gputop.core.profiling.work.efficiency": ("ridge_intensity",),
    "gputop.core.profiling.work.layer_names": ("layer_name", "named_layer"),
    "gputop.core.call_modes": ("modes_text",),
    "gputop.core.watch.neighbour_watch": ("host_load_limit",),
}

# What a host does, and the rooms and names each takes: the groups above, in the order a newcomer reads them.
GROUPS: dict[str, Rooms] = {"run": RUN, "watch": WATCH, "read": READ, "compare": COMPARE, "serve": SERVE, "say": SAY}

# Each room, and the names the faces take from it (a room that serves two groups lists both groups' names).
ROOMS: Rooms = {}
for _rooms in GROUPS.values():
    for _room, _names in _rooms.items():
        ROOMS[_room] = ROOMS.get(_room, ()) + _names
del _rooms, _room, _names

_HOME = {name: room for room, names in ROOMS.items() for name in names}

__all__ = sorted(_HOME)

if not TYPE_CHECKING:  # type checkers see the imports above instead

    def __getattr__(name: str) -> Any:
        """`name` from its room, imported now and kept here, so the next lookup is a plain one."""
        room = _HOME.get(name)
        if room is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(room), name)
        globals()[name] = value
        return value
