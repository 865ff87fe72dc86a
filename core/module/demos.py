"""Built-in demo modules (`demo:mlp`, `demo:conv`, `demo:pipeline`) and their references.

A tool like gputop needs something to show the moment it is installed, and
its tests need modules whose right answers are known. Each demo is real MLIR
shipped with the package plus a NumPy function that computes the expected
output, so every demo run checks itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

__all__ = [
    "DEMOS",
    "DEMO_PREFIX",
    "OPENCL_DEMOS",
    "Demo",
    "demo_for",
    "demo_targets",
    "is_demo",
    "is_opencl_demo",
    "opencl_demo_spec",
]

DEMO_PREFIX = "demo:"


@dataclass(frozen=True)
class Demo:
    name: str
    function: str
    description: str
    reference: Callable[[list[np.ndarray]], list[np.ndarray]]
    devices: int = 1
    rtol: float = 1e-4  # relative to the largest reference magnitude
    atol: float = 1e-5

    @property
    def target(self) -> str:
        return DEMO_PREFIX + self.name.replace("_", "-")

    def source(self) -> bytes:
        return resources.files("gputop.core").joinpath(f"demos/{self.name}.mlir").read_bytes()


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


def _mlp(args: list[np.ndarray]) -> list[np.ndarray]:
    x, w1, w2, w3 = (a.astype(np.float64) for a in args)
    return [(_relu(_relu(x @ w1) @ w2) @ w3).astype(np.float32)]


def _conv(args: list[np.ndarray]) -> list[np.ndarray]:
    x, w = args
    kh, kw = w.shape[2], w.shape[3]
    windows = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))
    # windows: N, C, OH, OW, KH, KW; contract C, KH, KW against the filter.
    out = np.tensordot(windows, w, axes=([1, 4, 5], [1, 2, 3]))  # N, OH, OW, F
    return [np.ascontiguousarray(out.transpose(0, 3, 1, 2)).astype(np.float32)]


def _pipeline(args: list[np.ndarray]) -> list[np.ndarray]:
    x, w1, w2 = (a.astype(np.float64) for a in args)
    return [((x @ w1) @ w2).astype(np.float32)]


def _hidden_transfer(args: list[np.ndarray]) -> list[np.ndarray]:
    x, w = (a.astype(np.float64) for a in args)
    return [(x @ w).astype(np.float32)]


DEMOS: dict[str, Demo] = {
    "mlp": Demo("mlp", "mlp", "three-dispatch MLP, 256x1024 f32 through layers of 1024, 512 and 256", _mlp),
    "conv": Demo("conv", "conv", "the seed conv, 1x64x128x128 * 256x64x3x3 f32", _conv),
    "pipeline": Demo("pipeline", "pipeline", "two matmuls on two devices (pipeline parallel)", _pipeline, devices=2),
    "hidden-transfer": Demo(
        "hidden_transfer",
        "hidden_transfer",
        "a result declared on device_a but produced on device_b",
        _hidden_transfer,
        devices=2,
    ),
}


# OpenCL demos are run specs shipped beside the MLIR demos.
OPENCL_DEMOS = {"opencl-chain": "opencl_chain.toml"}


def is_demo(target: str) -> bool:
    return target.startswith(DEMO_PREFIX)


def is_opencl_demo(target: str) -> bool:
    return is_demo(target) and target[len(DEMO_PREFIX) :] in OPENCL_DEMOS


def opencl_demo_spec(target: str) -> Path:
    """Path of a built-in OpenCL demo's run spec (the package is installed as files)."""
    name = target[len(DEMO_PREFIX) :]
    return Path(str(resources.files("gputop.core").joinpath(f"demos/{OPENCL_DEMOS[name]}")))


def demo_targets() -> list[str]:
    """Every built-in demo's target name, MLIR demos first."""
    return [d.target for d in DEMOS.values()] + [DEMO_PREFIX + n for n in OPENCL_DEMOS]


def demo_for(target: str) -> Demo:
    from gputop.core.errors import UsageError

    name = target[len(DEMO_PREFIX) :]
    if name not in DEMOS:
        raise UsageError(f"unknown demo {target!r}: choose from {', '.join(demo_targets())}")
    return DEMOS[name]
