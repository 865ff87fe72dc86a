"""A real Prometheus for the tests: Debian's `/usr/bin/prometheus` (or GPUTOP_TEST_PROMETHEUS's, carried to the GPU
machines) on loopback, a temporary data folder.

`prometheus_server` starts one on a given configuration (the dashboard's tests run `deploy/prometheus.yml`) and
yields its URL once `/-/ready` answers; it stops the server however the test ends. `prometheus_on` writes a
configuration with one job per name given (each its targets, scraped every second), optionally relabelling a
job's `Hostname` as if its runs were on another host (Prometheus's own `metric_relabel_configs`, the way a
fleet's relabelling rules rewrite labels), and starts one on it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import free_port, poll

__all__ = ["PROMETHEUS", "PROMTOOL", "needs_prometheus", "prometheus_on", "prometheus_server"]

PROMETHEUS = os.environ.get("GPUTOP_TEST_PROMETHEUS") or shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
needs_prometheus = pytest.mark.skipif(
    PROMETHEUS is None or PROMTOOL is None, reason="Prometheus is not installed (apt-get install prometheus)"
)


def _config(jobs: Mapping[str, Sequence[str]], hosts: Mapping[str, str]) -> str:
    lines = ["global: {scrape_interval: 1s, evaluation_interval: 1s}", "scrape_configs:"]
    for job, targets in jobs.items():
        lines += [f"  - job_name: {job}", f"    static_configs: [{{targets: {list(targets)!r}}}]"]
        if job in hosts:  # every series of this job says it is on another host
            lines += [
                "    metric_relabel_configs:",
                "      - {source_labels: [Hostname], regex: '.+', target_label: Hostname, "
                f"replacement: '{hosts[job]}'}}",
            ]
    return "\n".join(lines) + "\n"


@contextmanager
def prometheus_on(
    folder: Path,
    jobs: Mapping[str, Sequence[str]] | None = None,
    *,
    hosts: Mapping[str, str] | None = None,
    data: Path | None = None,
) -> Iterator[str]:
    """Prometheus scraping `jobs` (job name -> `host:port` targets), `hosts` renaming a job's runs' host; its URL."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "prometheus.yml"
    config.write_text(_config(jobs or {}, hosts or {}))
    with prometheus_server(config, folder, data=data) as url:
        yield url


@contextmanager
def prometheus_server(config: Path, folder: Path, *, data: Path | None = None) -> Iterator[str]:
    """Prometheus on `config`, its log in `folder` and its data in `data` (else a fresh `folder/data`, removed at
    the end); its URL once ready."""
    assert PROMETHEUS is not None
    port = free_port()
    log = (folder / "prometheus.log").open("w")
    server = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={data or folder / 'data'}",
            "--storage.tsdb.retention.time=100y",  # a backfilled history lies in the past
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        poll(lambda: urllib.request.urlopen(f"{url}/-/ready", timeout=2).status == 200, timeout=60, every=0.1)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
        if data is None:
            shutil.rmtree(folder / "data", ignore_errors=True)
