"""Device affinity of every argument and result of a multi-device module, and what moves between devices.

In a multi-device pipeline a result can be produced on one device and
exported on another (a transfer nobody asked for), or never declared and
left wherever IREE put it. This compiles the module to the end of IREE's
stream phase and reads it with the compiler's own MLIR Python bindings
(`core/multidevice/stream_dataflow.py`, no regular expressions over IR text). The
producer of a value is the device whose command WRITES it; a device that
only reads it (an `ro` binding, the source of a copy, `invalidate`/`flush`)
consumes it and never becomes its producer. A transfer is reported only where
bytes move between devices: a copy whose bytes were written on another device,
a device reading another's bytes directly, or an export on a device other
than the writer's, each with the op that moves them and its byte count.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gputop.core.errors import CompileError, UsageError
from gputop.core.mlir_ops import op_of, walk
from gputop.core.module.compile import compile_failure, find_compiler, read_source
from gputop.core.module.diagnostics import parse_diagnostics
from gputop.core.module.targets import device_names
from gputop.core.multidevice.sizes import SizeExpr
from gputop.core.multidevice.stream_dataflow import FunctionFlow, PlannedCopy, device_of, function_flows
from gputop.core.processes import child_options
from gputop.core.records.affinity import ExportAffinity, Transfer
from gputop.core.records.base import to_json

__all__ = [
    "PINNED_EXPORTS",
    "PINNED_IMPORTS",
    "AffinityAnalysis",
    "Declared",
    "FunctionAffinity",
    "affinity_flags",
    "analyse",
    "analyse_module",
    "analyse_stream_ir",
    "compile_to_stream",
    "declared_affinities",
    "mlir_bindings",
]

Declared = dict[str, tuple[list[str | None], list[str | None]]]


@dataclass(frozen=True)
class FunctionAffinity:
    """One function's records and transfers, with what a runtime profile can check them against.

    `moved_by[i]` is the index in `copies` of the copy command that moves
    transfer i (None: no command moves it, as for an export handed to another
    device or a kernel reading another device's memory); `record_transfers[j]`
    are the transfers that move record j's value; `sizes[i]` is transfer i's
    length as a formula in the arguments' dimensions where the IR gives it only
    at run time (dynamic shapes), else None.
    """

    function: str
    records: tuple[ExportAffinity, ...]
    transfers: tuple[Transfer, ...]
    copies: tuple[PlannedCopy, ...]
    moved_by: tuple[int | None, ...]
    record_transfers: tuple[tuple[int, ...], ...]
    sizes: tuple[SizeExpr | None, ...] = ()

    def with_shapes(self, shapes: Sequence[Sequence[int] | None]) -> FunctionAffinity:
        """Dynamic sizes computed for one call whose arguments have these shapes (`bytes_from_call`)."""
        if not any(self.sizes):
            return self
        copies = tuple(
            replace(c, bytes=n) if c.bytes_expr is not None and (n := c.bytes_expr.evaluate(shapes)) is not None else c
            for c in self.copies
        )
        transfers = tuple(
            replace(t, bytes=n, bytes_from_call=True)
            if size is not None and (n := size.evaluate(shapes)) is not None
            else t
            for t, size in zip(self.transfers, self.sizes, strict=True)
        )
        records = tuple(
            replace(r, transfer_bytes=sum(transfers[i].bytes for i in moved), bytes_from_call=True)
            if any(self.sizes[i] is not None for i in moved)
            else r
            for r, moved in zip(self.records, self.record_transfers, strict=True)
        )
        return replace(self, records=records, transfers=transfers, copies=copies)

    def to_plan(self) -> dict[str, Any]:
        """The analysis as JSON, for a machine without the compiler (the GPU machines): what `from_plan` reads
        back there to match a profiled call's copies. Sizes are as they stand (give dynamic ones a call's
        shapes with `with_shapes` first): their formulas are not written."""
        return {
            "function": self.function,
            "records": to_json(list(self.records)),
            "transfers": to_json(list(self.transfers)),
            "copies": [to_json(replace(c, bytes_expr=None)) for c in self.copies],
            "moved_by": list(self.moved_by),
            "record_transfers": [list(t) for t in self.record_transfers],
        }

    @classmethod
    def from_plan(cls, plan: dict[str, Any]) -> FunctionAffinity:
        """The analysis `to_plan` wrote (extra keys of the plan are left alone)."""
        return cls(
            plan["function"],
            tuple(ExportAffinity(**r) for r in plan["records"]),
            tuple(Transfer(**t) for t in plan["transfers"]),
            tuple(PlannedCopy(**c) for c in plan["copies"]),
            tuple(plan["moved_by"]),
            tuple(tuple(t) for t in plan["record_transfers"]),
        )


@dataclass(frozen=True)
class AffinityAnalysis:
    """Every exported function's affinity, in the module's order."""

    functions: tuple[FunctionAffinity, ...]

    @property
    def records(self) -> list[ExportAffinity]:
        records = [r for f in self.functions for r in f.records]
        return sorted(records, key=lambda r: (r.function, r.kind != "argument", r.index))

    @property
    def transfers(self) -> list[Transfer]:
        return [t for f in self.functions for t in f.transfers]

    def function(self, name: str) -> FunctionAffinity | None:
        return next((f for f in self.functions if f.function == name), None)

    def replace_function(self, updated: FunctionAffinity) -> AffinityAnalysis:
        return AffinityAnalysis(tuple(updated if f.function == updated.function else f for f in self.functions))


def mlir_bindings() -> Any:
    """The compiler's MLIR Python bindings (`iree.compiler.ir`), or one line saying they are missing."""
    try:
        from iree.compiler import ir
    except ImportError:
        raise CompileError(
            "affinity analysis needs IREE's compiler (iree-base-compiler), which is not installed here"
        ) from None
    return ir


