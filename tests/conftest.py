"""Shared fixtures: isolated cache and state directories, and the real devices.

Every test runs the real engine. Tests that need lavapipe Vulkan or PoCL
skip with the reason when those Debian packages are missing (`make test`
installs them when it runs as root, as CI does).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil
import pytest

# A user's own program's environment (without gputop) and its model: fixtures of the watched-program tests.
from program_env import program_assets, program_python  # noqa: F401

from gputop.core.module.device_discovery import iree_devices, opencl_devices

if TYPE_CHECKING:
    from gputop.core.runners.iree_runner import IreeModuleRun

# One compile cache for the whole run (fast), never the user's own.
_RUN_DIR = Path(os.environ.get("GPUTOP_TEST_DIR", "")) if os.environ.get("GPUTOP_TEST_DIR") else None


@pytest.fixture(scope="session", autouse=True)
def _isolated_dirs(tmp_path_factory: pytest.TempPathFactory) -> None:
    base = _RUN_DIR or tmp_path_factory.mktemp("gputop")
    os.environ["GPUTOP_CACHE_DIR"] = str(base / "cache")
    os.environ["GPUTOP_STATE_DIR"] = str(base / "state")


@pytest.fixture(scope="session")
def vulkan_device() -> str:
    rows = iree_devices("vulkan")
    if not rows[0].available:
        pytest.skip(f"no Vulkan device: {rows[0].reason} (apt-get install mesa-vulkan-drivers libvulkan1)")
    return rows[0].id


@pytest.fixture(scope="session")
def opencl_device() -> str:
    rows = opencl_devices()
    if not rows[0].available:
        pytest.skip(f"no OpenCL device: {rows[0].reason}")
    return rows[0].id


def run_gputop(*args: str, timeout: float = 600, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real `gputop` command line in a child process."""
    return subprocess.run(
        [sys.executable, "-m", "gputop.tui", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )


def run_json(*args: str, timeout: float = 600) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`gputop run ... --json -`, returning the process and the parsed report."""
    proc = run_gputop("run", *args, "--json", "-", "--quiet", timeout=timeout)
    assert proc.stdout.strip(), f"no JSON on stdout; stderr: {proc.stderr}"
    return proc, json.loads(proc.stdout)


def assert_one_line_error(proc: subprocess.CompletedProcess[str], code: int, *fragments: str) -> str:
    """The process failed with `code` and said so in one line, without a traceback."""
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    errors = [line for line in proc.stderr.splitlines() if line.startswith("gputop: error:")]
    assert len(errors) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in errors[0], (fragment, errors[0])
    return errors[0]


def poll(test: Callable[[], Any], timeout: float = 120, every: float = 0.05) -> Any:
    """The first truthy result of `test()`; OSErrors (a refused connection, a file not yet there) mean not yet."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            result = test()
            if result:
                return result
        except OSError as exc:
            last_error = exc
        time.sleep(every)
    raise AssertionError(f"never happened (last error: {last_error})")


def free_port() -> int:
    """A TCP port nobody listens on now, on loopback."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def spawn_gputop(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """The real `gputop` command line as a child process that keeps running (stderr kept, stdout dropped)."""
    return subprocess.Popen(
        [sys.executable, "-m", "gputop.tui", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )


def processes_naming(folder: Path) -> list[str]:
    """Every live process on the machine whose command line names `folder` (an engine, its viewers, its tools)."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(process.info["cmdline"] or [])
        if str(folder) in cmdline and process.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(cmdline)
    return found


def end_child(child: subprocess.Popen[str], signum: int = 15, timeout: float = 60) -> str:
    """Send `signum` (SIGTERM) to a child if it still runs, wait for it, return its stderr (kill it if it hangs)."""
    if child.poll() is None:
        child.send_signal(signum)
    try:
        _, stderr = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        _, stderr = child.communicate()
        raise AssertionError(f"gputop did not end within {timeout} s of signal {signum}: {stderr}") from None
    return stderr or ""


@contextmanager
def tmpfs(folder: Path, options: str) -> Iterator[Path]:
    """A tmpfs mounted on `folder` with `options` (`ro,size=1m`, `size=2m`); the test is skipped where it cannot be.

    chmod 0555 does not stop root, so a read-only or a full folder has to be a real filesystem.
    """
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    folder.mkdir(parents=True, exist_ok=True)
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True, text=True, check=False
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield folder
    finally:
        for _ in range(50):  # a child that has only just exited may still hold it for a moment
            if subprocess.run(["umount", str(folder)], capture_output=True, check=False).returncode == 0:
                break
            time.sleep(0.1)
        else:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)
        assert not os.path.ismount(folder)


def fill_disk(path: Path) -> None:
    """Write zeros to `path` until its disk is full."""
    with open(path, "wb", buffering=0) as filler, contextlib.suppress(OSError):
        while True:
            filler.write(b"\0" * 4096)


def device_bytes(runner: IreeModuleRun, buffer: Any) -> bytes:
    """A device buffer's bytes, copied through a host staging buffer (lavapipe cannot import host pointers)."""
    import iree.runtime as rt
    import numpy as np

    device = runner.devices[0]
    staging = device.allocator.allocate_buffer(
        memory_type=int(rt.MemoryType.HOST_LOCAL | rt.MemoryType.DEVICE_VISIBLE),
        allowed_usage=int(rt.BufferUsage.TRANSFER_TARGET | rt.BufferUsage.MAPPING_SCOPED),
        allocation_size=buffer.byte_length(),
    )
    semaphore = device.create_semaphore(0)
    device.queue_copy(buffer, staging, [(semaphore, 0)], [(semaphore, 1)])
    semaphore.wait(1)
    return bytes(staging.map().asarray([buffer.byte_length()], np.dtype(np.uint8)).tobytes())
