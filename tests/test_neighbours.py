"""Who else used the host and the GPU while gputop measured: real competing processes, never mocks of psutil.

On the 2-core machine a busy loop in another process must show as host load
over the run's calls and over its profile pass, flag both in the report and
on stderr, and be named by `gputop compare`; a run with nobody else busy must
not be flagged. The second source is the competitor's own CPU time, read
from the process table (psutil) over the same run: the load gputop reports
must account for it. On an NVIDIA GPU a second process on the device must be
listed with its memory and flag a pass (skipped elsewhere).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from conftest import run_gputop, run_json
from gputop.core.records.neighbours import GpuProcess, HostLoad, Neighbours
from gputop.core.watch import nvml
from gputop.core.watch.neighbour_watch import HostCounters, NeighbourWatch, host_load_limit, is_ours
from gputop.core.wording import host_load_text, neighbours_lines, neighbours_text

BUSY_LOOP = "import time\nwhile True:\n    pass\n"


def busy_process() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", BUSY_LOOP])


def ambient_other_cores(seconds: float = 2.0) -> float:
    """Other processes' CPU over `seconds` while nothing of this test runs: the machine's own load, by psutil."""
    first = HostCounters.read([os.getpid()])
    time.sleep(seconds)
    load = HostCounters.read([os.getpid()]).load_since(first)
    assert load is not None
    return load.other_cores


def test_a_busy_process_is_host_load_that_flags_the_calls_the_pass_and_compare(tmp_path: Path) -> None:
    """A quiet run is not flagged where the machine is quiet (its load read just before, the independent source):
    a CI machine whose neighbours are busy is not one, and there only the busy run's figures are checked."""
    quiet_dir, busy_dir = tmp_path / "quiet", tmp_path / "busy"
    ambient = ambient_other_cores()
    quiet, quiet_report = run_json(
        "demo:mlp", "--device", "local-task", "-n", "150", "--profile", "--session-dir", str(quiet_dir)
    )
    assert quiet.returncode == 0, quiet.stderr
    competitor = busy_process()
    try:
        time.sleep(0.5)  # it is spinning before the run starts
        cpu_before = psutil.Process(competitor.pid).cpu_times()
        started = time.monotonic()
        busy, busy_report = run_json(
            "demo:mlp", "--device", "local-task", "-n", "150", "--profile", "--session-dir", str(busy_dir)
        )
        span = time.monotonic() - started
        cpu_after = psutil.Process(competitor.pid).cpu_times()
    finally:
        competitor.kill()
        competitor.wait()
    assert busy.returncode == 0, busy.stderr
    competitor_cores = (cpu_after.user + cpu_after.system - cpu_before.user - cpu_before.system) / span

    limit = host_load_limit(os.cpu_count() or 1)
    quiet_host = quiet_report["neighbours"]["host"]
    if ambient <= limit / 2:
        assert quiet_host["other_cores"] <= limit and quiet_report["neighbours"]["warning"] is None, (
            quiet_host,
            ambient,
        )
        assert quiet_report["profile"]["neighbours"]["warning"] is None
        assert "busy host" not in quiet.stderr

    calls_host = busy_report["neighbours"]["host"]
    # The busy loop ran through the whole command (start-up included); the calls are most of it.
    assert calls_host["other_cores"] >= max(limit, 0.6 * competitor_cores), (calls_host, competitor_cores)
    assert calls_host["own_cores"] > 0.2 and calls_host["seconds"] > 0
    assert "busy host" in busy_report["neighbours"]["warning"]
    assert "busy host" in busy_report["profile"]["neighbours"]["warning"]
    assert busy_report["profile"]["neighbours"]["host"]["other_cores"] > limit
    # --quiet: no progress lines, but the printed report carries both warnings.
    assert busy.stderr.count("WARNING   others used") == 2, busy.stderr
    assert busy_report["neighbours"]["gpu"] is None  # a CPU device: no GPU processes, and no reason needed

    compared = run_gputop("compare", str(quiet_dir), str(busy_dir))
    assert compared.returncode == 0, compared.stderr
    assert "B's calls: others used" in compared.stdout and "B's profile: others used" in compared.stdout
    rows = [line for line in compared.stdout.splitlines() if line.strip().startswith("others (calls)")]
    assert rows and "A host" in rows[0], compared.stdout

    printed = run_gputop("report", str(busy_dir))
    assert printed.returncode == 0 and "WARNING   others used" in printed.stdout, printed.stdout


def test_the_watch_counts_the_run_own_children_as_its_own() -> None:
    """A child of the engine (a profiling tool) is the run's own CPU once it ends, and its pid is ours."""
    watch = NeighbourWatch(None, [os.getpid()])
    window = watch.open_window()
    child = subprocess.Popen(
        [sys.executable, "-c", "import time\nend = time.time() + 1.0\nwhile time.time() < end: pass"]
    )
    assert is_ours(child.pid, [os.getpid()])
    assert not is_ours(os.getppid(), [os.getpid()]) or os.getppid() == os.getpid()
    child.wait()
    neighbours = watch.close_window(window)
    assert neighbours.host is not None and neighbours.host.own_cores * neighbours.host.seconds >= 0.7


