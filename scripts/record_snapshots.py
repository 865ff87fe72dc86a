"""Record a real run's snapshots as JSON lines, for deterministic TUI tests and demos.

Runs the real engine (demo:mlp on local-task by default) and writes every
snapshot it publishes to a `.jsonl` file; `ReplaySource` plays them back into
the app. Paths are made relative to the run so the file does not depend on
where it was recorded.

Usage: python scripts/record_snapshots.py OUT.jsonl [--target demo:mlp] [--device local-task] [-n 40]
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from pathlib import Path

from gputop.core.session import RunConfig, Session
from gputop.core.snapshot import RunSnapshot
from gputop.core.store.replay import write_snapshots


def _scrub(snapshot: RunSnapshot, root: str) -> RunSnapshot:
    events = tuple(
        dataclasses.replace(
            e, message=e.message.replace(root, "~"), log_path=e.log_path and e.log_path.replace(root, "~")
        )
        for e in snapshot.events
    )
    return dataclasses.replace(snapshot, events=events, session_dir="~/session")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--target", default="demo:mlp")
    parser.add_argument("--device", default="local-task")
    parser.add_argument("-n", "--iterations", type=int, default=40)
    parser.add_argument("--profile", action="store_true", help="end with a profile pass (fills the Kernels pane)")
    args = parser.parse_args()
    import os

    with tempfile.TemporaryDirectory() as root:
        os.environ["GPUTOP_CACHE_DIR"] = f"{root}/cache"
        os.environ["GPUTOP_STATE_DIR"] = f"{root}/state"
        snapshots: list[RunSnapshot] = []
        config = RunConfig(target=args.target, device=args.device, iterations=args.iterations, profile=args.profile)
        session = Session(config)
        session.subscribe(snapshots.append)
        session.start()
        session.wait()
        write_snapshots(args.out, [_scrub(s, root) for s in snapshots])
    print(f"{len(snapshots)} snapshots written to {args.out}")


if __name__ == "__main__":
    main()
