"""Parsers of outside data, fuzzed: they return or raise gputop's own error, nothing else.

gputop reads text it did not write: compiler diagnostics, `iree-profile`
exports, OpenCL run specs, RenderDoc's structured capture data, recorded
snapshots and `--input` values. Hypothesis generates both noise and
near-valid records (the right keys with wrong values) for each; any exception
other than `GputopError` is a bug that would reach the user as a traceback.
Each test is bounded by its example count, so the suite's time stays fixed.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gputop.core.errors import GputopError
from gputop.core.module.diagnostics import parse_diagnostics
from gputop.core.module.inputs import parse_input
from gputop.core.profiling.ireeprof.ireeperf import parse_ireeperf
from gputop.core.renderdoc.capture_files import _summarize_xml
from gputop.core.runners.opencl_spec import load_spec, spec_from_dict
from gputop.core.store.replay import snapshot_from_json

FUZZ = settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


def records(keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Dicts with some of the real keys (any values) and some noise keys."""
    return st.dictionaries(st.sampled_from(keys) | st.text(max_size=6), json_values, max_size=len(keys) + 2)


# -- compiler diagnostics ------------------------------------------------------------------------
diagnostic_lines = st.one_of(
    st.text(max_size=200),
    st.builds(
        "{}:{}:{}: {}: {}".format,
        st.text(max_size=12),
        st.integers(-5, 10**6),
        st.integers(-5, 10**6),
        st.sampled_from(["error", "warning", "note", "remark", "<unknown>"]),
        st.text(max_size=80)
        | st.builds(
            "'func.func' op uses {} bytes of shared memory; exceeded the limit of {} bytes".format,
            st.integers(-(2**40), 2**40),
            st.integers(-(2**40), 2**40),
        ),
    ),
)


@FUZZ
@given(st.lists(diagnostic_lines, max_size=12).map("\n".join))
def test_diagnostics_parser(text: str) -> None:
    try:
        diagnostics = parse_diagnostics(text)
    except GputopError:
        return
    for diag in diagnostics:
        assert "\n" not in diag.one_line()


# -- iree-profile exports (ireeperf-jsonl) -----------------------------------------------------------
PROFILE_KEYS = [
    "record_type", "format", "key", "valid", "op", "duration_ns", "start_tick", "start_host_time_ns",
    "submission_id", "physical_device_ordinal", "queue_ordinal", "workgroup_count", "workgroup_size",
    "pool_stats_available", "pool_id", "pool_bytes_reserved", "pool_bytes_committed",
]  # fmt: skip
profile_records = records(PROFILE_KEYS) | st.fixed_dictionaries(
    {
        "record_type": st.sampled_from(["schema", "dispatch_event", "host_execution_event", "memory_event"]),
        "format": st.just("ireeperf-jsonl"),
        "key": json_values,
        "duration_ns": json_values,
        "submission_id": json_values,
        "pool_stats_available": st.booleans(),
        "pool_id": json_values,
    }
)
profile_lines = st.one_of(profile_records.map(json.dumps), st.text(max_size=60), json_values.map(json.dumps))


@FUZZ
@given(st.lists(profile_lines, max_size=10).map("\n".join))
def test_ireeperf_parser(text: str) -> None:
    try:
        parse_ireeperf('{"record_type": "schema", "format": "ireeperf-jsonl"}\n' + text)
        parse_ireeperf(text)
    except GputopError:
        pass


# -- OpenCL run specs ---------------------------------------------------------------------------
SPEC_KEYS = ["source_code", "name", "build_options", "check"]
KERNEL_KEYS = ["name", "args", "global_size", "local_size"]
BUFFER_KEYS = ["name", "dtype", "shape", "init", "seed"]
CHECK_KEYS = ["output", "expect", "rtol", "atol"]


@FUZZ
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "kernels": st.lists(records(KERNEL_KEYS), max_size=3) | json_values,
            "buffers": st.lists(records(BUFFER_KEYS), max_size=3) | json_values,
            "source_code": json_values,
            "source": st.sampled_from(["absent.cl", "/", "x" * 300]) | json_values,
            "check": records(CHECK_KEYS) | json_values,
            "build_options": json_values,
        },
    )
    | records(SPEC_KEYS)
)
def test_run_spec_from_data(data: dict[str, Any]) -> None:
    with contextlib.suppress(GputopError):
        spec_from_dict(data, Path("fuzz.toml"))


@FUZZ
@given(st.text(max_size=300) | st.lists(st.sampled_from(["[[kernels]]", "[[buffers]]", 'name = "k"', "size = -1",
                                                         'dtype = "q9"', "global_size = [0]", "x = ["]),
                                        max_size=8).map("\n".join))  # fmt: skip
def test_run_spec_from_toml_text(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "spec.toml"
        path.write_text(text, encoding="utf-8")
        with contextlib.suppress(GputopError):
            load_spec(path)


# -- RenderDoc structured data (renderdoccmd convert --xml) -------------------------------------------
xml_elements = st.recursive(
    st.builds(
        '<{0} name="{1}">{2}</{0}>'.format,
        st.sampled_from(["chunk", "driver", "struct", "string", "x"]),
        st.sampled_from(["vkCmdDispatch", "vkCreateComputePipelines", "pName", "", "&amp;"]),
        st.text(alphabet=st.characters(blacklist_characters="<>&\x00"), max_size=10),
    ),
    lambda children: st.builds(
        '<chunk name="vkCreateComputePipelines">{}</chunk>'.format, st.lists(children, max_size=3).map("".join)
    ),
    max_leaves=8,
)


@FUZZ
@given(
    st.lists(xml_elements, max_size=6).map(lambda parts: "<rdc>" + "".join(parts) + "</rdc>")
    | st.text(max_size=200)
    | st.binary(max_size=200).map(lambda b: b.decode("latin-1"))
)
def test_capture_structured_data(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        xml = Path(folder) / "capture.xml"
        xml.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            info = _summarize_xml(Path("fuzz.rdc"), 1, xml)
        except GputopError:
            return
        assert info.dispatches >= 0


# -- recorded snapshots and --input values -------------------------------------------------------------
SNAPSHOT_KEYS = ["state", "target", "function", "device", "phases", "calls", "memory", "events", "timestamp",
                 "profile", "captures", "exports", "seq", "enqueue", "device_names"]  # fmt: skip


@FUZZ
@given(records(SNAPSHOT_KEYS))
def test_snapshot_records(data: dict[str, Any]) -> None:
    with contextlib.suppress(GputopError):
        snapshot_from_json(data)


@FUZZ
@given(
    st.text(max_size=40)
    | st.builds(
        "{}x{}{}={}".format,
        st.integers(-3, 10**12),
        st.integers(-3, 10**12),
        st.sampled_from(["xf32", "xi8", "xq9", "x?", "", "xf64"]),
        st.text(max_size=10),
    )
)
def test_input_values(text: str) -> None:
    with contextlib.suppress(GputopError):
        parse_input(text)
