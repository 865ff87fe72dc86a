"""The live TUI with the real engine on local-task: every key, errors, snapshots."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import DataTable, Static
from tui_pilot import calls, choose_device, live_app, profile_now, until_drawn, wait_for

from gputop.core.module.compile import compile_module
from gputop.core.module.demos import DEMOS
from gputop.core.module.targets import LOCAL_FLAGS
from gputop.core.store.replay import read_snapshots
from gputop.tui.app import GputopApp
from gputop.tui.bridge import NAME_MARK, NAME_NOTE, CaptureInfo, ReplaySource, SnapshotArrived
from gputop.tui.panes.log import LogPane
from gputop.tui.panes.table import KeyedTable
from gputop.tui.screens import CaptureScreen, HelpScreen, RooflineScreen
from gputop.tui.text import DISPATCH_COLUMNS


def log_text(app: GputopApp) -> str:
    return "\n".join(app.query_one(LogPane).messages)


async def test_live_run_fills_the_panes() -> None:
    app = live_app()
    seen: list[SnapshotArrived] = []
    async with app.run_test(
        size=(120, 40), message_hook=lambda m: seen.append(m) if isinstance(m, SnapshotArrived) else None
    ) as pilot:
        await wait_for(pilot, lambda: calls(app) > 3)
        await until_drawn(pilot, app)
        assert app.snapshot is not None and app.snapshot.state == "running"
        assert seen and app.frames >= 1
        # Coalescing and the frame cap (MIN_FRAME_S): frames follow the snapshots, never a backlog.
        run_text = str(app.query_one("#run-calls").render())
        assert "calls" in run_text and "p50" in run_text
        memory_rows = app.query_one("#memory-table").row_count  # type: ignore[attr-defined]
        assert memory_rows >= 1
        assert app.query_one("#exports-table").row_count == 1  # type: ignore[attr-defined]
        assert "outputs match the NumPy reference" in log_text(app)
        await pilot.press("q")
        await pilot.pause(0.5)
    assert app.return_code == 0
    assert app.source.session is not None and app.source.session.done  # type: ignore[attr-defined]


async def test_space_pauses_and_resumes() -> None:
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 2)
        await pilot.press("space")
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.state == "paused")
        await pilot.pause(0.5)
        frozen = calls(app)
        await pilot.pause(0.5)
        assert calls(app) == frozen
        assert f"calls {frozen}  paused" in str(app.query_one("#run-calls").render())  # no rate while paused
        await pilot.press("space")
        await wait_for(pilot, lambda: calls(app) > frozen)
        assert "paused" in log_text(app) and "resumed" in log_text(app)


async def test_keys_that_say_why_not() -> None:
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 0)
        await pilot.press("c")
        await pilot.pause(0.2)
        text = log_text(app)
        assert "capture: RenderDoc captures Vulkan work; this run is on local-task" in text
        await pilot.press("o")
        await pilot.pause(0.1)
        # `o` gives the refusal's own reason, not "press c on a Vulkan run" (issue 49)
        refusal = "RenderDoc captures Vulkan work; this run is on local-task"
        assert f"open: no captures in this run: {refusal}" in log_text(app)


async def test_help_screen_and_quit_from_it() -> None:
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), timeout=5.0)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen), timeout=5.0)
        await pilot.press("question_mark")
        await pilot.press("q")
        await pilot.pause(0.5)
    assert app.return_code == 0


async def test_export_and_screenshot_go_into_the_session_dir() -> None:
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 1)
        await pilot.press("e")
        await pilot.press("s")
        await app.workers.wait_for_complete()  # the export runs in a worker
        await pilot.pause(0.3)
        session_dir = app.source.session_dir
        assert session_dir is not None
        # A mid-run export sits beside the record; report.json is the run's last word, written at its end.
        exports = list(session_dir.glob("report-*.json"))
        assert len(exports) == 1 and not (session_dir / "report.json").exists()
        report = json.loads(exports[0].read_text())
        assert {"device", "phases", "calls", "memory", "kernels", "exports", "captures", "diagnostics"} <= report.keys()
        assert report["calls"]["count"] >= 1 and report["record"]["samples_published"] >= 1
        assert list(session_dir.glob("*.svg"))
        assert f"report written to {exports[0]}" in log_text(app) and "screenshot saved to" in log_text(app)


async def test_reload_starts_a_new_session() -> None:
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 1)
        first = app.source.session  # type: ignore[attr-defined]
        await pilot.press("r")
        await wait_for(pilot, lambda: app.source.session is not first and calls(app) > 0)  # type: ignore[attr-defined]
        assert first.done
        assert "reloading" in log_text(app)


async def test_device_chooser_moves_the_run() -> None:
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 0)
        await choose_device(app, pilot, "local-sync")
        await wait_for(
            pilot,
            lambda: (
                app.snapshot is not None
                and app.snapshot.device is not None
                and app.snapshot.device.id == "local-sync"
                and calls(app) > 0
            ),
        )


async def test_compile_error_is_one_line_in_the_log(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32\n}\n")
    app = live_app(target=str(bad))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.state == "error")
        await until_drawn(pilot, app)
        errors = [line for line in log_text(app).splitlines() if "bad.mlir:2:" in line]
        assert len(errors) == 1 and "full log:" in errors[0], log_text(app)
        assert app.snapshot.error_exit_code == 3, log_text(app)


async def test_unavailable_device_is_shown() -> None:
    app = live_app(device="vulkan:42")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.state == "error")
        await until_drawn(pilot, app)
        assert "vulkan:42 does not exist" in log_text(app) or "unavailable" in log_text(app), log_text(app)
        assert app.snapshot.error_exit_code == 4, log_text(app)


async def test_snapshots_keep_coming_while_help_is_open() -> None:
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 0)
        await pilot.press("question_mark")
        frames = app.frames
        await wait_for(pilot, lambda: app.frames > frames + 3)
        assert isinstance(app.screen, HelpScreen)


async def test_p_profiles_into_the_kernels_pane() -> None:
    app = live_app()
    async with app.run_test(size=(200, 60)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 0)
        await profile_now(app, pilot)
        table = app.query_one("#kernels-table", KeyedTable)
        await wait_for(pilot, lambda: table.row_count == 3, timeout=5.0)
        assert any("profile: 3 kernels" in line for line in app.query_one(LogPane).messages)
        # Each row says how close the kernel came to the device's limit; at 200 columns every column shows but
        # p50, the last to go, which gives its room to the kernel's `from` (its source lines: mlp.mlir:7:9 +1).
        assert set(table.shown) >= {c.name for c in table.columns_all} - {"p50"} and "from" in table.shown
        row = table.row_cells("mlp_dispatch_0_matmul_256x1024x1024_f32")
        assert row["kernel"] == "0 matmul_256x1024x1024" and str(row["%peak"]).endswith("%")
        assert float(str(row["FLOP/s"])) > 0 and str(table.columns["FLOP/s"].label).endswith("FLOP/s")
        assert row["bound"] in ("compute", "memory")
        assert "peak" in str(app.query_one("#kernels-summary").render())
        # f: the roofline, each kernel numbered under the ceilings; escape closes it.
        await pilot.press("f")
        await wait_for(pilot, lambda: "roofs: compute" in roofline_text(app))
        assert isinstance(app.screen, RooflineScreen)
        chart = roofline_text(app)
        assert "roofs: compute" in chart and "dispatch_0_matmul_256x1024x1024_f32" in chart
        assert any(0x2801 <= ord(c) <= 0x28FF for c in chart), "the ceilings are drawn in braille"
        # The chart marks each kernel with the number the Kernels table shows before its name (0, 1, 2).
        numbers = [str(table.row_cells(k.name)["kernel"]).split()[0] for k in app.snapshot.profile.kernels]
        assert sorted(numbers) == ["0", "1", "2"]
        legend = {line.split()[1]: line.split()[0] for line in chart.splitlines() if "dispatch_" in line}
        assert legend == {f"dispatch_{n}_" + k.name.split(f"dispatch_{n}_")[1]: n
                          for n, k in zip(numbers, app.snapshot.profile.kernels, strict=True)}  # fmt: skip
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, RooflineScreen), timeout=5.0)
        # The run goes on after the pass.
        before = calls(app)
        await wait_for(pilot, lambda: calls(app) > before)


async def test_work_read_from_dispatch_names_is_marked_in_the_kernels_pane(tmp_path: Path) -> None:
    """A `.vmfb` without its executable sources: the matmuls' work comes from their names, marked `*`."""
    bare = tmp_path / "mlp.vmfb"
    shutil.copyfile(compile_module(Path("mlp.mlir"), LOCAL_FLAGS, source_bytes=DEMOS["mlp"].source()).vmfb_path, bare)
    app = live_app(target=str(bare))
    async with app.run_test(size=(200, 60)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 0)
        await profile_now(app, pilot)
        await until_drawn(pilot, app)
        table = app.query_one("#kernels-table", KeyedTable)
        row = table.row_cells("mlp_dispatch_0_matmul_256x1024x1024_f32")
        assert row["kernel"] == "0 matmul_256x1024x1024 *" and float(str(row["FLOP/s"])) > 0
        note = app.query_one("#kernels-note", Static)
        assert note.display and str(note.render()) == f"{NAME_MARK} {NAME_NOTE}"
        await pilot.press("f")
        await wait_for(pilot, lambda: "(work from its name)" in roofline_text(app))


