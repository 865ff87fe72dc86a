"""What the live TUI tells a new user: a key that cannot act now says why in one line, and what a pane shows is
true of the run in front of it (a baseline from another device says so, sizes read in their own unit, a CPU
run never reports a missing GPU library)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static
from tui_pilot import calls, live_app, profile_now, until_drawn, wait_for

from conftest import run_gputop
from gputop.core.module.compile import compile_module
from gputop.core.module.demos import DEMOS
from gputop.core.module.targets import LOCAL_FLAGS
from gputop.core.multidevice.affinity import affinity_flags
from gputop.core.store.replay import read_snapshots
from gputop.tui.app import GputopApp
from gputop.tui.bridge import ReplaySource
from gputop.tui.panes.log import LogPane
from gputop.tui.panes.table import KeyedTable

DATA = Path(__file__).parent / "data"


def log_text(app: GputopApp) -> str:
    return "\n".join(app.query_one(LogPane).messages)


def _past_session(device: str, out: Path) -> tuple[str, str]:
    """A finished run of demo:mlp on `device`, its calls kept: a baseline `b` can pick. Returns its device id
    and its session's name."""
    proc = run_gputop("run", "demo:mlp", "-d", device, "-n", "30", "-q", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    return str(report["device"]["id"]), Path(report["session_dir"]).name


async def test_b_offers_this_device_first_and_names_another(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 49: on vulkan:0, `b` read `vs base p50 +927.9% ... base 22.8 ms` against a local-task session,
    without a word of it. Same-device sessions come first (however old), and another device is named."""
    monkeypatch.setenv("GPUTOP_STATE_DIR", str(tmp_path / "state"))  # these sessions alone to choose from
    same, same_session = _past_session("local-task", tmp_path / "same.json")  # the older, on this run's device
    other, other_session = _past_session("local-sync", tmp_path / "other.json")  # the newest, on another
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 2)
        await pilot.press("b")
        await wait_for(pilot, lambda: "baseline: " in log_text(app), timeout=10)
        assert f"baseline: {same_session} (demo:mlp) (1 of 2; b for the next)" in log_text(app), log_text(app)
        await until_drawn(pilot, app)
        run_text = str(app.query_one("#run-calls").render())
        assert "vs base" in run_text and same_session in run_text and f" on {other}" not in run_text, run_text
        await pilot.press("b")
        await wait_for(pilot, lambda: f"ms on {other}" in str(app.query_one("#run-calls").render()), timeout=10)
        assert other_session in str(app.query_one("#run-calls").render())
        assert f"{other_session} (demo:mlp), on {other}, not {same}: a comparison across devices (2 of 2" in log_text(
            app
        )


async def test_exports_pane_of_a_precompiled_multi_device_module_says_what_is_true(tmp_path: Path) -> None:
    """A running .vmfb has no affinity analysis (it reads the source): the pane said results were coming."""
    flags = affinity_flags(["local:0", "local:1"], [LOCAL_FLAGS, LOCAL_FLAGS])
    demo = DEMOS["hidden-transfer"]
    vmfb = tmp_path / "hidden_transfer.vmfb"
    shutil.copyfile(compile_module(Path("hidden_transfer.mlir"), flags, source_bytes=demo.source()).vmfb_path, vmfb)
    app = live_app(target=str(vmfb), device=None, devices=("local:0", "local:1"))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 0)
        await until_drawn(pilot, app)
        hint = app.query_one("#exports-hint", Static)
        text = str(hint.render())
        assert hint.display and "once the module is loaded" not in text, text
        assert "no affinity analysis for a precompiled .vmfb" in text and ".mlir" in text, text


async def test_enter_without_a_capture_answers() -> None:
    """`enter` lists the selected capture's dispatches; with none it said nothing, wherever the focus was."""
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 0)
        await until_drawn(pilot, app)
        expected = "enter: no captures in this run: RenderDoc captures Vulkan work; this run is not on Vulkan"
        await pilot.press("enter")  # the Log has the focus
        await wait_for(pilot, lambda: log_text(app).count(expected) == 1, timeout=5)
        app.query_one("#memory-table", DataTable).focus()  # a table with rows, and no use for enter
        await pilot.press("enter")
        await wait_for(pilot, lambda: log_text(app).count(expected) == 2, timeout=5)


async def test_o_after_a_refused_capture_says_why_there_is_none() -> None:
    """Right after `c` was refused on local-task, `o` told the user to press c on a Vulkan run: it gives
    the refusal's reason now, in the same words."""
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 0)
        await pilot.press("c")
        refusal = "RenderDoc captures Vulkan work; this run is on local-task (RenderDoc captures Vulkan only)"
        await wait_for(pilot, lambda: f"capture: {refusal}" in log_text(app), timeout=5)
        await pilot.press("o")
        await wait_for(pilot, lambda: f"open: no captures in this run: {refusal}" in log_text(app), timeout=5)
        assert "press c on a Vulkan run" not in log_text(app)