def _attr(op: Any, name: str) -> Any:
    try:
        return op.attributes[name]
    except KeyError:
        return None


_UNDECLARED_DEVICE = "promised device that was not declared"
PINNED_IMPORTS = ("hal.tensor.import", "stream.tensor.import")
PINNED_EXPORTS = ("hal.tensor.export", "stream.tensor.export")


def declared_affinities(source: str, name: str = "source.mlir") -> dict[str, tuple[list[str | None], list[str | None]]]:
    """Per function: declared devices of arguments and results, from the source.

    A declaration is either an `iree.abi.affinity` attribute on the argument
    or result, or a pin written on the op that brings the value in or out of
    the function: `hal.tensor.import/export on(#hal.device.promise<@d>)` or
    `stream.tensor.import/export on(...)` whose operand is the argument, or
    whose result is returned. `iree.abi.affinity` wins where both are given.
    """
    ir = mlir_bindings()

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
    for op in walk(module.operation):
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
                    target[index] = device_of(dictionary["iree.abi.affinity"])
        _pinned_on_ops(op, args, results)
        found[name] = (args, results)
    return found


def _pinned_on_ops(function: Any, args: list[str | None], results: list[str | None]) -> None:
    """Fill undeclared arguments and results from the pins written on their import and export ops."""
    from iree.compiler import ir

    if not function.regions or not function.regions[0].blocks:
        return
    entry = list(function.regions[0].blocks[0].arguments)
    for op in walk(function):
        if op.name in PINNED_IMPORTS and "affinity" in op.attributes:
            source = next(iter(op.operands), None)
            if source is not None and isinstance(source.owner, ir.Block) and source in entry:
                index = entry.index(source)
                if index < len(args) and args[index] is None:
                    args[index] = device_of(op.attributes["affinity"])
        elif op.name in PINNED_EXPORTS and "affinity" in op.attributes:
            for use in op.results[0].uses:
                owner = op_of(use.owner)
                index = use.operand_number
                if owner.name in ("func.return", "util.return") and index < len(results) and results[index] is None:
                    results[index] = device_of(op.attributes["affinity"])


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
        **child_options(),
    )
    text = proc.stdout + proc.stderr
    log.write_text(text, encoding="utf-8")
    diagnostics = tuple(parse_diagnostics(proc.stderr, log_path=str(log)))
    errors = [d for d in diagnostics if d.severity == "error"]
    # iree-compile can print errors and still exit 0 (a device the module promises but the flags do not
    # declare): any error fails the analysis, whose IR would describe devices that do not exist.
    if proc.returncode != 0 or errors or not output.exists():
        source = source_bytes if source_bytes is not None else read_source(source_path)
        error = compile_failure(text, proc.returncode, diagnostics, log, None, source)
        if any(_UNDECLARED_DEVICE in d.message for d in errors):
            named = [f.split("=")[1] for f in flags if f.startswith("--iree-hal-target-device=") and f.count("=") == 2]
            error.message += f" (--devices provides {', '.join(named) or 'no named device'})"
        raise error
    return output.read_text(encoding="utf-8")


def analyse_stream_ir(stream_ir: str, declared: Declared) -> AffinityAnalysis:
    """The full analysis of stream-phase IR: records, transfers and the copies that move them."""
    ir = mlir_bindings()

    context = ir.Context()
    module = ir.Module.parse(stream_ir, context)
    return AffinityAnalysis(tuple(_function_affinity(flow, declared) for flow in function_flows(module)))


