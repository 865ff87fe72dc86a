"""From a target to a loadable module: the devices, the import, the compile and the affinity analysis.

Every IREE run starts the same way whatever runs its calls afterwards: pick
the devices, import an ONNX model, compile for those devices (or take a
`.vmfb` as it is) and, for a multi-device module, find where each argument
and result lives. Doing it once here lets the in-process flow and the
shipped-tools flow share it, and leaves each flow with a `PreparedModule`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from gputop.core.errors import CompileError, DeviceUnavailableError, GputopError
from gputop.core.module import demos
from gputop.core.module.compile import compile_module
from gputop.core.module.device_discovery import resolve_device
from gputop.core.module.targets import device_names
from gputop.core.multidevice.affinity import AffinityAnalysis, affinity_flags, analyse_module
from gputop.core.onnx.onnx_import import COMPILE_FLAGS as ONNX_COMPILE_FLAGS
from gputop.core.onnx.onnx_import import DEBUGINFO_FLAG, OPSET, explain_compile_failure, import_onnx
from gputop.core.onnx.onnx_model import F64_FLAG
from gputop.core.profiling.work.source_ops import SourceOrigin
from gputop.core.records.devices import DeviceInfo
from gputop.core.run.config import Target, TargetKind
from gputop.core.run.flow import RunContext

__all__ = ["PreparedModule", "prepare_module"]


@dataclass(frozen=True)
class PreparedModule:
    """A compiled module and the devices it runs on."""

    devices: list[DeviceInfo]
    vmfb: Path
    demo: demos.Demo | None
    imported_parameters: Path | None = None  # an ONNX model's weights, moved to an .irpa by the import
    source_path: Path | None = None
    affinity: AffinityAnalysis | None = None  # multi-device modules: the stream IR's affinity analysis
    origin: SourceOrigin | None = None  # what it was compiled from, to name its kernels' source ops

    @property
    def needs_tools(self) -> bool:
        """Multi-device GPU modules run through IREE's shipped tools (see tool_runner for why)."""
        return len(self.devices) > 1 and not all(d.backend.startswith("local") for d in self.devices)


def resolve_devices(ctx: RunContext, demo: demos.Demo | None) -> list[DeviceInfo]:
    """The run's devices: `--devices`, or `--device` once (twice for a two-device demo)."""
    config = ctx.config
    if config.devices:
        return _distinct([resolve_device(spec) for spec in config.devices])
    return _distinct([resolve_device(config.device)] * (demo.devices if demo else 1))


def prepare_module(ctx: RunContext) -> PreparedModule:
    """Resolve the devices and compile (or import and compile) the target for them."""
    target = ctx.config.target_info
    demo = target.demo
    devices = resolve_devices(ctx, demo)
    names: tuple[tuple[str, str], ...] = ()
    if len(devices) > 1:
        names = tuple(zip(device_names(len(devices)), (d.id for d in devices), strict=True))
    ctx.state.devices.set(devices, names)
    for name, info in zip(device_names(len(devices)), devices, strict=True):
        label = f"{name} = " if len(devices) > 1 else ""
        ctx.state.log.add("info", f"device {label}{info.id}: {info.name}")
    if target.kind is TargetKind.VMFB:
        ctx.state.lifecycle.phase(compile_s=0.0)
        ctx.state.log.add("info", f"{target.text}: precompiled module, no compile")
        assert target.path is not None
        return PreparedModule(devices, target.path, demo, origin=SourceOrigin("vmfb", target.path.name))
    return _compile(ctx, devices, demo)