async def test_p_while_the_module_loads_waits_for_it() -> None:
    """`p` before the first call was dropped (`nothing to profile while compiling`): it waits, and runs."""
    app = live_app(use_cache=False)  # a compile of its own: the run is still getting ready when p comes
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("p")
        await wait_for(pilot, lambda: "profile: queued while " in log_text(app), timeout=5)
        assert "nothing to profile" not in log_text(app)
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.profile is not None, timeout=180)
        assert "profile: the module is loaded; starting the queued profile pass" in log_text(app)
        assert "nothing to profile" not in log_text(app), log_text(app)


async def test_pane_keys_answer_where_every_pane_shows() -> None:
    """1-5 bring a pane forward where they take turns; where all show, the key used to do nothing at all."""
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 0)
        await pilot.press("3")
        await wait_for(pilot, lambda: "3: every pane is on screen at this size" in log_text(app), timeout=5)


async def test_memory_sizes_read_in_their_own_units() -> None:
    """One unit per column made a 4 MiB pool beside a 2 GiB one read `peak GiB 0.00391`."""
    recorded = next(s for s in read_snapshots(DATA / "mlp_local_task.jsonl") if s.memory and s.memory.devices[0].pools)
    assert recorded.memory is not None
    device = recorded.memory.devices[0]
    big, small = device.pools[0], device.pools[-1]
    pools = (
        replace(big, memory_type="HOST_LOCAL", live_bytes=2 * 2**30, peak_bytes=2 * 2**30),
        replace(small, memory_type="DEVICE_LOCAL", live_bytes=512, peak_bytes=4 * 2**20),
    )
    memory = replace(recorded.memory, devices=(replace(device, pools=pools),))
    app = GputopApp(ReplaySource([replace(recorded, memory=memory)]))
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one("#memory-table", KeyedTable)
        key = f"{device.device_id}/DEVICE_LOCAL"
        await wait_for(pilot, lambda: key in table.row_keys, timeout=10)
        row = table.row_cells(key)
        assert (row["peak"], row["live"]) == ("4.0 MiB", "512 B"), row
        assert table.row_cells(f"{device.device_id}/HOST_LOCAL")["peak"] == "2.0 GiB"
        assert "peak" in table.shown


async def test_a_cpu_profile_does_not_report_a_missing_gpu_library() -> None:
    """Every CPU profile logged `NVML Shared Library Not Found`: no news on a run without a GPU."""
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 0)
        await profile_now(app, pilot)
        await until_drawn(pilot, app)
        assert app.snapshot is not None and app.snapshot.profile is not None
        assert "warm-up skipped: local-task is a CPU device" in log_text(app)
        assert "NVML" not in log_text(app), log_text(app)
        assert "NVML" not in (app.snapshot.profile.clocks_reason or "")