def roofline_text(app: GputopApp) -> str:
    """The roofline window's chart as drawn (NoMatches until the window has composed it)."""
    return str(app.screen.query_one("#roofline-chart").render())


async def test_a_terminal_too_small_says_so() -> None:
    app = GputopApp(ReplaySource.from_file(Path(__file__).parent / "data" / "mlp_local_task.jsonl"))
    async with app.run_test(size=(50, 12)) as pilot:
        await pilot.pause(0.3)
        notice = app.query_one("#too-small")
        assert notice.display and "50x12 is too small" in str(notice.render())
        assert not app.query_one("#panes").display
        await pilot.resize_terminal(120, 40)
        await wait_for(pilot, lambda: not app.query_one("#too-small").display and app.query_one("#panes").display, 5.0)


# -- the Captures pane: enter lists a capture's dispatches, o opens it ----------------------------------
DATA = Path(__file__).parent / "data"


def with_capture(capture: Path) -> GputopApp:
    """The recorded local-task run, its last snapshot holding one capture (a real .rdc from tests/data)."""
    snapshots = read_snapshots(DATA / "mlp_local_task.jsonl")
    info = CaptureInfo(str(capture), capture.stat().st_size, 1, ("recorded",), "Vulkan")
    snapshots[-1] = replace(snapshots[-1], captures=(info,))
    return GputopApp(ReplaySource(snapshots))