def _compile(ctx: RunContext, devices: list[DeviceInfo], demo: demos.Demo | None) -> PreparedModule:
    """Compile the target (a demo, an ONNX model once imported, MLIR) for the run's devices."""
    config = ctx.config
    target = config.target_info
    device = devices[0]
    if any(d.compile_target is None for d in devices):
        raise DeviceUnavailableError(f"{device.id} has no IREE compile target")
    if len(devices) > 1:
        flags = affinity_flags([d.id for d in devices], [d.compile_target or () for d in devices])
    else:
        flags = config.target_flags or device.compile_target or ()
    flags = tuple(flags) + config.extra_compile_flags
    imported_parameters: Path | None = None
    f64: str | None = None
    if demo is not None:
        source_path, source_bytes = Path(f"{demo.name}.mlir"), demo.source()
    elif target.kind is TargetKind.ONNX:
        source_path, flags, imported_parameters, f64 = _import(ctx, target, flags)
        source_bytes = None
    else:
        assert target.path is not None
        source_path, source_bytes = target.path, None
    ctx.state.log.add("info", f"compiling {target.text} for {device.id}")
    try:
        compiled = compile_module(
            source_path,
            flags,
            log_dir=ctx.session_dir,
            cancel=ctx.controls.stop_event,
            use_cache=config.use_cache,
            source_bytes=source_bytes,
            notify=lambda text: ctx.state.log.add("warning", text),
        )
    except CompileError as exc:
        ctx.state.module.set_diagnostics(exc.diagnostics)
        if target.kind is TargetKind.ONNX and target.path is not None:
            raise explain_compile_failure(target.path, exc, flags) from None
        raise
    except GputopError as exc:
        ctx.state.module.set_diagnostics(tuple(getattr(exc, "diagnostics", ())))
        raise
    if F64_FLAG in flags:
        f64 = "kept"
    elif f64 == "kept":  # the user's own flag demoted a double model
        f64 = "demoted"
    ctx.state.outcome.set_compiled(compiled, f64=f64)
    ctx.state.module.set_diagnostics(compiled.diagnostics)
    affinity = _affinity(ctx, source_path, flags, source_bytes) if len(devices) > 1 else None
    ctx.state.lifecycle.phase(compile_s=compiled.compile_s)
    if compiled.workaround:
        ctx.state.log.add("warning", compiled.workaround)
    how = "cache hit" if compiled.cache_hit else f"compiled in {compiled.compile_s:.2f} s"
    ctx.state.log.add("info", f"{how}: {compiled.vmfb_path}")
    origin = _origin(target, demo, source_path)
    return PreparedModule(devices, compiled.vmfb_path, demo, imported_parameters, source_path, affinity, origin)


def _import(
    ctx: RunContext, target: Target, flags: tuple[str, ...]
) -> tuple[Path, tuple[str, ...], Path | None, str | None]:
    """Import an ONNX model: its MLIR, the compile flags it needs added, its weights' archive and its float64."""
    assert target.path is not None
    ctx.state.lifecycle.enter("importing")
    ctx.state.log.add("info", f"importing {target.text} (ONNX, opset {OPSET})")
    model = import_onnx(target.path, ctx.session_dir, cancel=ctx.controls.stop_event)
    ctx.state.lifecycle.phase(import_s=model.seconds)
    how = "import cache hit" if model.cache_hit else f"imported in {model.seconds:.2f} s"
    ctx.state.log.add("info", f"{how}: {model.mlir}")
    if model.parameters is not None:
        ctx.state.log.add("info", f"weights in a parameter archive, loaded by the parameter path: {model.parameters}")
    if not any("const-eval" in flag for flag in flags):
        flags += ONNX_COMPILE_FLAGS
    if DEBUGINFO_FLAG not in flags:
        flags += (DEBUGINFO_FLAG,)
    if model.f64 == "kept" and not any("demote-f64" in flag for flag in flags):
        # Double inputs, outputs or weights: demoted, the module would read f64 bytes as f32.
        flags += (F64_FLAG,)
        ctx.state.log.add("info", "the model's interface or weights are float64: compiled keeping f64")
    ctx.state.lifecycle.enter("compiling")
    return model.mlir, flags, model.parameters, model.f64


def _affinity(
    ctx: RunContext, source_path: Path, flags: tuple[str, ...], source_bytes: bytes | None
) -> AffinityAnalysis:
    """A multi-device module's affinity analysis, kept by the run's state; each hidden transfer a warning."""
    affinity = analyse_module(
        source_path, flags, ctx.session_dir / "affinity", source_bytes=source_bytes, cancel=ctx.controls.stop_event
    )
    ctx.state.devices.set_exports(tuple(affinity.records), tuple(affinity.transfers))
    for record in affinity.records:
        if record.flag == "hidden_transfer":
            ctx.state.log.add(
                "warning",
                f"{record.function} result {record.index} is produced on {record.producer_affinity} but "
                f"exported on {record.export_affinity}: a hidden transfer of {record.transfer_bytes} bytes",
            )
    return affinity


def _origin(target: Target, demo: demos.Demo | None, compiled: Path) -> SourceOrigin:
    """What the module was compiled from, as the user names it (the demo's own name for a built-in demo)."""
    if demo is not None:
        return SourceOrigin("mlir", f"{demo.name}.mlir", text=demo.source().decode("utf-8", errors="replace"))
    assert target.path is not None
    if target.kind is TargetKind.ONNX:
        return SourceOrigin("onnx", target.path.name, path=compiled, imported_name=f"{target.path.stem}.mlir")
    return SourceOrigin("mlir", target.path.name, path=target.path)


def _distinct(devices: list[DeviceInfo]) -> list[DeviceInfo]:
    """Give repeated devices (two local-task devices) distinct ids for memory rows."""
    ids = [d.id for d in devices]
    if len(set(ids)) == len(ids):
        return devices
    return [replace(d, id=f"{d.id}#{i}") if ids.count(d.id) > 1 else d for i, d in enumerate(devices)]
