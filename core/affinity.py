"""Device affinity of every argument and result of a multi-device module.

In a multi-device pipeline a result can be produced on one device and
exported on another (a transfer nobody asked for), or never declared and
left on a default device. This compiles the module to the end of IREE's
stream phase and walks the IR with the compiler's own MLIR Python bindings
(no regular expressions over IR text): each `stream.tensor.import` and
`stream.tensor.export` says where an argument arrives and a result leaves;
the `stream.cmd.execute` that writes a value says which device produced it;
flushes, invalidations and cross-device consumers are the transfers.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path
from typing import Any

from gputop.core.compile import find_compiler, read_source
from gputop.core.diagnostics import parse_diagnostics
from gputop.core.errors import CompileError, UsageError
from gputop.core.records import ExportAffinity, Transfer
from gputop.core.targets import device_names


def _device_of(attr: Any) -> str | None:
    """`#hal.device.affinity<@device_b>` -> `device_b` (optimal sets -> `a|b`)."""
    if attr is None:
        return None
    text = str(attr)
    names = [part.split(">")[0].split(",")[0].strip() for part in text.split("@")[1:]]
    names = [n.rstrip("]>)") for n in names if n]
    if not names:
        return None
    return names[0] if len(names) == 1 else "|".join(names)


def _attr(op: Any, name: str) -> Any:
    try:
        return op.attributes[name]
    except KeyError:
        return None


def _constant(value: Any) -> int:
    """The integer behind an `arith.constant` SSA value (0 when it is not one)."""
    from iree.compiler import ir

    owner = value.owner
    if isinstance(owner, ir.Block):
        return 0
    op = owner.operation if hasattr(owner, "operation") else owner
    if op.name != "arith.constant":
        return 0
    try:
        return int(ir.IntegerAttr(op.attributes["value"]).value)
    except Exception:
        return 0


def _walk(op: Any) -> Any:
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                yield child.operation
                yield from _walk(child.operation)


def declared_affinities(source: str, name: str = "source.mlir") -> dict[str, tuple[list[str | None], list[str | None]]]:
    """Per function: declared devices of arguments and results, from the source's attributes."""
    from iree.compiler import ir

    context = ir.Context()
    try:
        module = ir.Module.parse(source, context)
    except Exception as exc:
        diagnostics = getattr(exc, "error_diagnostics", None) or []
        if diagnostics:
            # loc("-":2:55) -> name:2:55
            where = str(diagnostics[0].location).removeprefix("loc(").rstrip(")").replace('"-"', name)
            raise CompileError(f"{where}: {diagnostics[0].message}") from None
        raise CompileError(f"{name}: cannot parse: {str(exc).splitlines()[0]}") from None
    found: dict[str, tuple[list[str | None], list[str | None]]] = {}
    for op in _walk(module.operation):
        if op.name not in ("func.func", "util.func"):
            continue
        name = str(_attr(op, "sym_name")).strip('"')
        function_type = ir.FunctionType(ir.TypeAttr(_attr(op, "function_type")).value)
        args: list[str | None] = [None] * len(function_type.inputs)
        results: list[str | None] = [None] * len(function_type.results)
        for key, target in (("arg_attrs", args), ("res_attrs", results)):
            attrs = _attr(op, key)
            if attrs is None:
                continue
            for index, entry in enumerate(ir.ArrayAttr(attrs)):
                dictionary = ir.DictAttr(entry)
                if "iree.abi.affinity" in dictionary:
                    target[index] = _device_of(dictionary["iree.abi.affinity"])
        found[name] = (args, results)
    return found


