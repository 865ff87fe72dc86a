"""The exporter's labels and their bounds (issue 58 item 1), scraped through its own collector and text format.

A real RunState's program part is fed a watched program's calls (the rows its
watcher sends), so the per-function histogram, counts and the `other` bound
come from the engine's own call timers; the run's and the GPU's labels are
checked against what they were made from (the session folder, the host name,
the device record). `gputop serve --list-metrics` and the docs' table list
every family.
"""

from __future__ import annotations

import re
import socket
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from conftest import run_gputop
from gputop.core.records.calls import CALL_BUCKETS_MS
from gputop.core.records.devices import DeviceInfo
from gputop.core.records.program import ProgramView
from gputop.core.run.state import RunState
from gputop.core.serving.families import MAX_LABEL_VALUES, METRICS
from gputop.core.serving.labels import GpuLabels, script_name
from gputop.core.serving.metrics import SnapshotCollector
from gputop.core.snapshot import RunSnapshot
from gputop.core.store.writer import SessionWriter

DOCS = Path(__file__).resolve().parents[1] / "docs" / "prometheus-and-web.md"
MS = 1_000_000  # ns


def scrape(collector: SnapshotCollector) -> dict[str, list[Sample]]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    found: dict[str, list[Sample]] = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        found.setdefault(family.name, []).extend(family.samples)
    return found


def test_a_watched_programs_script_is_its_name() -> None:
    assert script_name(["python3", "-u", "app.py", "--port", "1"]) == "app.py"
    assert script_name(["/usr/bin/python3.12", "-X", "dev", "/srv/serve/main.py"]) == "main.py"
    assert script_name(["python", "-m", "serve.api"]) == "serve.api"
    assert script_name(["./bin/worker", "--x"]) == "worker"
    assert script_name([]) == ""


def test_functions_past_twenty_are_other_and_the_first_twenty_stay(tmp_path: Path) -> None:
    """25 functions: the 20 busiest by name, the 5 others summed; a later busier newcomer joins other, not a name."""
    writer = SessionWriter(tmp_path, {"target": "app"})
    state = RunState("app", tmp_path, writer)
    state.program.set_view(ProgramView(command=("python3", "app.py")))
    rows: list[object] = []
    for f in range(25):  # function f is called 30 - f times, each call (f + 1) * 10 us long
        rows += [[f"app.f{f:02d}", 1, i * MS, i * MS + (f + 1) * 10_000] for i in range(30 - f)]
    state.program.add_calls(rows)
    state.publish(force=True)
    collector = SnapshotCollector(lambda: state.snapshot, {})
    first = scrape(collector)
    counts = {s.labels["function"]: s.value for s in first["gputop_calls"]}
    assert len(counts) == MAX_LABEL_VALUES + 1 and counts["other"] == sum(30 - f for f in range(20, 25))
    assert counts["app.f00"] == 30 and "app.f24" not in counts
    run = {"run": tmp_path.name, "target": "app", "device": "none", "Hostname": socket.gethostname()}
    sample = first["gputop_calls"][0]
    assert sample.labels == {**run, "program": "app.py", "function": sample.labels["function"]}
    # Each function's histogram over CALL_BUCKETS_MS: app.f00's 30 calls of 10 us in the first bucket (le 1e-05).
    buckets = [s for s in first["gputop_call_duration_seconds"] if s.labels["function"] == "app.f00"]
    assert [(b.labels["le"], b.value) for b in buckets if b.name.endswith("_bucket")][:2] == [
        ("1e-05", 30.0),
        ("2e-05", 30.0),
    ]
    assert len([b for b in buckets if b.name.endswith("_bucket")]) == len(CALL_BUCKETS_MS) + 1
    # A newcomer busier than all: it counts in other, where the 20 named keep their series.
    state.program.add_calls([["app.hot", 1, i * MS, i * MS + 5_000] for i in range(100)])
    state.publish(force=True)
    second = {s.labels["function"]: s.value for s in scrape(collector)["gputop_calls"]}
    assert set(second) == set(counts) and second["other"] == counts["other"] + 100
    writer.close(None, state="finished", exit_code=0, published=state.published)


def test_gpu_labels_are_those_that_exist() -> None:
    """A GPU NVML does not see (lavapipe's Vulkan device): its UUID, index and name, no PCI bus id; a CPU: none."""
    gpus = GpuLabels()
    uuid = "6d65736132322e332e36000000000000"  # lavapipe's, as IREE lists it; vulkaninfo writes it dashed
    lavapipe = DeviceInfo("vulkan:1", "vulkan", "llvmpipe [software]", None, (), True, kind="software-gpu", uuid=uuid)
    dashed = "6d657361-3232-2e33-2e36-000000000000"
    assert gpus.of(lavapipe) == {"UUID": dashed, "gpu": "1", "modelName": "llvmpipe [software]"}
    cpu = DeviceInfo("local-task", "local-task", "AMD EPYC", None, (), True, kind="cpu")
    assert gpus.of(cpu) == {} and gpus.of(None) == {}
    blank = RunSnapshot("running", "demo:mlp", "mlp", lavapipe, *_blank_fields())
    families = scrape(SnapshotCollector(lambda: blank, {}))
    (info,) = families["gputop_info"]
    assert {"UUID": dashed, "gpu": "1", "modelName": "llvmpipe [software]"}.items() <= info.labels.items()
    assert families["gputop_hints_active"][0].value == 0


def _blank_fields() -> tuple[object, ...]:
    from gputop.core.records.calls import CallStats
    from gputop.core.records.progress import Phases

    return (Phases(), CallStats(), None, (), (), ())


def test_every_family_is_listed_and_documented() -> None:
    listed = run_gputop("serve", "--list-metrics")
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines()]
    assert names == [name for name, _, _ in METRICS]
    documented = set(re.findall(r"`(gputop_[a-z_]+)`", DOCS.read_text()))
    assert {name for name, _, _ in METRICS} <= documented