def test_host_counters_move_with_the_host() -> None:
    first = HostCounters.read([os.getpid()])
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    second = HostCounters.read([os.getpid()])
    load = second.load_since(first)
    assert load is not None and load.own_cores > 0.5 and second.busy_s - first.busy_s >= 0.25


def neighbours_of(processes: tuple[GpuProcess, ...], others: int, host: HostLoad | None = None) -> Neighbours:
    return Neighbours("cuda:0", "NVIDIA H100 (nvml:0)", processes, others, None, host, None, 2.0)


def test_the_texts_and_the_warning_rules() -> None:
    """Formatting and flagging on real values: busy others flag, idle ones are listed but do not, our own never."""
    from gputop.core.watch.neighbour_watch import _with_warning

    ours = GpuProcess(100, "gputop", 512 * 2**20, 60, 20, "compute", True)
    idle = GpuProcess(200, "python", 20 * 2**30, 0, 0, "compute", False)
    busy = GpuProcess(300, "python", 2**30, 35, 10, "compute", False)
    hidden = GpuProcess(400, None, None, None, None, "compute", False)
    assert _with_warning(neighbours_of((ours,), 0)).warning is None
    idle_only = _with_warning(neighbours_of((ours, idle), 1))
    assert idle_only.warning is None
    assert neighbours_text(to_dict(idle_only)) == "1 other process on cuda:0: python 20.0 GiB 0% SM"
    flagged = _with_warning(neighbours_of((ours, idle, busy), 2))
    assert flagged.warning is not None and "2 other processes on cuda:0" in flagged.warning
    assert "35% SM" in flagged.warning and "shared GPU" in flagged.warning
    # Utilisation unknown: being there is enough to flag, and the pid says it is not visible here.
    unknown = _with_warning(neighbours_of((ours, hidden), 1))
    assert unknown.warning is not None and "pid 400 (not visible here)" in unknown.warning
    # Another container's pids: one of the two is our engine, so one other busy process is ours, not a neighbour.
    container = GpuProcess(500, None, 2**30, 50, 5, "compute", False)
    assert _with_warning(neighbours_of((container,), 0)).warning is None
    assert _with_warning(neighbours_of((container, busy), 1)).warning is not None
    host = HostLoad(other_cores=0.9, own_cores=1.0, cores=2, seconds=3.0)
    assert host_load_text(to_dict(host)) == "others used 0.90 of 2 cores (this run 1.00)"
    loaded = _with_warning(neighbours_of((), 0, host))
    assert loaded.warning == "others used 0.90 of 2 cores (this run 1.00): times were taken on a busy host"
    lines = neighbours_lines(to_dict(loaded))
    assert lines[0].startswith("others    host: others used 0.90") and lines[-1].startswith("WARNING")
    assert _with_warning(neighbours_of((), 0, HostLoad(0.2, 1.0, 2, 3.0))).warning is None


def to_dict(value: object) -> dict[str, object]:
    from gputop.core.records.base import to_json

    data = to_json(value)
    assert isinstance(data, dict)
    return data


CARRIED = Path(__file__).resolve().parents[1] / ".device" / "perturb"  # on the GPU machine: no compiler there


def cuda_mlp() -> list[str]:
    """demo:mlp on CUDA: the module compiled on the CPU machine where it was carried, else the demo."""
    vmfb = CARRIED / "mlp_cuda.vmfb"
    if not vmfb.is_file():
        return ["demo:mlp", "--device", "cuda"]
    inputs = [arg for path in sorted(CARRIED.glob("mlp_in*.npy")) for arg in ("--input", f"@{path}")]
    return [str(vmfb), "--device", "cuda", "--function", "mlp", *inputs]


@pytest.mark.skipif(nvml.nvml_unavailable_reason() is not None, reason="needs an NVIDIA GPU with NVML")
def test_a_second_process_on_the_gpu_is_listed_and_flags_the_pass(tmp_path: Path) -> None:
    """H100/H200: another `gputop run` calling on cuda:0 is listed with its memory and flags this run's pass."""
    other = subprocess.Popen(
        [sys.executable, "-m", "gputop.tui", "run", *cuda_mlp(), "-n", "1000000", "--quiet",
         "--session-dir", str(tmp_path / "other")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        time.sleep(20)  # loaded and calling
        assert other.poll() is None
        proc, report = run_json(*cuda_mlp(), "-n", "300", "--profile")
    finally:
        other.kill()
        other.wait()
    assert proc.returncode == 0, proc.stderr
    neighbours = report["neighbours"]
    listed = {p["pid"]: p for p in neighbours["processes"]}
    assert neighbours["gpu"] and neighbours["others"] >= 1, neighbours
    if other.pid in listed:  # not where NVML's pids are another namespace's (then its reason says so)
        assert not listed[other.pid]["ours"] and (listed[other.pid]["used_memory_bytes"] or 0) > 0
    else:
        assert "not this container's" in (neighbours["reason"] or ""), neighbours
    assert "shared GPU" in (report["profile"]["neighbours"]["warning"] or ""), report["profile"]["neighbours"]