def compile_to_stream(
    source_path: Path, flags: tuple[str, ...], out_dir: Path, source_bytes: bytes | None = None
) -> str:
    """The module at the end of the stream phase, as MLIR text (compiled in a child process)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if source_bytes is not None:
        path = out_dir / f"affinity-source-{source_path.name}"
        path.write_bytes(source_bytes)
        source_path = path
    output = out_dir / f"{source_path.stem}.stream.mlir"
    log = out_dir / f"{source_path.stem}.stream.log"
    proc = subprocess.run(
        [find_compiler(), str(source_path), *flags, "--compile-to=stream", "-o", str(output)],
        capture_output=True,
        text=True,
    )
    log.write_text(proc.stdout + proc.stderr, encoding="utf-8")
    if proc.returncode != 0:
        errors = [d for d in parse_diagnostics(proc.stderr, log_path=str(log)) if d.severity == "error"]
        first = errors[0].one_line().removeprefix("error: ") if errors else f"exit {proc.returncode}"
        raise CompileError(first, log_path=str(log))
    return output.read_text(encoding="utf-8")


def analyse_stream(
    stream_ir: str, declared: dict[str, tuple[list[str | None], list[str | None]]]
) -> tuple[list[ExportAffinity], list[Transfer]]:
    """Affinity records and transfers of every public function in stream-phase IR."""
    from iree.compiler import ir

    context = ir.Context()
    module = ir.Module.parse(stream_ir, context)
    records: list[ExportAffinity] = []
    transfers: list[Transfer] = []
    for func in _walk(module.operation):
        if func.name != "util.func" or _attr(func, "iree.abi.stub") is None:
            continue
        name = str(_attr(func, "sym_name")).strip('"')
        args_declared, results_declared = declared.get(name, ([], []))
        ops = list(_walk(func))
        block = func.regions[0].blocks[0]
        # Which execute region (device) writes each resource, last writer wins.
        writer: dict[Any, tuple[str | None, str | None]] = {}
        for op in ops:
            if op.name != "stream.cmd.execute":
                continue
            device = _device_of(_attr(op, "affinity"))
            region_args = list(op.regions[0].blocks[0].arguments)
            # The captured resources, in order, are the resource-typed operands (sizes and awaits are not).
            captured = [v for v in op.operands if str(v.type).startswith("!stream.resource")]
            for inner in _walk(op):
                if inner.name in ("stream.cmd.flush", "stream.cmd.invalidate"):
                    other = _device_of(_attr(inner, "source_affinity"))
                    if other and device and other != device:
                        size = _constant(inner.operands[-1])  # ... %arg[offset for LENGTH]
                        src, dst = (device, other) if inner.name.endswith("flush") else (other, device)
                        transfers.append(Transfer(name, src, dst, size, inner.name))
                if inner.name in ("stream.cmd.dispatch", "stream.cmd.copy", "stream.cmd.fill"):
                    dispatch = str(_attr(inner, "entry_points") or inner.name)
                    for operand in inner.operands:
                        for arg, outer in zip(region_args, captured, strict=False):
                            if operand == arg:
                                writer[outer] = (device, dispatch)
        # Arguments: where they are imported and where they are consumed.
        for op in ops:
            if op.name != "stream.tensor.import":
                continue
            source = op.operands[0]
            if not isinstance(source.owner, ir.Block):
                continue
            index = list(block.arguments).index(source)
            device = _device_of(_attr(op, "affinity"))
            size = _constant(op.operands[-1])
            consumers = set()
            for use in op.results[0].uses:
                owner = use.owner
                owner = owner.operation if hasattr(owner, "operation") else owner
                if owner.name == "stream.cmd.execute":
                    consumers.add(_device_of(_attr(owner, "affinity")))
            elsewhere = sorted(c for c in consumers if c and c != device)
            declared_device = args_declared[index] if index < len(args_declared) else None
            flag = "transfer" if elsewhere else ("undeclared" if declared_device is None else None)
            records.append(
                ExportAffinity(
                    name,
                    "argument",
                    index,
                    declared_device,
                    device,
                    ",".join(elsewhere) if elsewhere else device,
                    size if elsewhere else 0,
                    flag,
                )
            )
        # Results: where they are exported and which device's work produced them.
        returns = [op for op in ops if op.name == "util.return"]
        for op in ops:
            if op.name != "stream.tensor.export":
                continue
            exported = op.results[0]
            result_index = next(
                (i for r in returns for i, v in enumerate(r.operands) if v == exported),
                None,
            )
            if result_index is None:
                continue
            device = _device_of(_attr(op, "affinity"))
            resource = op.operands[0]
            owner = resource.owner
            owner = owner.operation if hasattr(owner, "operation") else owner
            if not isinstance(owner, ir.Block) and owner.name == "stream.timepoint.await":
                position = list(owner.results).index(resource)
                resource = owner.operands[position]
            producer = writer.get(resource, (None, None))[0]
            size = _constant(op.operands[-1])
            declared_device = results_declared[result_index] if result_index < len(results_declared) else None
            if producer and device and producer != device:
                flag, moved = "hidden_transfer", size
                transfers.append(Transfer(name, producer, device, size, "stream.tensor.export"))
            else:
                flag, moved = ("undeclared" if declared_device is None else None), 0
            records.append(ExportAffinity(name, "result", result_index, declared_device, device, producer, moved, flag))
    records.sort(key=lambda r: (r.function, r.kind != "argument", r.index))
    return records, transfers


def affinity_flags(device_specs: list[str], target_flags: list[tuple[str, ...]]) -> tuple[str, ...]:
    """Named target devices for `--devices`: device_a=<target>[ordinal], ...

    The ordinal counts devices of the same target, so `cuda:0,cuda:1` gives
    `device_a=cuda[0]` and `device_b=cuda[1]`; target options are kept once.
    """
    prefix = "--iree-hal-target-device="
    named: list[str] = []
    options: list[str] = []
    seen: dict[str, int] = {}
    for name, flags in zip(device_names(len(device_specs)), target_flags, strict=True):
        target = next((f[len(prefix) :] for f in flags if f.startswith(prefix)), None)
        if target is None:
            raise UsageError(f"{name}: its device has no IREE target")
        ordinal = seen.get(target, 0)
        seen[target] = ordinal + 1
        named.append(f"{prefix}{name}={target}[{ordinal}]")
        options.extend(f for f in flags if not f.startswith(prefix) and f not in options)
    return (*named, *options)


def analyse(
    source_path: Path,
    flags: tuple[str, ...],
    out_dir: Path,
    *,
    source_bytes: bytes | None = None,
    cancel: threading.Event | None = None,
) -> tuple[list[ExportAffinity], list[Transfer]]:
    """Compile to the stream phase and analyse every exported function."""
    data = source_bytes if source_bytes is not None else read_source(source_path)
    text = data.decode("utf-8", errors="replace")
    declared = declared_affinities(text, source_path.name)
    known = {f.split("=")[1] for f in flags if f.startswith("--iree-hal-target-device=") and f.count("=") == 2}
    if known:
        for function, (args, results) in declared.items():
            for kind, devices in (("argument", args), ("result", results)):
                for index, device in enumerate(devices):
                    if device is not None and device not in known:
                        raise UsageError(
                            f"{source_path.name}: {function} {kind} {index} is pinned to {device}, "
                            f"but the target devices are {', '.join(sorted(known))}"
                        )
    stream_ir = compile_to_stream(source_path, flags, out_dir, source_bytes=source_bytes)
    return analyse_stream(stream_ir, declared)


def target_flags_for_spec(spec: str) -> tuple[str, ...]:
    """Compile flags for a device spec, also for devices this machine does not have.

    Affinity analysis only compiles, so `gputop affinity --devices cuda:0,cuda:1`
    works on a machine without CUDA: a missing device gets its backend's
    default target.
    """
    from gputop.core.devices import IREE_BACKENDS, resolve_device
    from gputop.core.errors import DeviceUnavailableError
    from gputop.core.targets import compile_target_for

    try:
        flags = resolve_device(spec).compile_target
        if flags:
            return flags
    except DeviceUnavailableError:
        pass
    backend = {"cpu": "local-task", "local": "local-task"}.get(spec.split(":")[0], spec.split(":")[0])
    if backend not in IREE_BACKENDS:
        raise UsageError(f"no device {spec!r}: backends are {', '.join(IREE_BACKENDS)}")
    return compile_target_for(backend)