def renderdoc_module_or_skip() -> None:
    python = Path("/usr/bin/python3.11")
    if not python.exists() or subprocess.run([python, "-c", "import renderdoc"], check=False).returncode != 0:
        pytest.skip("RenderDoc's Python module is not installed (apt-get install python3-renderdoc)")


async def open_dispatch_list(app: GputopApp, pilot: Pilot[int]) -> CaptureScreen:
    await wait_for(pilot, lambda: app.query_one("#captures-table", DataTable).row_count == 1)
    app.query_one("#captures-table", DataTable).focus()
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(app.screen, CaptureScreen))
    screen = app.screen
    assert isinstance(screen, CaptureScreen)
    await wait_for(pilot, lambda: screen.query_one("#capture-dispatches", DataTable).row_count > 0)  # mounted
    return screen


async def test_enter_on_an_h200_capture_lists_its_dispatches() -> None:
    renderdoc_module_or_skip()
    app = with_capture(DATA / "scale_vulkan_h200.rdc")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_dispatch_list(app, pilot)
        table = screen.query_one("#capture-dispatches", DataTable)
        assert [str(c.label) for c in table.ordered_columns] == list(DISPATCH_COLUMNS)
        assert table.get_row_at(0) == [
            "0",
            "scale_dispatch_0_elementwise_8_f32",
            "1x1x1",
            "0: 32 B, 1: 32 B, 2: 32 B",
            "-",
        ]
        replay = str(screen.query_one("#capture-replay", Static).render())
        assert replay.startswith("not replayed: vendor mismatch: captured on NVIDIA H200")
        assert "not replayed: vendor mismatch" in log_text(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, CaptureScreen), timeout=5.0)


