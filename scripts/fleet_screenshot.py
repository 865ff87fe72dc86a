"""Make the fleet view's screenshot by driving the real `gputop fleet` app over a real Prometheus.

Starts three real runs on this machine with `gputop serve` (demo:mlp on local-task and on local-sync,
and a watched program that keeps every result it gets: tests/programs/hold_results.py, whose memory
grows), Debian's Prometheus scraping them every second (loopback, a temporary folder), waits until
Prometheus has every run's calls and the program's hint, then runs `FleetApp` headless (Textual's
`run_test`) and saves an SVG. Run by `make screenshots`; never edit the SVG by hand.

Usage: python scripts/fleet_screenshot.py OUT.svg [--size 120x30]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from gputop.core.fleet import PrometheusClient, poll_fleet
from gputop.tui.fleet import FleetApp

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait(test: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if test():  # type: ignore[operator]
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"fleet_screenshot: {what} did not happen in {timeout:.0f} s")


def serve(folder: Path, port: int, *args: str) -> subprocess.Popen[bytes]:
    own = ["--metrics-port", str(port), "--session-dir", str(folder), "--quiet"]
    command = [sys.executable, "-m", "gputop.tui", "serve"]
    command += [*own, *args] if args[0] == "--" else [*args, *own, "--profile-every", "0"]
    return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def shoot(url: str, out: Path, width: int, height: int) -> None:
    app = FleetApp(url, interval_s=1.0)
    async with app.run_test(size=(width, height)) as pilot:
        while app.fleet.polls < 3:
            await pilot.pause(0.1)
        await pilot.pause(0.3)
        app.save_screenshot(filename=out.name, path=str(out.parent))
        await pilot.press("q")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--size", default="120x30")
    args = parser.parse_args()
    if shutil.which("prometheus") is None:
        print("fleet_screenshot: needs Debian's prometheus (apt-get install prometheus)", file=sys.stderr)
        return 2
    width, height = (int(v) for v in args.size.split("x"))
    work = Path(tempfile.mkdtemp(prefix="gputop-fleet-shot-"))
    subprocess.run(
        [sys.executable, str(ROOT / "tests/programs/make_assets.py"), str(work)], check=True, capture_output=True
    )
    program = [sys.executable, str(ROOT / "tests/programs/hold_results.py"), str(work / "model.vmfb")]
    program += [str(work / "model.irpa"), "100000000"]
    ports = [free_port() for _ in range(3)]
    runs = [
        serve(work / "mlp-task", ports[0], "demo:mlp", "--device", "local-task"),
        serve(work / "mlp-sync", ports[1], "demo:mlp", "--device", "local-sync"),
        serve(work / "hold-results", ports[2], "--", *program),
    ]
    web = free_port()
    config = work / "prometheus.yml"
    targets = [f"127.0.0.1:{port}" for port in ports]
    config.write_text(
        "global: {scrape_interval: 1s}\n"
        f"scrape_configs:\n  - job_name: gputop\n    static_configs: [{{targets: {targets!r}}}]\n"
    )
    server = subprocess.Popen(
        ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={work / 'data'}",
         f"--web.listen-address=127.0.0.1:{web}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{web}"
    try:
        wait(lambda: urllib.request.urlopen(f"{url}/-/ready", timeout=2).status == 200, 60, "Prometheus ready")
        client = PrometheusClient(url)

        def ready() -> bool:
            rows = poll_fleet(client).rows
            return len(rows) == 3 and all(r.calls_per_s for r in rows) and any(r.hints for r in rows)

        wait(ready, 240, "three runs with calls and the program's hint in Prometheus")
        asyncio.run(shoot(url, args.out.resolve(), width, height))
    finally:
        for child in [*runs, server]:
            child.terminate()
        for child in [*runs, server]:
            child.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)
    print(f"saved {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
