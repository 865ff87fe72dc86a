"""Make the screenshots of the README and docs/ by driving the real app on a live engine.

Starts `GputopApp` on the real engine (headless, through Textual's
`run_test`), waits until the Run pane has counted some calls, and saves an
SVG. Run by `make screenshots` on the CPU; the same script runs on a GPU
machine (headless Textual needs no terminal). Never edit the SVGs by hand.

Usage: python scripts/screenshots.py OUT.svg [--target demo:mlp] [--device local-task | --devices D1,D2]
           [--input ...] [--calls 20] [--size 120x40] [--profile] [--counters] [--press KEYS] [--roofline]
           [--warmup S] [--engine-process] [--program 'python app.py ...'] [--stacks] [--function F]
           [--pm SECONDS]

With --engine-process the engine runs as `gputop TARGET` runs it, in its own
process (`gputop serve`, the app its owning viewer): a screenshot whose Run
and profile figures are the engine's alone, not shared with the app's
rendering in one interpreter.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import tempfile
from pathlib import Path

from gputop.tui.app import GputopApp
from gputop.tui.bridge import EngineBridge, EngineProcess, RunConfig


async def shoot(args: argparse.Namespace) -> None:
    width, height = (int(v) for v in args.size.split("x"))
    devices = tuple(args.devices.split(",")) if args.devices else ()
    config = RunConfig(
        target=args.target,
        device=None if devices else args.device,
        devices=devices,
        iterations=None,
        inputs=tuple(args.input),
        warmup_s=args.warmup,
        function=args.function,
    )
    source: EngineBridge | EngineProcess
    if args.program:  # gputop -- CMD: the engine watches the user's program, always in its own process
        engine = ["--metrics-port", "0", "--", *shlex.split(args.program)]
        source = EngineProcess(engine, Path(tempfile.mkdtemp(prefix="gputop-screenshot-")))
    elif args.engine_process:
        if devices:
            raise SystemExit("--engine-process takes one --device")
        engine = [args.target, "--device", args.device, "--warmup", str(args.warmup), "--metrics-port", "0"]
        engine += ["--profile-every", "0", *(f"--input={value}" for value in args.input)]
        engine += ["--function", args.function] if args.function else []
        source = EngineProcess(engine, Path(tempfile.mkdtemp(prefix="gputop-screenshot-")))
    else:
        source = EngineBridge(config)
    app = GputopApp(source)
    try:
        await drive(app, args, width, height)
    finally:
        if isinstance(source, EngineProcess):
            source.stop(timeout=15)


async def drive(app: GputopApp, args: argparse.Namespace, width: int, height: int) -> None:
    """Wait for the calls, take the asked passes, save the screenshot, quit."""
    async with app.run_test(size=(width, height)) as pilot:
        waited = 0.0
        while waited < args.timeout:
            snap = app.snapshot
            if snap is not None and (snap.state == "error" or snap.calls.count >= args.calls):
                break
            await pilot.pause(0.2)
            waited += 0.2
        if args.profile and app.snapshot is not None and app.snapshot.state == "running":
            await pilot.press("p")
            while app.snapshot.profile is None and waited < args.timeout * 2:
                await pilot.pause(0.2)
                waited += 0.2
        if args.counters and app.snapshot is not None and app.snapshot.state == "running":
            await pilot.press("n")  # a counters pass beside the calls (CUDA): wait for its result
            asked = waited
            while waited < args.timeout * 3:
                snap = app.snapshot
                if snap is not None and not snap.counting and (snap.counters_pass is not None or waited - asked > 5):
                    break  # measured, failed, or refused (never began: the Log says why)
                await pilot.pause(0.2)
                waited += 0.2
            counters = app.snapshot.counters_pass if app.snapshot is not None else None
            print(f"counters: {counters.error or counters.source if counters else 'none (refused: see the Log)'}")
        if args.pm:  # the PM sampling strip (CUDA): wait until it holds a few seconds of samples
            while waited < args.timeout * 4:
                pm = app.snapshot.pm_sampling if app.snapshot is not None else None
                if pm is None or pm.state == "refused" or pm.samples >= args.pm * 1000 / (pm.interval_ms or 1):
                    break
                await pilot.pause(0.2)
                waited += 0.2
            pm = app.snapshot.pm_sampling if app.snapshot is not None else None
            print(f"pm sampling: {pm.state if pm else 'none'}, {pm.samples if pm else 0} samples ({pm and pm.reason})")
        if args.stacks:  # a watched program's Python (py-spy's rounds): wait for samples, then open w
            while waited < args.timeout * 2:
                program = app.snapshot.program if app.snapshot is not None else None
                stacks = program.stacks if program is not None else None
                if stacks is not None and (stacks.reason or stacks.samples >= 50):
                    break
                await pilot.pause(0.2)
                waited += 0.2
            await pilot.press("w")
        if args.press:
            await pilot.press(*args.press.split(","))
        if args.roofline:
            await pilot.press("f")
        await pilot.pause(0.5)
        snap = app.snapshot
        if snap is None or snap.state == "error":
            raise SystemExit(f"the run failed: {snap.error if snap else 'no snapshot'}")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        app.save_screenshot(filename=args.out.name, path=str(args.out.parent))
        print(f"{args.out}: {snap.calls.count} calls on {snap.device.id if snap.device else '?'}")
        if args.roofline or args.stacks:
            await pilot.press("escape")
        await pilot.press("q")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--target", default="demo:mlp")
    parser.add_argument("--program", help="a user's program to watch instead of a target: 'python app.py ...'")
    parser.add_argument("--device", default="local-task")
    parser.add_argument("--devices", help="D1,D2: a multi-device run (demo:pipeline, demo:hidden-transfer)")
    parser.add_argument("--input", action="append", default=[])
    parser.add_argument("--function", help="the module's function to call (a module with several)")
    parser.add_argument("--pm", type=float, default=0, help="wait for this many seconds of PM samples (CUDA)")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--size", default="120x40")
    parser.add_argument("--profile", action="store_true", help="press p and wait for the kernel table")
    parser.add_argument("--counters", action="store_true", help="then press n and wait for the counters pass")
    parser.add_argument("--press", help="keys to press before the screenshot, comma-separated (t: the Timeline)")
    parser.add_argument("--roofline", action="store_true", help="then press f: the roofline view")
    parser.add_argument("--stacks", action="store_true", help="a watched program: wait for py-spy's samples, press w")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of warm-up before a profile pass")
    parser.add_argument(
        "--engine-process", action="store_true", help="the engine in its own process, as `gputop TARGET` runs it"
    )
    asyncio.run(shoot(parser.parse_args()))


if __name__ == "__main__":
    main()
