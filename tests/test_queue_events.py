"""Queue events from real profiles: IREE's benchmark tool on two local-task devices, decoded by iree-profile.

The expected copies come from the stream IR read by hand (see
test_affinity_corpus.py): transfer_export's device_b execute holds only a copy,
which IREE runs as a queue copy; hidden_transfer's device_b execute copies x
(binding slot 0 -> 3) inside its command buffer before the matmul.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gputop.core.errors import ProfileError
from gputop.core.module.compile import compile_module
from gputop.core.module.demos import DEMOS
from gputop.core.module.targets import LOCAL_FLAGS
from gputop.core.multidevice.affinity import affinity_flags
from gputop.core.processes import run_logged
from gputop.core.profiling.ireeprof.queue_events import Copy, load_queue_log, parse_queue_log
from gputop.core.profiling.ireeprof.tools import runtime_tool

CORPUS = Path(__file__).parent / "data" / "affinity"
TWO_LOCAL = affinity_flags(["local:0", "local:1"], [LOCAL_FLAGS, LOCAL_FLAGS])


def profiled_calls(tmp_path: Path, source: Path, function: str, inputs: list[str], calls: int,
                   source_bytes: bytes | None = None) -> Path:  # fmt: skip
    vmfb = compile_module(source, TWO_LOCAL, log_dir=tmp_path, source_bytes=source_bytes).vmfb_path
    bundle = tmp_path / "run.ireeprof"
    command = [
        runtime_tool("iree-benchmark-module"), f"--module={vmfb}", "--device=local-task", "--device=local-task",
        f"--function={function}", *[f"--input={i}" for i in inputs],
        "--device_profiling_mode=queue-events,command-region-events", f"--device_profiling_output={bundle}",
        f"--benchmark_min_time={calls}x",
    ]  # fmt: skip
    output, code = run_logged(command, tmp_path / "run.log", timeout_s=300)
    assert code == 0, output
    return bundle


def test_queue_copies_carry_their_payload_bytes(tmp_path: Path) -> None:
    bundle = profiled_calls(tmp_path, CORPUS / "transfer_export.mlir", "transfer_export", ["128x32xf32=1"], 3)
    log = load_queue_log(bundle, runtime_tool("iree-profile"))
    # Per call: device_a allocates, executes its dispatch, deallocates; device_b allocates and copies.
    assert [e.op for e in log.events if e.device_ordinal == 1] == ["alloca", "copy"] * 3
    assert {e.op for e in log.events if e.device_ordinal == 0} == {"alloca", "execute", "dealloca"}
    assert log.copies() == tuple(Copy(1, 16384, e.submission_id, None, None) for e in log.events if e.op == "copy")
    for event in log.events:
        assert event.host_time_ns > 0
        assert event.ready_host_time_ns is None or event.ready_host_time_ns >= event.host_time_ns
        assert (event.command_buffer_id is not None) == (event.op == "execute")
        assert (event.allocation_id is not None) == (event.op in ("alloca", "dealloca"))


def test_command_buffer_copies_count_once_per_execute(tmp_path: Path) -> None:
    demo = DEMOS["hidden-transfer"]
    bundle = profiled_calls(
        tmp_path, Path("hidden_transfer.mlir"), "hidden_transfer", ["256x512xf32=1", "512x256xf32=1"], 2,
        source_bytes=demo.source(),
    )  # fmt: skip
    log = load_queue_log(bundle, runtime_tool("iree-profile"))
    # The command buffer is recorded once (copy, then the matmul) and executed once per call.
    assert [(o.op, o.length) for o in log.operations if o.op != "barrier"] == [
        ("copy", 524288),
        ("dispatch", 0),
    ]
    assert {o.device_ordinal for o in log.operations} == {1}
    executes = [e for e in log.events if e.op == "execute"]
    assert len(executes) == 2 and {e.device_ordinal for e in executes} == {1}
    assert [(c.device_ordinal, c.bytes, c.source_slot, c.target_slot) for c in log.copies()] == [(1, 524288, 0, 3)] * 2


def test_bad_exports_are_one_line_errors() -> None:
    with pytest.raises(ProfileError, match="no schema record"):
        parse_queue_log('{"record_type": "session", "event": "begin"}\n')
    with pytest.raises(ProfileError, match="line 2 is not a JSON record"):
        parse_queue_log('{"record_type": "schema", "format": "ireeperf-jsonl"}\n{"record_type": \n')
    with pytest.raises(ProfileError, match="line 2: bad queue_event record"):
        parse_queue_log('{"record_type": "schema", "format": "ireeperf-jsonl"}\n{"record_type": "queue_event"}\n')


def test_an_unreadable_bundle_is_a_profile_error(tmp_path: Path) -> None:
    bundle = tmp_path / "broken.ireeprof"
    bundle.write_bytes(b"not a profile")
    with pytest.raises(ProfileError, match=r"not a readable \.ireeprof bundle"):
        load_queue_log(bundle, runtime_tool("iree-profile"))
