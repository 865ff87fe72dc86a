"""What to run and how: `RunConfig`, and the `Target` it names, parsed and checked once.

The command line, the TUI, `gputop serve` and Python scripts all start a run
from a `RunConfig`, so its checks live here, in `__post_init__`, and a script
gets the same one-line `UsageError` for `iterations=-1` that `gputop run -n -1`
prints. The kind of target (a built-in demo, `.mlir`, `.onnx`, `.vmfb`, an
OpenCL run spec) is decided in `Target.parse` and nowhere else. Every file the
options name (references, input files, parameter files) is checked here too,
before any session folder exists: a usage error records no session.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from pathlib import Path
from typing import Any

from gputop.core.errors import UsageError
from gputop.core.files import require_file
from gputop.core.module import demos
from gputop.core.module.check import check_tensor_file
from gputop.core.module.inputs import DEFAULT_SEED, check_input_files
from gputop.core.params.archive import archive_kind
from gputop.core.runners.iree_runner import PARAMETER_MODES

__all__ = ["RENDERDOC_MODES", "RunConfig", "Target", "TargetKind", "config_default"]

RENDERDOC_MODES = ("auto", "on", "off")
MLIR_SUFFIXES = (".mlir", ".mlirbc")
TARGET_HELP = "targets are .mlir, .onnx, .vmfb, an OpenCL .toml spec or demo:NAME"


class TargetKind(Enum):
    DEMO = "demo"  # a built-in MLIR demo: source and NumPy reference ship with gputop
    OPENCL_DEMO = "opencl-demo"  # a built-in OpenCL run spec
    MLIR = "mlir"
    ONNX = "onnx"
    VMFB = "vmfb"  # precompiled: no compile, no affinity analysis
    OPENCL_SPEC = "opencl-spec"  # a .toml run spec for pyopencl


_SUFFIX_KINDS = {
    ".mlir": TargetKind.MLIR,
    ".mlirbc": TargetKind.MLIR,
    ".onnx": TargetKind.ONNX,
    ".vmfb": TargetKind.VMFB,
    ".toml": TargetKind.OPENCL_SPEC,
}


@dataclass(frozen=True)
class Target:
    """A run's target as parsed: its kind, and its file or its demo."""

    text: str
    kind: TargetKind
    path: Path | None = None  # files, and the run spec of a built-in OpenCL demo
    demo: demos.Demo | None = None  # built-in MLIR demos

    @classmethod
    def parse(cls, text: str, *, must_exist: bool = True) -> Target:
        """Decide what `text` names; a file must exist (unless `must_exist` is False)."""
        if demos.is_demo(text):
            if demos.is_opencl_demo(text):
                return cls(text, TargetKind.OPENCL_DEMO, path=demos.opencl_demo_spec(text))
            return cls(text, TargetKind.DEMO, demo=demos.demo_for(text))
        path = Path(text)
        kind = _SUFFIX_KINDS.get(path.suffix)
        if kind is None:
            if must_exist and not path.exists():
                raise UsageError(f"{text}: no such file ({TARGET_HELP})")
            raise UsageError(f"{text}: expected a .mlir, .onnx or .vmfb file, an OpenCL .toml run spec or a demo:NAME")
        if must_exist and not path.exists():
            raise UsageError(f"{text}: no such file")
        return cls(text, kind, path=path)

    @property
    def is_opencl(self) -> bool:
        return self.kind in (TargetKind.OPENCL_DEMO, TargetKind.OPENCL_SPEC)

    @property
    def label(self) -> str:
        """A short name for the session folder: `demo-mlp`, `model` for `model.onnx`."""
        return Path(self.text.replace(":", "-")).stem or "run"


def config_default(name: str) -> Any:
    """A `RunConfig` field's default: the command line states no default of its own."""
    value = {f.name: f.default for f in dataclasses.fields(RunConfig)}[name]
    if value is dataclasses.MISSING:
        raise KeyError(name)
    return value


