"""Press `c` in the real app (headless, `run_test`) and wait for a verified capture.

For machines with a GPU whose Vulkan driver RenderDoc can capture (the CI
machine's lavapipe cannot: see docs/renderdoc.md). Prints the capture record and exits
non-zero when no verified capture appears.

Usage: python scripts/tui_capture_check.py TARGET --device vulkan [--input ...] [--svg OUT.svg]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from gputop.tui.app import GputopApp
from gputop.tui.bridge import EngineBridge, RunConfig


async def check(args: argparse.Namespace) -> int:
    config = RunConfig(
        target=args.target, device=args.device, iterations=None, inputs=tuple(args.input), renderdoc="on"
    )
    app = GputopApp(EngineBridge(config))
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(600):
            snap = app.snapshot
            if snap is not None and (snap.state == "error" or snap.calls.count >= 3):
                break
            await pilot.pause(0.1)
        if app.snapshot is None or app.snapshot.state == "error":
            print(f"run failed: {app.snapshot.error if app.snapshot else '?'}")
            return 1
        await pilot.press("c")
        for _ in range(1200):
            if app.snapshot.captures:
                break
            await pilot.pause(0.1)
        await pilot.pause(0.3)
        if args.svg:
            app.save_screenshot(filename=args.svg.name, path=str(args.svg.parent))
        captures = app.snapshot.captures
        for line in app.query_one("LogPane").messages[-4:]:  # type: ignore[attr-defined]
            print(line)
        await pilot.press("q")
    if not captures:
        print("no verified capture appeared")
        return 1
    capture = captures[-1]
    print(f"TUI capture: {capture.path} {capture.bytes} bytes, {capture.dispatches} dispatches, {capture.api}")
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target")
    parser.add_argument("--device", default="vulkan")
    parser.add_argument("--input", action="append", default=[])
    parser.add_argument("--svg", type=Path)
    sys.exit(asyncio.run(check(parser.parse_args())))


if __name__ == "__main__":
    main()