def _function_affinity(flow: FunctionFlow, declared: Declared) -> FunctionAffinity:
    args_declared, results_declared = declared.get(flow.name, ([], []))
    writes = flow.writes

    # Every pair (write, reading device) where the reader is another device is one transfer.
    transfers: list[Transfer] = []
    sizes: list[SizeExpr | None] = []
    moved_by: list[int | None] = []
    index_of: dict[tuple[int, str], int] = {}
    for read in flow.reads:
        for wid in sorted(read.writes):
            source = writes[wid].device
            if not source or not read.device or source == read.device or (wid, read.device) in index_of:
                continue
            write = writes[wid]
            if read.copy is not None:  # the reader copies the bytes into its own memory
                op, size, expr, copy = read.op, read.bytes, read.bytes_expr, read.copy
            elif write.copy is not None:  # the writer copied them into memory the reader then uses
                op, size, expr, copy = write.op, write.bytes, write.bytes_expr, write.copy
            else:  # handed over (an export) or read in place by another device's kernel
                op, size, expr, copy = read.op, read.bytes, read.bytes_expr, None
            index_of[(wid, read.device)] = len(transfers)
            transfers.append(Transfer(flow.name, source, read.device, size, op, bytes_expr=_text(expr)))
            sizes.append(expr)
            moved_by.append(None if copy is None else next(i for i, c in enumerate(flow.copies) if c is copy))

    records: list[ExportAffinity] = []
    record_transfers: list[tuple[int, ...]] = []
    passthrough = {e.argument for e in flow.exports if e.argument is not None}
    for index in flow.tensor_arguments:
        imports = [i for i in flow.imports if i.argument == index]
        written = {i.write for i in imports}
        readers = sorted({r.device for r in flow.reads if r.device and r.writes & written})
        moved = tuple(sorted(t for (wid, _), t in index_of.items() if wid in written))
        declared_device = args_declared[index] if index < len(args_declared) else None
        flag = (
            "transfer" if moved
            else "passthrough" if index in passthrough and not imports
            else "undeclared" if declared_device is None
            else None
        )  # fmt: skip
        records.append(
            ExportAffinity(
                flow.name, "argument", index, declared_device,
                _join(i.device for i in imports), ",".join(readers) or None,
                sum(transfers[t].bytes for t in moved), flag, transfer_bytes_expr=_sum_text(transfers, moved),
            )
        )  # fmt: skip
        record_transfers.append(moved)
    for export in flow.exports:
        declared_device = results_declared[export.result] if export.result < len(results_declared) else None
        if export.argument is not None:
            records.append(
                ExportAffinity(flow.name, "result", export.result, declared_device, None, None, 0, "passthrough")
            )
            record_transfers.append(())
            continue
        hidden = {index_of[(w, export.device)] for w in export.writes if (w, export.device) in index_of}
        carried = {index_of[key] for key in _lineage_crossings(flow, export.writes) if key in index_of}
        moved = tuple(sorted(hidden | carried))
        flag = (
            "hidden_transfer" if hidden
            else "transfer" if carried
            else "undeclared" if declared_device is None
            else None
        )  # fmt: skip
        records.append(
            ExportAffinity(
                flow.name, "result", export.result, declared_device, export.device,
                _join((writes[w].device for w in export.writes), "|"),
                sum(transfers[t].bytes for t in moved), flag, transfer_bytes_expr=_sum_text(transfers, moved),
            )
        )  # fmt: skip
        record_transfers.append(moved)
    return FunctionAffinity(
        flow.name, tuple(records), tuple(transfers), flow.copies, tuple(moved_by), tuple(record_transfers),
        tuple(sizes),
    )  # fmt: skip


def _text(expr: SizeExpr | None) -> str | None:
    return None if expr is None else str(expr)


def _sum_text(transfers: list[Transfer], moved: Sequence[int]) -> str | None:
    """A record's bytes as a formula where any of its transfers has a dynamic size, else None."""
    if not any(transfers[t].bytes_expr for t in moved):
        return None
    return " + ".join(transfers[t].bytes_expr or str(transfers[t].bytes) for t in moved)


def _lineage_crossings(flow: FunctionFlow, writes: frozenset[int]) -> set[tuple[int, str]]:
    """(earlier write, device) pairs where a value's bytes crossed devices before its last write.

    A copy's bytes come from its source and an in-place update keeps the old
    bytes, so a value is followed back through them; a kernel that writes
    fresh bytes (`wo`) starts a new value.
    """
    crossings: set[tuple[int, str]] = set()
    seen: set[int] = set()
    pending = list(writes)
    while pending:
        wid = pending.pop()
        if wid in seen:
            continue
        seen.add(wid)
        write = flow.writes[wid]
        for origin in write.derived_from:
            source = flow.writes[origin].device
            if source and write.device and source != write.device:
                crossings.add((origin, write.device))
            pending.append(origin)
    return crossings


def _join(devices: Any, separator: str = ",") -> str | None:
    names = sorted({d for d in devices if d})
    return separator.join(names) if names else None


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
    """Compile to the stream phase; the records and transfers of every exported function."""
    analysis = analyse_module(source_path, flags, out_dir, source_bytes=source_bytes, cancel=cancel)
    return analysis.records, analysis.transfers


def analyse_module(
    source_path: Path,
    flags: tuple[str, ...],
    out_dir: Path,
    *,
    source_bytes: bytes | None = None,
    cancel: threading.Event | None = None,
) -> AffinityAnalysis:
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
    return analyse_stream_ir(stream_ir, declared)