async def test_enter_on_a_lavapipe_capture_shows_replayed_gpu_times(vulkan_device: str) -> None:
    renderdoc_module_or_skip()
    app = with_capture(DATA / "lavapipe_compute.rdc")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_dispatch_list(app, pilot)
        table = screen.query_one("#capture-dispatches", DataTable)
        rows = [table.get_row_at(i) for i in range(table.row_count)]
        assert [row[1:3] for row in rows] == [
            ["demo_dispatch_0_scale_4096_f32", "64x1x1"],
            ["demo_dispatch_1_add_2048_f32 (add one, in place)", "32x1x1"],
        ]
        assert all(float(row[4]) > 0 for row in rows)  # GPU µs from the replay on lavapipe
        assert str(screen.query_one("#capture-replay", Static).render()).startswith("replayed on llvmpipe")


async def test_o_without_a_display_prints_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    capture = DATA / "scale_vulkan_h200.rdc"
    app = with_capture(capture)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.query_one("#captures-table", DataTable).row_count == 1)
        await pilot.press("o")
        await pilot.pause(0.1)
        assert f"no display here: open it elsewhere with: qrenderdoc {capture}" in log_text(app)


async def test_a_parameter_load_shows_its_progress_in_the_header_and_run_pane(tmp_path: Path) -> None:
    """While a model streams in, the header has a bar of bytes loaded and the Run pane its rate; totals after."""

    from gputop.core.params.archive import evict_from_page_cache, write_model
    from gputop.tui.panes.header import HeaderBar

    archive, source = tmp_path / "model.irpa", tmp_path / "head.mlir"
    write_model(archive, source, 48, 512 * 2**20)
    evict_from_page_cache(archive)  # cold: seconds of loading on the CI machine
    app = live_app(target=str(source), params=(archive,), params_mode="streamed", iterations=1)
    under_way: list[SnapshotArrived] = []

    def hook(message: object) -> None:
        if isinstance(message, SnapshotArrived):
            load = message.snapshot.parameters
            if load is not None and not load.done and load.loaded_bytes > 0:
                under_way.append(message)

    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.state == "finished", timeout=120)
        await pilot.pause(0.3)
        assert under_way, "no snapshot arrived while the parameters loaded"
        loads = [m.snapshot.parameters for m in under_way]
        assert all(load is not None and load.observed and load.mode == "streamed" for load in loads)
        header = app.query_one(HeaderBar)
        assert "parameters [" not in str(header.render())  # gone once loaded
        header.show(under_way[-1].snapshot)  # the pane as it was drawn mid-load
        await pilot.pause(0.1)
        text = str(header.render())
        assert "parameters [" in text and " / " in text and "GB/s" in text and "s left" in text, text
        console = Console(width=120, record=True, file=io.StringIO())
        console.print(app.query_one("#run-phases", Static).content)
        phases = console.export_text()
        assert "params" in phases and "GB/s" in phases and "streamed" in phases, phases
        assert "parameters loaded by streamed" in log_text(app)


def visible_log_rows(pane: LogPane) -> list[str]:
    """The Log pane's text rows as they are on screen now."""
    top = round(pane.scroll_y)
    return [strip.text.rstrip() for strip in pane.lines[top : top + pane.scrollable_content_region.height]]


async def test_the_collapsed_log_shows_the_newest_whole_messages() -> None:
    """After `l` and `l` again the Log shows its newest messages, whole, at once: not the oldest lines the
    grown pane scrolled past, nor the tail of a message wrapped onto the rows above."""
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 0)
        await profile_now(app, pilot)  # the pass logs long lines (its call breakdown wraps at 120 columns)
        await pilot.pause(0.5)
        pane = app.query_one(LogPane)
        await pilot.press("l")
        await pilot.pause(0.3)
        await pilot.press("l")
        await pilot.pause(0.3)
        for _ in range(2):  # just after collapsing, and after the next event
            rows = [row for row in visible_log_rows(pane) if row]
            assert rows and len(visible_log_rows(pane)) == 3, visible_log_rows(pane)
            assert rows[0][:9].count(":") == 2 and rows[0][8] == " ", rows  # a message's start: its time
            newest = pane.messages[-1].split(": ", 1)[1]
            assert "".join(rows).replace(" ", "").endswith(newest[-30:].replace(" ", "")), (rows, newest)
            before = len(pane.messages)
            await pilot.press("p")
            await wait_for(pilot, lambda before=before: len(pane.messages) > before, timeout=120)
            await pilot.pause(0.5)


