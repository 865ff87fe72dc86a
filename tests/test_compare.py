"""`gputop compare`: the statistics against a published example, synthetic reports, the gate, and real runs.

The Mann-Whitney U code is checked against SciPy's documented example (Conover's
diabetes diagnosis ages: U = 17, exact p = 0.1111, asymptotic 0.1113 with the
continuity correction and 0.0864 without). The real runs are short runs of
demo:mlp on local-task: a few A/A pairs (the 20-pair experiment is in
BENCHMARKS.md), an A/B pair compiled for a generic x86-64 CPU (no AVX: every matmul slower), a session
compared with itself by id, two ONNX runs by id, and every bad input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tui_pilot import wait_for

from conftest import assert_one_line_error, run_gputop, run_json
from gputop.core.call_times import CallTimer
from gputop.core.compare import compare_reports, gate
from gputop.core.compare.samples import call_samples, dispatch_samples, samples_block
from gputop.core.compare.significance import bootstrap_change, mann_whitney_u
from gputop.core.errors import EXIT_REGRESSION, EXIT_UNDECIDED, EXIT_USAGE

MALES = [19, 22, 16, 29, 24]
FEMALES = [20, 11, 17, 12]


def test_mann_whitney_u_matches_scipys_documented_example() -> None:
    exact = mann_whitney_u(np.array(MALES), np.array(FEMALES))
    assert exact.method == "exact" and exact.u == 17.0
    assert exact.p == pytest.approx(0.1111111111111111, rel=1e-12)
    corrected = mann_whitney_u(np.array(MALES), np.array(FEMALES), method="asymptotic")
    assert corrected.p == pytest.approx(0.11134688653314041, rel=1e-9)
    plain = mann_whitney_u(np.array(MALES), np.array(FEMALES), method="asymptotic", continuity=False)
    assert plain.p == pytest.approx(0.0864107329737, rel=1e-9)
    # U of the second sample is n1 n2 - U1, and the test is symmetric.
    other = mann_whitney_u(np.array(FEMALES), np.array(MALES))
    assert other.u == 3.0 and other.p == pytest.approx(exact.p)


def test_mann_whitney_u_with_ties_and_identical_samples() -> None:
    same = mann_whitney_u(np.ones(50), np.ones(40))
    assert same.p == 1.0
    rng = np.random.default_rng(1)
    a = np.round(rng.normal(10, 1, 400), 1)  # many ties
    assert mann_whitney_u(a, a + 0.5).p < 1e-6
    assert mann_whitney_u(a, rng.permutation(a)).p > 0.9


def test_bootstrap_interval_covers_the_true_change() -> None:
    rng = np.random.default_rng(2)
    a = rng.gamma(9.0, 1.0, 3000)
    b = rng.gamma(9.0, 1.0, 3000) * 1.10
    change, low, high = bootstrap_change(a, b, "p50")
    assert low < 0.10 < high and low > 0.05 and abs(change - 0.10) < 0.03
    # Deterministic: the same samples give the same interval.
    assert bootstrap_change(a, b, "p50") == (change, low, high)
    block = bootstrap_change(a, b, "mean", blocks=10)
    assert block[1] < 0.10 < block[2]


def test_call_reservoir_is_uniform_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    import gputop.core.call_times as stats

    monkeypatch.setattr(stats, "RESERVOIR", 200)
    timer = CallTimer()
    for i in range(150):
        timer.add(i / 1e3)
    assert list(timer.kept()) == pytest.approx([float(i) for i in range(150)])  # every call, in order
    for i in range(150, 20_000):
        timer.add(i / 1e3)
    kept = timer.kept()
    assert len(kept) == 200 and timer.count == 20_000
    assert abs(kept.mean() - 10_000) < 1_500  # a uniform sample of 0..19999 ms, not the newest
    block = call_samples(kept, timer.count)
    assert block["uniform"] and block["kept"] == 200 and block["count"] == 20_000


def _report(
    target: str = "demo:mlp",
    calls: np.ndarray | None = None,
    kernels: dict[str, np.ndarray] | None = None,
    flags: tuple[str, ...] = (),
) -> dict[str, Any]:
    calls = calls if calls is not None else np.full(100, 10.0)
    kernels = kernels or {}
    rows = [
        {"name": name, "count": len(v), "avg_us": float(v.mean()), "p50_us": float(np.median(v)), "per_call": 1.0}
        for name, v in kernels.items()
    ]
    events = [(name, us * 1e3) for name, v in kernels.items() for us in v]
    return {
        "target": target,
        "function": "main",
        "state": "finished",
        "device": {"id": "local-task", "name": "CPU"},
        "compile": {"flags": list(flags), "cache_key": "k" + "".join(flags)},
        "calls": {"count": len(calls), "p50_ms": float(np.median(calls))},
        "kernels": rows,
        "phases": {"compile_s": 1.0, "first_call_s": 0.1},
        "memory": {"devices": [{"device_id": "local-task", "peak_live_bytes": 1024, "pools": []}]},
        "samples": samples_block(
            call_samples(calls, len(calls)),
            dispatch_samples(events, calls=len(calls), source="test", device="local-task", passes=1),
        ),
    }


def test_kernels_matched_by_name_position_and_fusion() -> None:
    rng = np.random.default_rng(3)

    def noise(scale: float) -> np.ndarray:
        return rng.normal(scale, scale * 0.01, 200)

    a = _report(
        calls=noise(10.0),
        kernels={
            "main_dispatch_0_matmul_64": noise(100.0),
            "main_dispatch_1_generic": noise(50.0),
            "main_dispatch_2_add": noise(5.0),
            "main_dispatch_3_mul": noise(5.0),
        },
    )
    b = _report(
        calls=noise(13.0),
        kernels={
            "main_dispatch_0_matmul_64": noise(150.0),
            "main_dispatch_1_generic": noise(50.0),
            "main_dispatch_2_add_mul": noise(8.0),  # two kernels fused into one
        },
        flags=("--x",),
    )
    result = compare_reports(a, b)
    by_name = {k.name: k for k in result.kernels}
    assert by_name["main_dispatch_0_matmul_64"].change is not None
    assert by_name["main_dispatch_0_matmul_64"].change.mark.startswith("+50.")
    assert by_name["main_dispatch_1_generic"].change.mark == "~"  # type: ignore[union-attr]
    assert {k.name for k in result.kernels if k.match == "only A"} == {"main_dispatch_2_add", "main_dispatch_3_mul"}
    assert [k.name for k in result.kernels if k.match == "only B"] == ["main_dispatch_2_add_mul"]
    assert result.call("p50").significant  # type: ignore[union-attr]
    assert "B is 30." in result.verdict and "% slower" in result.verdict
    assert "2 kernels only in A, 1 only in B" in result.verdict
    assert any(c.what == "compile flags" and c.differs for c in result.conditions)
    outcome = gate(result, "p50", 0.05)
    assert outcome.failed and "% slower than the baseline" in outcome.line
    assert not gate(result, "p50", 0.40).failed
    assert gate(result, "kernel:matmul_64", 0.05).failed


def test_a_renamed_kernel_is_paired_by_its_dispatch_ordinal() -> None:
    rng = np.random.default_rng(4)
    a = _report(kernels={"f_dispatch_0_matmul_8x8": rng.normal(10, 0.1, 100)})
    b = _report(kernels={"f_dispatch_0_mmt4d_8x8": rng.normal(10, 0.1, 100)})
    (kernel,) = compare_reports(a, b).kernels
    assert kernel.match == "position" and kernel.name_a == "f_dispatch_0_matmul_8x8"


def test_identical_samples_are_no_change() -> None:
    rng = np.random.default_rng(5)
    calls = rng.gamma(20, 0.5, 500)
    result = compare_reports(_report(calls=calls), _report(calls=calls.copy()))
    assert all(c.mark == "~" for c in result.calls)
    assert result.verdict.startswith("no significant change")
    # Calls that wander (gamma samples, in order: a floor of about 25%) cannot vouch for a 0% threshold: the gate
    # fails closed as undecided, never as a regression; above the floor it passes (issue 57 item 15).
    strict = gate(result, "p95", 0.0)
    assert strict.failed and strict.undecided and "would not show" in strict.line
    assert not gate(result, "p95", 0.5).failed


# -- real runs ---------------------------------------------------------------------------------


def _run(tmp_path: Path, name: str, *extra: str, calls: int = 300) -> tuple[Path, dict[str, Any]]:
    out = tmp_path / f"{name}.json"
    proc = run_gputop(
        "run", "demo:mlp", "-d", "local-task", "-n", str(calls), "--profile", "--profile-calls", "50", "-q",
        "--json", str(out), *extra,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return out, json.loads(out.read_text())


def test_session_keeps_its_samples_bounded(tmp_path: Path) -> None:
    _, report = _run(tmp_path, "one", calls=50)
    samples = report["samples"]
    assert samples["calls"]["count"] == 50 and len(samples["calls"]["ms"]) == 50
    assert samples["calls"]["reservoir"] == 20_000
    kernels = samples["dispatches"]["us"]
    assert set(kernels) == {k["name"] for k in report["kernels"]}
    assert all(len(v) == 50 for v in kernels.values())  # one dispatch per call, 50 profiled calls
    on_disk = json.loads((Path(report["session_dir"]) / "calls.json").read_text())
    assert on_disk["calls"]["ms"] == samples["calls"]["ms"]
    assert report["target_sha256"] and len(report["target_sha256"]) == 64


@pytest.mark.slow
def test_a_a_runs_of_the_same_module_pass_the_gate(tmp_path: Path) -> None:
    """Five separate pairs of demo:mlp runs: at most one is called different or fails the gate.

    On the shared 2-core machine a fresh 20-pair experiment marked 2 / 20 and failed the gate in
    1 / 20 (BENCHMARKS.md, "Comparing runs"): one of five is what that rate allows without flaking.
    """
    alarms = failures = 0
    for pair in range(5):
        a, _ = _run(tmp_path, f"a{pair}")
        b, _ = _run(tmp_path, f"b{pair}")
        proc = run_gputop("compare", str(a), str(b), "--fail-above", "5%", "--json", str(tmp_path / "c.json"))
        # 8: the pair was too noisy to tell (a level offset beyond chance inside the runs' wander): not a pass,
        # never a regression either (issue 57 item 15).
        assert proc.returncode in (0, EXIT_REGRESSION, EXIT_UNDECIDED), proc.stderr
        failures += proc.returncode == EXIT_REGRESSION
        data = json.loads((tmp_path / "c.json").read_text())
        alarms += next(c for c in data["calls"] if c["stat"] == "p50")["significant"]
    assert alarms <= 1 and failures <= 1, (alarms, failures)


# x86-64 without AVX/FMA: every matmul of demo:mlp runs 2-3x slower (measured: 117 ms p50 against ~45 ms).
SLOW_FLAG = "--iree-llvmcpu-target-cpu=generic"
SLOW_TARGET = f"--iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu {SLOW_FLAG}"


@pytest.mark.slow
def test_a_b_with_a_slower_compile_is_a_regression(tmp_path: Path) -> None:
    a, _ = _run(tmp_path, "fast")
    b, _ = _run(tmp_path, "slow", "--target-flags", SLOW_TARGET)
    proc = run_gputop("compare", str(a), str(b), "--fail-above", "5%", "--json", str(tmp_path / "c.json"))
    assert proc.returncode == EXIT_REGRESSION, proc.stderr
    assert "regression: call time p50 is +" in proc.stderr
    data = json.loads((tmp_path / "c.json").read_text())
    flags = next(c for c in data["conditions"] if c["what"] == "compile flags")
    assert flags["differs"] and SLOW_FLAG in flags["b"]
    slower = [
        k["name"] for k in data["kernels"] if k["change"] and k["change"]["significant"] and k["change"]["change"] > 0
    ]
    assert any("matmul_256x1024x1024" in name for name in slower), data["kernels"]
    # The same gate at the end of a run: gputop run --baseline A --fail-above.
    proc = run_gputop(
        "run", "demo:mlp", "-d", "local-task", "-n", "300", "-q", "--target-flags", SLOW_TARGET,
        "--baseline", str(a), "--fail-above", "5%",
    )  # fmt: skip
    assert proc.returncode == EXIT_REGRESSION, proc.stderr
    assert "regression" in proc.stderr and "verdict: B is" in proc.stdout


def test_a_kernel_renamed_by_a_real_compile_is_shown_as_renamed(tmp_path: Path) -> None:
    """demo:mlp against the same MLP with its first layer in f16: IREE names that dispatch
    `..._f16xf16xf32`; compare pairs it with the f32 one by its dispatch ordinal and says so."""
    a, _ = _run(tmp_path, "f32", calls=100)
    b = tmp_path / "f16.json"
    proc = run_gputop(
        "run", str(Path(__file__).parent / "data" / "mlp_f16.mlir"), "-d", "local-task", "-n", "100", "--profile",
        "--profile-calls", "50", "-q", "--json", str(b),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    proc = run_gputop("compare", str(a), str(b), "--json", str(tmp_path / "c.json"))
    assert proc.returncode == 0, proc.stderr
    kernels = json.loads((tmp_path / "c.json").read_text())["kernels"]
    renamed = [k for k in kernels if k["match"] == "position"]
    assert [(k["name_a"], k["name_b"]) for k in renamed] == [
        ("mlp_dispatch_0_matmul_256x1024x1024_f32", "mlp_dispatch_0_matmul_256x1024x1024_f16xf16xf32")
    ], kernels
    assert {k["match"] for k in kernels} == {"name", "position"}  # the other two keep their names
    assert "-> mlp_dispatch_0_matmul_256x1024x1024_f16xf16xf32" in proc.stdout and "(renamed)" in proc.stdout


def test_a_session_compared_with_itself_by_id(tmp_path: Path) -> None:
    _, report = _run(tmp_path, "self", calls=100)
    session = Path(report["session_dir"]).name
    prefix = session[:-2] if len(session) > 2 else session
    proc = run_gputop("compare", session, prefix, "--json", str(tmp_path / "c.json"))
    assert proc.returncode == 0, proc.stderr
    assert "conditions: the same" in proc.stdout
    assert "verdict: no significant change (p50 +0.0%" in proc.stdout
    # The gate at 1%: a pass only where the run's calls are steady enough to have shown a 1% regression; where
    # they wander further (as on the shared 2-core machine), it cannot tell and fails closed (exit 8).
    floor = next(c for c in json.loads((tmp_path / "c.json").read_text())["calls"] if c["stat"] == "p50")["floor"]
    gated = run_gputop("compare", session, session, "--fail-above", "1%")
    assert gated.returncode == (EXIT_UNDECIDED if floor > 0.01 else 0), gated.stderr


def test_two_onnx_runs_by_session_id(tmp_path: Path) -> None:
    import onnx

    model = (
        Path(onnx.__file__).parent / "backend" / "test" / "data" / "pytorch-converted" / "test_Linear" / "model.onnx"
    )
    ids = []
    for _ in range(2):
        proc, report = run_json(str(model), "--device", "cpu", "-n", "200", "--profile", "--profile-calls", "20")
        assert proc.returncode == 0, proc.stderr
        ids.append(Path(report["session_dir"]).name)
    listed = run_gputop("sessions")
    assert all(i in listed.stdout for i in ids)
    proc = run_gputop("compare", *ids, "--json", "-")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["kernels"] and all(k["match"] == "name" for k in data["kernels"])
    assert "verdict:" not in proc.stdout and data["verdict"]


def test_bad_inputs_are_one_line_and_exit_2(tmp_path: Path) -> None:
    good, _ = _run(tmp_path, "good", calls=20)
    proc = run_gputop("compare", str(good), "no-such-session-xyz")
    assert_one_line_error(proc, EXIT_USAGE, "no such session")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**json.loads(good.read_text()), "target": "demo:conv"}))
    assert_one_line_error(run_gputop("compare", str(good), str(other), "--fail-above", "5%"), EXIT_USAGE, "one target")
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({**json.loads(good.read_text()), "calls": {"count": 0}}))
    assert_one_line_error(run_gputop("compare", str(good), str(empty)), EXIT_USAGE, "no calls to compare")
    assert_one_line_error(run_gputop("compare", str(good), str(good), "--metric", "p99"), EXIT_USAGE, "--metric")
    assert_one_line_error(
        run_gputop("run", "demo:mlp", "-d", "local-task", "-n", "1", "--fail-above", "5%"), EXIT_USAGE, "--baseline"
    )
    assert_one_line_error(
        run_gputop("run", "demo:mlp", "-n", "1", "--baseline", "no-such-session-xyz"), EXIT_USAGE, "no such session"
    )


def test_tui_options_keep_baseline_from_the_engine() -> None:
    from gputop.tui.cli.tui import without_baseline

    assert without_baseline(["demo:mlp", "--baseline", "x", "-d", "cpu", "--baseline=y"]) == ["demo:mlp", "-d", "cpu"]


async def test_b_picks_a_baseline_among_past_sessions_of_the_target(tmp_path: Path) -> None:
    from gputop.tui.app import GputopApp
    from gputop.tui.bridge import ReplaySource
    from gputop.tui.panes.table import KeyedTable

    _run(tmp_path, "past", calls=30)  # a past session of demo:mlp with kept samples
    recording = Path(__file__).parent / "data" / "mlp_profiled_local_task.jsonl"
    app = GputopApp(ReplaySource.from_file(recording))
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause(0.5)
        assert app.baseline is None
        await pilot.press("b")
        await wait_for(pilot, lambda: "vs base" in app.query_one("#kernels-table", KeyedTable).shown, timeout=30)
        assert app.baseline is not None and app.baseline.target == "demo:mlp"
        for _ in range(200):  # past the oldest: no baseline again
            if app.baseline is None:
                break
            await pilot.press("b")
        assert app.baseline is None
        await wait_for(pilot, lambda: "vs base" not in app.query_one("#kernels-table", KeyedTable).shown, timeout=5)


# -- issue 57 item 15: a gate that passed a 2x regression ----------------------------------------------------------

WANDER = Path(__file__).parent / "data" / "compare_wander"


def _block_wander(values: list[float]) -> float:
    """The range of ten consecutive stretches' medians over their median, by NumPy here (the floor's rule)."""
    x = np.asarray(values)
    medians = np.median(x[: len(x) // 10 * 10].reshape(10, -1), axis=1)
    return float((medians.max() - medians.min()) / np.median(medians))


def test_a_pair_too_noisy_to_judge_cannot_tell_and_the_gate_fails_closed(tmp_path: Path) -> None:
    """Two real runs of demo:mlp on the busy 2-core machine (tests/data/compare_wander: local-task, 800 calls,
    A; local-sync, 400 calls, B; --profile, 100 profiled calls): B's kernels are several times slower beyond
    their floor, its calls' p50 +153% beyond chance (p=0.00018), but B's calls wandered by 159% and A's by 47%
    and that is the floor. The old gate passed it as `no significant change`; now the row shows the change in
    brackets, the verdict says it cannot tell and names the kernels that moved, and the gate exits 8.

    Independent figures: each run's wander and each kernel's change recomputed here with NumPy from the
    reports' own kept samples (calls in order; each kernel's per-dispatch times)."""
    a, b = (
        json.loads((WANDER / "mlp_local_task.json").read_text()),
        json.loads((WANDER / "mlp_local_sync.json").read_text()),
    )
    wander_a, wander_b = (_block_wander(r["samples"]["calls"]["ms"]) for r in (a, b))
    assert wander_b > 1.0 and wander_a + wander_b > 1.5  # B's calls wandered by more than 100%
    changes = {
        name: float(np.median(b["samples"]["dispatches"]["us"][name])) / float(np.median(times)) - 1
        for name, times in a["samples"]["dispatches"]["us"].items()
    }
    proc = run_gputop(
        "compare", str(WANDER / "mlp_local_task.json"), str(WANDER / "mlp_local_sync.json"), "--fail-above", "5%",
        "--json", str(tmp_path / "c.json"),
    )  # fmt: skip
    assert proc.returncode == EXIT_UNDECIDED == 8, proc.stderr
    data = json.loads((tmp_path / "c.json").read_text())
    p50 = next(c for c in data["calls"] if c["stat"] == "p50")
    assert not p50["significant"] and p50["p"] < 0.05 and p50["low"] > 0.05  # beyond chance, slower
    assert p50["wander_a"] == pytest.approx(wander_a, rel=1e-6) and p50["wander_b"] == pytest.approx(wander_b, rel=1e-6)
    assert p50["change"] < p50["floor"] == pytest.approx(wander_a + wander_b)
    assert p50["mark"] == f"({p50['change'] * 100:+.1f}%)"
    moved = [k for k in data["kernels"] if k["change"] and k["change"]["significant"]]
    assert len(moved) >= 2 and all(k["change"]["change"] > 1.0 for k in moved)  # more than 2x, beyond their floor
    for kernel in moved:
        assert kernel["change"]["change"] == pytest.approx(changes[kernel["name"]], rel=1e-6)
    verdict = data["verdict"]
    assert verdict.startswith(
        f"cannot tell: B's calls wander by {wander_b * 100:.0f}% and A's by {wander_a * 100:.0f}%"
    )
    assert "no significant change" not in verdict and "the kernels moved beyond their floor: " in verdict
    assert all(f"{k['name']} {k['change']['change'] * 100:+.0f}%" in verdict for k in moved[:3])
    assert data["gate"]["undecided"] and data["gate"]["failed"]
    assert "gate passed" not in proc.stderr and "gputop: cannot tell: B's calls wander by" in proc.stderr
    assert f"verdict: {verdict}" in proc.stdout and f"({p50['change'] * 100:+.1f}%)" in proc.stdout
    # Without a gate: the same verdict, exit 0; gating one of the kernels that moved: a regression, exit 7.
    proc = run_gputop("compare", str(WANDER / "mlp_local_task.json"), str(WANDER / "mlp_local_sync.json"))
    assert proc.returncode == 0 and f"verdict: {verdict}" in proc.stdout
    proc = run_gputop(
        "compare", str(WANDER / "mlp_local_task.json"), str(WANDER / "mlp_local_sync.json"), "--fail-above", "5%",
        "--metric", f"kernel:{moved[0]['name']}",
    )  # fmt: skip
    assert proc.returncode == EXIT_REGRESSION, proc.stderr
    # The exit code is documented where a user looks for it.
    helptext = " ".join(run_gputop("compare", "--help").stdout.split())
    assert "exit 8 when the runs cannot tell" in helptext and "exit 8 (cannot tell)" in helptext


def test_runs_too_noisy_for_the_threshold_fail_the_gate_closed_without_a_slowdown(tmp_path: Path) -> None:
    """A report against itself: no change at all, but its calls wander by far more than 5%, so a 5% regression
    could not have shown either. The gate may not vouch for it: `cannot tell`, exit 8 (issue 57 item 15); the
    same pair without a gate exits 0, and with a threshold above the floor it passes."""
    a = str(WANDER / "mlp_local_task.json")
    proc = run_gputop("compare", a, a, "--fail-above", "5%", "--json", str(tmp_path / "c.json"))
    assert proc.returncode == EXIT_UNDECIDED, proc.stderr
    assert "cannot tell: " in proc.stderr and "a regression under" in proc.stderr and "would not show" in proc.stderr
    assert "gate passed" not in proc.stderr
    floor = next(c for c in json.loads((tmp_path / "c.json").read_text())["calls"] if c["stat"] == "p50")["floor"]
    assert floor > 0.05, floor
    assert run_gputop("compare", a, a).returncode == 0
    above = run_gputop("compare", a, a, "--fail-above", f"{floor * 100 + 1:.0f}%")
    assert above.returncode == 0 and "gate passed" in above.stderr, above.stderr
