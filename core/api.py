"""The engine's public face: every name gputop's faces use, in one module, each loaded when first named.

nvitop keeps `api/` apart from its `tui/`; this is gputop's `api`. The TUI's
bridge (`gputop.tui.bridge`) re-exports it whole, and a script may import it
too: `from gputop.core.api import RunConfig, Session, human_bytes`. What is
listed here is the surface the faces may rely on; the rooms behind it may
change shape without a face noticing.

Each name is loaded from its room on first use (PEP 562), not when this
module is imported, so a face pays only for what it names: `gputop --help`
loads neither the session store nor the Prometheus client, and `gputop run`
no comparison. The names are written twice, as imports for type checkers and
as `ROOMS` for the loader; tests/test_import_hygiene.py holds the two equal.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gputop.core.call_modes import modes_text
    from gputop.core.compare import (
        DEFAULT_NOISE,
        Change,
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
        DeviceUnavailableError,
        GputopError,
        Interrupted,
        UsageError,
    )
    from gputop.core.module.demos import demo_targets
    from gputop.core.module.device_discovery import list_devices, resolve_device, target_flags_for_spec
    from gputop.core.module.targets import device_names
    from gputop.core.multidevice.affinity import AffinityAnalysis, affinity_flags, analyse_module
    from gputop.core.multidevice.transfer_check import observe_module
    from gputop.core.paths import discard_session_dir, new_session_dir, write_crash_log
    from gputop.core.profiling.breakdown import breakdown_groups_text
    from gputop.core.profiling.ireeprof.ireeperf import read_profile
    from gputop.core.profiling.overhead import PROFILE_LEVELS, kernels_cost_text, overhead_text, overhead_warning
    from gputop.core.profiling.work.efficiency import ridge_intensity
    from gputop.core.program import WATCH_PATH_DIR, ProgramHost, ProgramNotStarted, find_command, program_label
    from gputop.core.program.trace import program_trace
    from gputop.core.renderdoc.capture_files import capture_info
    from gputop.core.run import RunConfig, Session
    from gputop.core.run.config import RENDERDOC_MODES, Target, TargetKind, config_default
    from gputop.core.run.run_host import RunHost, tune_interpreter_for_calls
    from gputop.core.runners.iree_runner import PARAMETER_MODES
    from gputop.core.serving.access import LOOPBACK, TOKEN_ENV, bearer_matches, exposure_warning, load_token, url_host
    from gputop.core.serving.metrics import DEFAULT_PORT, MetricsServer
    from gputop.core.snapshot import (
        BUSY_STATES,
        CallBreakdown,
        CallSegment,
        CallStats,
        CaptureInfo,
        CountersPass,
        DeviceInfo,
        DeviceMemory,
        Event,
        KernelTiming,
        MemorySample,
        OutputCheck,
        ParameterLoad,
        Phases,
        PmMetric,
        PmSampling,
        ProfileSummary,
        RunSnapshot,
        to_json,
    )
    from gputop.core.store.baseline import baseline_choices, load_baseline
    from gputop.core.store.completeness import RecordCheck, check_record
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
        BYTES,
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

# Each room, and the names the faces take from it.
ROOMS: dict[str, tuple[str, ...]] = {
    "gputop.core.call_modes": ("modes_text",),
    "gputop.core.compare": (
        "DEFAULT_NOISE",
        "Change",
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
    "gputop.core.errors": (
        "EXIT_OK",
        "EXIT_REGRESSION",
        "EXIT_RUNTIME",
        "EXIT_SIGHUP",
        "EXIT_SIGINT",
        "EXIT_SIGPIPE",
        "EXIT_SIGTERM",
        "DeviceUnavailableError",
        "GputopError",
        "Interrupted",
        "UsageError",
    ),
    "gputop.core.module.demos": ("demo_targets",),
    "gputop.core.module.device_discovery": ("list_devices", "resolve_device", "target_flags_for_spec"),
    "gputop.core.module.targets": ("device_names",),
    "gputop.core.multidevice.affinity": ("AffinityAnalysis", "affinity_flags", "analyse_module"),
    "gputop.core.multidevice.transfer_check": ("observe_module",),
    "gputop.core.paths": ("discard_session_dir", "new_session_dir", "write_crash_log"),
    "gputop.core.profiling.work.efficiency": ("ridge_intensity",),
    "gputop.core.profiling.overhead": ("PROFILE_LEVELS", "kernels_cost_text", "overhead_text", "overhead_warning"),
    "gputop.core.profiling.ireeprof.ireeperf": ("read_profile",),
    "gputop.core.profiling.breakdown": ("breakdown_groups_text",),
    "gputop.core.program": ("WATCH_PATH_DIR", "ProgramHost", "ProgramNotStarted", "find_command", "program_label"),
    "gputop.core.program.trace": ("program_trace",),
    "gputop.core.renderdoc.capture_files": ("capture_info",),
    "gputop.core.run": ("RunConfig", "Session"),
    "gputop.core.run.config": ("RENDERDOC_MODES", "Target", "TargetKind", "config_default"),
    "gputop.core.run.run_host": ("RunHost", "tune_interpreter_for_calls"),
    "gputop.core.runners.iree_runner": ("PARAMETER_MODES",),
    "gputop.core.serving.access": (
        "LOOPBACK",
        "TOKEN_ENV",
        "bearer_matches",
        "exposure_warning",
        "load_token",
        "url_host",
    ),
    "gputop.core.serving.metrics": ("DEFAULT_PORT", "MetricsServer"),
    "gputop.core.snapshot": (
        "BUSY_STATES",
        "CallBreakdown",
        "CallSegment",
        "CallStats",
        "CaptureInfo",
        "CountersPass",
        "DeviceInfo",
        "DeviceMemory",
        "Event",
        "KernelTiming",
        "MemorySample",
        "OutputCheck",
        "ParameterLoad",
        "Phases",
        "PmMetric",
        "PmSampling",
        "ProfileSummary",
        "RunSnapshot",
        "to_json",
    ),
    "gputop.core.store.baseline": ("baseline_choices", "load_baseline"),
    "gputop.core.store.completeness": ("RecordCheck", "check_record"),
    "gputop.core.store.follow": ("ENDED_STATES", "SessionFollower"),
    "gputop.core.store.reader": (
        "effective_state",
        "read_manifest",
        "read_report",
        "read_side",
        "read_tail",
        "resolve_session",
        "scan_sessions",
    ),
    "gputop.core.units": (
        "ABOVE_ESTIMATE",
        "BYTES",
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
    "gputop.core.versions": ("versions",),
    "gputop.core.watch.neighbour_watch": ("host_load_limit",),
    "gputop.core.wording": (
        "CHECK_FAILED",
        "NAME_MARK",
        "NAME_NOTE",
        "call_clocks_lines",
        "call_clocks_text",
        "check_tolerances",
        "dram_bytes",
        "estimated_work",
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
}

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
