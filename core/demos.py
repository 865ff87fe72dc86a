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

import numpy as np

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
        return DEMO_PREFIX + self.name

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


DEMOS: dict[str, Demo] = {
    "mlp": Demo("mlp", "mlp", "three-dispatch MLP, 256x1024 f32 through layers of 1024, 512 and 256", _mlp),
    "conv": Demo("conv", "conv", "the seed conv, 1x64x128x128 * 256x64x3x3 f32", _conv),
    "pipeline": Demo("pipeline", "pipeline", "two matmuls on two devices (pipeline parallel)", _pipeline, devices=2),
}


def is_demo(target: str) -> bool:
    return target.startswith(DEMO_PREFIX)


def demo_for(target: str) -> Demo:
    from gputop.core.errors import UsageError

    name = target[len(DEMO_PREFIX) :]
    if name not in DEMOS:
        raise UsageError(f"unknown demo {target!r}: choose from {', '.join(d.target for d in DEMOS.values())}")
    return DEMOS[name]
