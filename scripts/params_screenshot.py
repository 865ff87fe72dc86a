"""A screenshot of the real app while a model's parameters stream in: the header's bar, the Run pane's rate.

Starts `GputopApp` headless (`run_test`) on a module and its parameter archive,
waits until a share `--at` of the bytes is in place (the load still under way)
and saves an SVG; then waits for the load to end and saves a second one
beside it (`-done.svg`) with the totals. Without `--target`, builds a
model-like archive and its head module here (core/params/archive.py). `--cold`
evicts the archive from the page cache first, so the load is read from disk
and lasts long enough to be seen. Never edit the SVGs by hand.

Usage: python scripts/params_screenshot.py OUT.svg [--device local-task] [--tensors 64] [--gib 1]
           [--target M.vmfb --params A.irpa] [--cold] [--at 0.3] [--size 120x40]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from pathlib import Path

from gputop.core.params.archive import evict_from_page_cache, write_model
from gputop.tui.app import GputopApp
from gputop.tui.bridge import EngineBridge, RunConfig


async def shoot(args: argparse.Namespace) -> None:
    width, height = (int(v) for v in args.size.split("x"))
    config = RunConfig(
        target=str(args.target), device=args.device, iterations=None, params=(args.params,), params_mode=args.mode
    )
    app = GputopApp(EngineBridge(config))
    async with app.run_test(size=(width, height)) as pilot:
        waited, shot = 0.0, False
        while waited < args.timeout:
            snap = app.snapshot
            load = snap.parameters if snap is not None else None
            if snap is not None and snap.state == "error":
                raise SystemExit(f"the run failed: {snap.error}")
            if load is not None and load.done:
                break
            if load is not None and load.total_bytes and load.loaded_bytes >= args.at * load.total_bytes:
                await pilot.pause(0.05)  # let the frame with this snapshot draw
                app.save_screenshot(filename=args.out.name, path=str(args.out.parent))
                print(f"{args.out}: {load.loaded_bytes / 2**30:.2f} of {load.total_bytes / 2**30:.2f} GiB")
                shot = True
                break
            await pilot.pause(0.05)
            waited += 0.05
        while app.snapshot is None or app.snapshot.parameters is None or not app.snapshot.parameters.done:
            await pilot.pause(0.1)
            waited += 0.1
            if waited > args.timeout:
                raise SystemExit("the load did not finish in time")
        await pilot.pause(0.5)
        done = args.out.with_name(args.out.stem + "-done.svg")
        app.save_screenshot(filename=done.name, path=str(done.parent))
        load = app.snapshot.parameters
        print(f"{done}: {load.loaded_bytes / 2**30:.2f} GiB in {load.seconds:.2f} s by {load.mode}")
        if not shot:
            print("the load ended before the share --at was seen: only the -done screenshot shows it")
        await pilot.press("q")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--device", default="local-task")
    parser.add_argument("--target", type=Path, help="a module reading the archive (default: build both here)")
    parser.add_argument("--params", type=Path)
    parser.add_argument("--mode", default="auto", help="--params-mode (default auto)")
    parser.add_argument("--tensors", type=int, default=64)
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--cold", action="store_true", help="evict the archive from the page cache first")
    parser.add_argument("--at", type=float, default=0.3, help="share of the bytes in place when the shot is taken")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--size", default="120x40")
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gputop-shot-") as folder:
        if args.target is None or args.params is None:
            args.out = args.out.resolve()
            os.chdir(folder)  # the header then names model.mlir, not a temporary folder
            args.params, args.target = Path("model.irpa"), Path("model.mlir")
            write_model(args.params, args.target, args.tensors, int(args.gib * 2**30))
        if args.cold:
            evict_from_page_cache(args.params)
        asyncio.run(shoot(args))


if __name__ == "__main__":
    main()