@dataclass(frozen=True)
class RunConfig:
    """What to run and how; `iterations=None` calls until stopped (the TUI, `gputop serve`)."""

    target: str = "demo:mlp"
    device: str | None = None
    iterations: int | None = 10
    function: str | None = None
    inputs: tuple[str, ...] = ()
    params: tuple[Path, ...] = ()
    seed: int = DEFAULT_SEED
    sample_interval_s: float = 0.1
    extra_compile_flags: tuple[str, ...] = ()
    target_flags: tuple[str, ...] | None = None
    session_dir: Path | None = None
    use_cache: bool = True
    check: bool = True
    checks: tuple[Path, ...] = ()
    rtol: float | None = None  # None: the default of each output's element type (check.TOLERANCES)
    atol: float | None = None
    profile: bool = False  # one profile pass after the steady calls (gputop run --profile)
    profile_level: str = "default"  # gputop run --profile=full; the periodic passes' level (tool_pass.py)
    profile_calls: int = 10  # calls in a profile pass asked for while running (the TUI's p)
    profile_every_s: float | None = None  # keep profiling periodically, merging passes
    devices: tuple[str, ...] = ()  # --devices D1,D2: one named target device each (device_a, device_b, ...)
    renderdoc: str = "auto"  # auto | on | off: load RenderDoc for Vulkan runs
    capture_calls: int = 0  # gputop run --capture N: capture N calls after the first
    record_every_s: float = 0.0  # samples.jsonl: every snapshot (0), or one per period plus every change
    profile_pass_calls: int | None = None  # gputop run --profile: calls in its pass (None: as many as iterations)
    warmup_s: float = 2.0  # before each profile pass: calls until the GPU clock is steady, at most this long
    params_mode: str = "auto"  # how parameters reach the device: auto | streamed | mmap | file_async
    counters: bool = False  # one counters pass (Nsight Compute) after the steady calls (gputop run --counters)
    pm_sampling: bool = True  # the GPU's own counters sampled live on CUDA (CUPTI PM sampling); --no-pm-sampling
    pm_interval_ms: float = 10.0  # PM sampling's interval (--pm-interval-ms; profiling/pm_sampler.py says why)

    def __post_init__(self) -> None:
        if self.iterations is not None and self.iterations < 0:
            raise UsageError("--iterations must be 0 (first call only) or more")
        if not 0.05 <= self.pm_interval_ms <= 1000:
            raise UsageError("--pm-interval-ms must be between 0.05 and 1000 milliseconds")
        if not self.sample_interval_s > 0:
            raise UsageError("--sample-interval must be positive")
        if self.profile_calls < 1 or (self.profile_pass_calls is not None and self.profile_pass_calls < 1):
            raise UsageError("--profile-calls must be at least 1")
        if self.profile_every_s is not None and not self.profile_every_s > 0:
            raise UsageError("--profile-every must be positive")
        if not self.warmup_s >= 0:
            raise UsageError("--warmup must be 0 (off) or more seconds")
        if self.record_every_s < 0:
            raise UsageError("--record-every must be 0 (every sample) or positive")
        if self.capture_calls < 0:
            raise UsageError("--capture must be 0 or more calls")
        if (self.rtol is not None and self.rtol < 0) or (self.atol is not None and self.atol < 0):
            raise UsageError("--rtol and --atol must be 0 or more")
        if self.renderdoc not in RENDERDOC_MODES:
            raise UsageError(f"--renderdoc {self.renderdoc!r}: choose from {', '.join(RENDERDOC_MODES)}")
        if self.params_mode not in PARAMETER_MODES:
            raise UsageError(f"--params-mode {self.params_mode!r}: choose from {', '.join(PARAMETER_MODES)}")
        if self.devices and len(self.devices) < 2:
            raise UsageError("--devices takes two or more devices, e.g. local:0,local:1 or cuda:0,cuda:1")
        _ = self.target_info  # the target is parsed (and checked) once, here
        self._check_files()

    def _check_files(self) -> None:
        """Every file the options name is there to read, before a session is made for the run: a missing
        reference, input or parameter file is a usage error that leaves no session behind. The run reads
        them later with the same checks (a file may still go meanwhile)."""
        for text in self.inputs:
            check_input_files(text)
        for path in self.params:
            archive_kind(path)
            require_file(path, "parameter file")
        for path in self.checks:
            check_tensor_file(path, "reference")

    @cached_property
    def target_info(self) -> Target:
        """The parsed target (a cached property, not a field: the manifest records `target` as given)."""
        return Target.parse(self.target)
