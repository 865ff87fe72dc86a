"""OpenCL run specs: a TOML file naming the source, buffers, kernels and a check.

OpenCL has no module format with a signature to read, so gputop takes a small
declarative spec instead of code: which `.cl` source to build, the buffers
(dtype, shape, initial values), the kernels in call order with their
arguments and work sizes, and optionally an expected output as a NumPy
expression over the buffers. Every mistake in a spec is a one-line
`UsageError` naming the spec and the field.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gputop.core.errors import UsageError
from gputop.core.files import require_file

__all__ = [
    "INITS",
    "BufferSpec",
    "CheckSpec",
    "KernelSpec",
    "RunSpec",
    "ScalarArg",
    "expected_output",
    "load_spec",
    "spec_from_dict",
]

INITS = ("zeros", "ones", "random", "arange")


@dataclass(frozen=True)
class BufferSpec:
    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    init: str  # zeros, ones, random, arange, or a .npy path
    seed: int = 0

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * self.dtype.itemsize

    def initial(self, base: Path) -> np.ndarray:
        if self.init == "zeros":
            return np.zeros(self.shape, self.dtype)
        if self.init == "ones":
            return np.ones(self.shape, self.dtype)
        if self.init == "arange":
            return np.arange(int(np.prod(self.shape)), dtype=self.dtype).reshape(self.shape)
        if self.init == "random":
            return np.random.default_rng(self.seed).uniform(-1, 1, self.shape).astype(self.dtype)
        path = (base / self.init).resolve()
        if not path.exists():
            raise UsageError(f"buffer {self.name}: {self.init}: no such file")
        array = np.load(path, allow_pickle=False)
        if array.shape != self.shape:
            raise UsageError(f"buffer {self.name}: {self.init} has shape {array.shape}, the spec says {self.shape}")
        return array.astype(self.dtype)


@dataclass(frozen=True)
class ScalarArg:
    value: float | int
    dtype: np.dtype

    def as_numpy(self) -> np.generic:
        return self.dtype.type(self.value)


@dataclass(frozen=True)
class KernelSpec:
    name: str
    args: tuple[str | ScalarArg, ...]
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None


@dataclass(frozen=True)
class CheckSpec:
    output: str
    expect: str
    rtol: float
    atol: float


@dataclass(frozen=True)
class RunSpec:
    path: Path
    name: str
    source_name: str
    source: str
    buffers: tuple[BufferSpec, ...]
    kernels: tuple[KernelSpec, ...]
    check: CheckSpec | None
    build_options: tuple[str, ...] = ()

    @property
    def base(self) -> Path:
        return self.path.parent


def _dtype(text: Any, where: str) -> np.dtype:
    try:
        dtype = np.dtype(str(text))
    except TypeError:
        raise UsageError(f"{where}: unknown dtype {text!r}") from None
    if dtype.kind not in "fiub":
        raise UsageError(f"{where}: dtype {text!r} is not a number type")
    return dtype


def _sizes(value: Any, where: str) -> tuple[int, ...]:
    if isinstance(value, int):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, int) and v > 0 for v in value):
        raise UsageError(f"{where}: expected a positive integer or a list of them")
    return tuple(value)


def load_spec(path: Path) -> RunSpec:
    """Read and check a run spec; every problem is one line naming the field."""
    require_file(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a text file") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML ({exc})") from None
    return spec_from_dict(data, path)


def spec_from_dict(data: dict[str, Any], path: Path) -> RunSpec:
    """The run spec in `data`; whatever is wrong with it is one UsageError naming the spec."""
    try:
        return _spec_from_dict(data, path)
    except UsageError:
        raise
    except (TypeError, ValueError, OverflowError, AttributeError, OSError) as exc:
        # A value of the wrong kind where a field checks only its presence (a list for a seed, ...).
        raise UsageError(f"{path.name}: malformed run spec ({exc})") from None


def _named_entries(data: dict[str, Any], key: str, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each table of the list `key` ([[buffers]], [[kernels]]), with where it is; every one needs a name."""
    for index, raw in enumerate(data.get(key, [])):
        at = f"{where}: {key}[{index}]"
        if not isinstance(raw, dict) or "name" not in raw:
            raise UsageError(f"{at}: needs a name")
        yield at, raw