async def test_shift_p_takes_a_full_pass() -> None:
    """`P`: a full profile pass (every record in the explained calls), said in the log, its level on the summary."""
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 0)
        await pilot.press("P")
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.profile is not None, timeout=120)
        await until_drawn(pilot, app)
        assert app.snapshot is not None and app.snapshot.profile is not None
        assert app.snapshot.profile.level == "full"
        assert "profile: a full pass, every record in the explained calls" in log_text(app)
        await pilot.press("q")


async def test_a_snapshot_before_a_window_is_composed_is_drawn_once_it_is() -> None:
    """Seen on a loaded machine: a snapshot arrived between pushing the Roofline and its compose, and the app
    ended with NoMatches. A window shown before it has its widgets keeps the snapshot and draws it on mount."""
    from gputop.tui.screens import TimelineScreen

    app = GputopApp(ReplaySource.from_file(DATA / "mlp_local_task_roofline.jsonl"))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.profile is not None)
        snapshot = app.snapshot
        assert snapshot is not None
        windows = (
            (RooflineScreen(None), "#roofline-chart", "dispatch_2_matmul_256x256x512_f32"),  # the snapshot's kernel
            (TimelineScreen(None), "#timeline-view", "this profile (ireeprof)"),  # its profile, without a breakdown
        )
        for window, drawn, expected in windows:
            window.show(snapshot)  # not composed: nothing to draw into yet, and no error
            await app.push_screen(window)
            await pilot.pause(0.3)
            text = str(window.query_one(drawn, Static).render())
            assert expected in text, text[:300]
            await pilot.press("escape")
            await pilot.pause(0.2)


async def test_the_cumulative_memory_columns_move_once_a_second_of_the_run() -> None:
    """allocated and freed grow with every call; the Memory table, which Textual renders whole on any change,
    shows them at most once a second of snapshot time, and at once when live or peak bytes or the state move."""
    from gputop.tui.panes.memory import MemoryPane

    recorded = next(s for s in read_snapshots(DATA / "mlp_local_task.jsonl") if s.memory and s.memory.devices[0].pools)
    assert recorded.memory is not None
    device = recorded.memory.devices[0]
    pool = device.pools[0]
    MiB = 2**20

    def at(seconds: float, freed_mib: int, live_mib: int = 1, state: str = "running") -> object:
        pools = (replace(pool, freed_bytes=freed_mib * MiB, live_bytes=live_mib * MiB, peak_bytes=8 * MiB),)
        memory = replace(recorded.memory, devices=(replace(device, pools=pools),))
        return replace(recorded, memory=memory, timestamp=recorded.timestamp + seconds, state=state)

    app = GputopApp(ReplaySource([recorded]))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
        pane = app.pane(MemoryPane)
        table = app.query_one("#memory-table", KeyedTable)
        key = f"{device.device_id}/{pool.memory_type}"

        def freed() -> str:
            return str(table.row_cells(key)["freed"])

        def live() -> str:
            return str(table.row_cells(key)["live"])

        pane.show(at(0.0, 100))  # type: ignore[arg-type]
        first = freed()
        pane.show(at(0.5, 200))  # type: ignore[arg-type]
        assert freed() == first  # half a second on: held
        pane.show(at(1.0, 300))  # type: ignore[arg-type]
        assert freed() != first  # a second on: moved
        moved = freed()
        pane.show(at(1.2, 400, live_mib=2))  # type: ignore[arg-type]
        assert freed() != moved and live() != "1"  # live moved: everything shown as it is
        moved = freed()
        pane.show(at(1.3, 500, live_mib=2, state="finished"))  # type: ignore[arg-type]
        assert freed() != moved  # the run's end: its last figures, exact
