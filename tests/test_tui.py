"""The live TUI with the real engine on local-task: every key, errors, snapshots."""

from __future__ import annotations

import json
from pathlib import Path

from textual.pilot import Pilot

from gputop.tui.app import GputopApp
from gputop.tui.bridge import EngineBridge, ReplaySource, RunConfig, SnapshotArrived
from gputop.tui.panes.log import LogPane
from gputop.tui.screens import DeviceScreen, HelpScreen


def live_app(**config: object) -> GputopApp:
    base: dict[str, object] = {"target": "demo:mlp", "device": "local-task", "iterations": None}
    base.update(config)
    return GputopApp(EngineBridge(RunConfig(**base)))  # type: ignore[arg-type]


async def wait_for(pilot: Pilot[int], condition: object, timeout: float = 60.0) -> None:
    waited = 0.0
    while not condition():  # type: ignore[operator]
        await pilot.pause(0.1)
        waited += 0.1
        assert waited < timeout, "timed out waiting for the app"


def log_text(app: GputopApp) -> str:
    return "\n".join(app.query_one(LogPane).messages)


def calls(app: GputopApp) -> int:
    return app.snapshot.calls.count if app.snapshot else 0


async def test_live_run_fills_the_panes() -> None:
    app = live_app()
    seen: list[SnapshotArrived] = []
    async with app.run_test(
        size=(120, 40), message_hook=lambda m: seen.append(m) if isinstance(m, SnapshotArrived) else None
    ) as pilot:
        await wait_for(pilot, lambda: calls(app) > 3)
        await pilot.pause(0.2)
        assert app.snapshot is not None and app.snapshot.state == "running"
        assert seen and app.frames >= 1
        # Coalescing and the frame cap: no more frames than 10 a second of run time.
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
        assert "open: no capture yet" in log_text(app)


async def test_help_screen_and_quit_from_it() -> None:
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause(0.2)
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert not isinstance(app.screen, HelpScreen)
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
        await pilot.pause(0.3)
        session_dir = app.source.session_dir
        assert session_dir is not None
        report = json.loads((session_dir / "report.json").read_text())
        assert {"device", "phases", "calls", "memory", "kernels", "exports", "captures", "diagnostics"} <= report.keys()
        assert report["calls"]["count"] >= 1
        assert list(session_dir.glob("*.svg"))
        assert "report written to" in log_text(app) and "screenshot saved to" in log_text(app)


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
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, DeviceScreen))
        option_list = app.screen.query_one("OptionList")
        ids = [option_list.get_option_at_index(i).id for i in range(option_list.option_count)]  # type: ignore[attr-defined]
        assert "local-sync" in ids
        option_list.highlighted = ids.index("local-sync")  # type: ignore[attr-defined]
        await pilot.press("enter")
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
        await pilot.pause(0.2)
        errors = [line for line in log_text(app).splitlines() if "bad.mlir:2:" in line]
        assert len(errors) == 1 and "full log:" in errors[0]
        assert app.snapshot.error_exit_code == 3


async def test_unavailable_device_is_shown() -> None:
    app = live_app(device="vulkan:42")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.state == "error")
        await pilot.pause(0.2)
        assert "vulkan:42 does not exist" in log_text(app) or "unavailable" in log_text(app)
        assert app.snapshot.error_exit_code == 4


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
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 0)
        await pilot.press("p")
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.profile is not None, timeout=120)
        await pilot.pause(0.3)
        assert app.query_one("#kernels-table").row_count == 3  # type: ignore[attr-defined]
        assert any("profile: 3 kernels" in line for line in app.query_one(LogPane).messages)
        # The run goes on after the pass.
        before = calls(app)
        await wait_for(pilot, lambda: calls(app) > before)


async def test_a_terminal_too_small_says_so() -> None:
    app = GputopApp(ReplaySource.from_file(Path(__file__).parent / "data" / "mlp_local_task.jsonl"))
    async with app.run_test(size=(50, 12)) as pilot:
        await pilot.pause(0.3)
        notice = app.query_one("#too-small")
        assert notice.display and "50x12 is too small" in str(notice.render())
        assert not app.query_one("#panes").display
        await pilot.resize_terminal(120, 40)
        await pilot.pause(0.3)
        assert not app.query_one("#too-small").display and app.query_one("#panes").display