def _spec_from_dict(data: dict[str, Any], path: Path) -> RunSpec:
    where = path.name
    if "source" in data and "source_code" in data:
        raise UsageError(f"{where}: give source or source_code, not both")
    if "source_code" in data:
        source, source_name = str(data["source_code"]), f"{path.stem}.cl"
    elif "source" in data:
        source_path = (path.parent / str(data["source"])).resolve()
        require_file(source_path, f"{where}: source")
        source, source_name = source_path.read_text(encoding="utf-8"), source_path.name
    else:
        raise UsageError(f"{where}: no source (give source = 'file.cl' or source_code = '...')")
    buffers = []
    for at, raw in _named_entries(data, "buffers", where):
        init = str(raw.get("init", "zeros"))
        if init not in INITS and not init.endswith(".npy"):
            raise UsageError(f"{at}: init must be one of {', '.join(INITS)} or a .npy file")
        buffers.append(
            BufferSpec(
                name=str(raw["name"]),
                dtype=_dtype(raw.get("dtype", "float32"), at),
                shape=_sizes(raw.get("shape"), f"{at}.shape"),
                init=init,
                seed=int(raw.get("seed", 0)),
            )
        )
    names = {b.name for b in buffers}
    if len(names) != len(buffers):
        raise UsageError(f"{where}: buffer names must be unique")
    kernels = []
    for at, raw in _named_entries(data, "kernels", where):
        args: list[str | ScalarArg] = []
        for position, arg in enumerate(raw.get("args", [])):
            if isinstance(arg, str):
                if arg not in names:
                    raise UsageError(f"{at}.args[{position}]: no buffer named {arg!r}")
                args.append(arg)
            elif isinstance(arg, dict) and "value" in arg:
                args.append(ScalarArg(arg["value"], _dtype(arg.get("dtype", "float32"), f"{at}.args[{position}]")))
            else:
                raise UsageError(f"{at}.args[{position}]: a buffer name or {{ value = ..., dtype = ... }}")
        local = raw.get("local_size")
        kernels.append(
            KernelSpec(
                name=str(raw["name"]),
                args=tuple(args),
                global_size=_sizes(raw.get("global_size"), f"{at}.global_size"),
                local_size=_sizes(local, f"{at}.local_size") if local is not None else None,
            )
        )
    if not kernels:
        raise UsageError(f"{where}: no kernels to run")
    check = None
    if "check" in data:
        raw = data["check"]
        if not isinstance(raw, dict) or raw.get("output") not in names or "expect" not in raw:
            raise UsageError(f"{where}: check needs output = <buffer name> and expect = <NumPy expression>")
        check = CheckSpec(
            str(raw["output"]), str(raw["expect"]), float(raw.get("rtol", 1e-5)), float(raw.get("atol", 1e-6))
        )
    return RunSpec(
        path=path,
        name=str(data.get("name", path.stem)),
        source_name=source_name,
        source=source,
        buffers=tuple(buffers),
        kernels=tuple(kernels),
        check=check,
        build_options=tuple(str(o) for o in data.get("build_options", [])),
    )


def expected_output(spec: RunSpec, initial: dict[str, np.ndarray]) -> np.ndarray:
    """Evaluate the check's NumPy expression over the buffers' initial values."""
    assert spec.check is not None
    scope: dict[str, Any] = {
        "np": np,
        **{k: v.astype(np.float64) if v.dtype.kind == "f" else v for k, v in initial.items()},
    }
    try:
        # The spec is the user's own file, like a script they run: plain eval, NumPy in scope.
        value = eval(spec.check.expect, {"np": np}, scope)
    except Exception as exc:
        raise UsageError(f"{spec.path.name}: check.expect {spec.check.expect!r} failed: {exc}") from None
    return np.asarray(value)
