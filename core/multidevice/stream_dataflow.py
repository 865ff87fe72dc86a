"""Who writes every byte a multi-device function imports, moves and exports, read from stream-phase IR.

Being handed a resource is not writing it. A device that reads a value (an
`ro` dispatch binding, the source of a copy, `invalidate`/`flush`) consumes
it; only a command that writes it (a `wo`/`rw` binding, the target of a copy
or fill, a `stream.async.*` result) produces it. This walks one exported
function of IREE's stream-phase IR with the compiler's MLIR Python bindings
and records, in program order and per basic block (reaching definitions over
the control-flow graph), every write and every read of every byte range. It
follows a value through `stream.timepoint.await`, the resources captured by
execute regions, subviews, tied operands and block arguments down to the
allocation or import that owns its bytes, so a slice of a resource, or a
resource reused for another value, is told apart by its byte range. Each
write keeps the writes its bytes came from (a copy's source, the old content
an in-place update keeps), so a value can be followed from device to device.

`core/multidevice/affinity.py` turns this into the records the user sees; the planned
copies are what the runtime cross-check looks for in a profile.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gputop.core.mlir_ops import op_of, walk
from gputop.core.multidevice.sizes import SizeExpr, size_expr

END = 1 << 62  # the end of a byte range whose length the IR does not give as a constant
READ, WRITE = 1, 2  # IREE's stream ResourceAccessBitfield (`ro` = 1, `wo` = 2, `rw` = 3)
COPIES = ("stream.cmd.copy", "stream.async.transfer", "stream.async.copy", "stream.async.clone", "stream.async.slice")
MARKERS = ("stream.cmd.flush", "stream.cmd.invalidate", "stream.cmd.discard", "stream.yield")

__all__ = ["END", "Export", "FunctionFlow", "Import", "PlannedCopy", "Read", "Write", "device_of", "function_flows"]


@dataclass(frozen=True)
class PlannedCopy:
    """A copy command as the compiler planned it: the device that runs it, its length, its binding slots.

    The slots are the positions of the source and target among the resources
    the execute region captures (as a profile's command-buffer copy numbers
    its bindings); None where the copy is not inside an execute region.
    """

    device: str | None
    bytes: int
    source_slot: int | None
    target_slot: int | None
    bytes_expr: SizeExpr | None = None  # the length as a formula in the arguments' dims (dynamic shapes)


@dataclass(frozen=True)
class Write:
    """One command writing a byte range; `derived_from` holds the writes its bytes came from."""

    id: int
    device: str | None
    op: str
    bytes: int
    derived_from: frozenset[int]
    copy: PlannedCopy | None = None
    bytes_expr: SizeExpr | None = None


@dataclass(frozen=True)
class Read:
    """One command reading a byte range, and the writes that may have put the bytes there."""

    device: str | None
    op: str
    bytes: int
    writes: frozenset[int]
    copy: PlannedCopy | None = None  # set when the read is a copy's source: the bytes land on `device`
    bytes_expr: SizeExpr | None = None


@dataclass(frozen=True)
class Import:
    argument: int
    device: str | None
    bytes: int
    write: int  # the caller's bytes count as one write on the import's device


@dataclass(frozen=True)
class Export:
    result: int
    device: str | None
    bytes: int
    writes: frozenset[int]
    argument: int | None = None  # an argument returned unchanged: nothing imports or exports it
    bytes_expr: SizeExpr | None = None


@dataclass(frozen=True)
class FunctionFlow:
    """Everything one exported function writes, reads, imports and exports."""

    name: str
    tensor_arguments: tuple[int, ...]
    writes: tuple[Write, ...]  # writes[i].id == i
    reads: tuple[Read, ...]
    imports: tuple[Import, ...]
    exports: tuple[Export, ...]
    copies: tuple[PlannedCopy, ...]  # every copy command, in program order (cross-device or not)


def device_of(attr: Any) -> str | None:
    """`#hal.device.affinity<@device_b>` -> `device_b`; an optimal set -> `device_a|device_b`."""
    if attr is None:
        return None
    names = [part.split(">")[0].split(",")[0].strip().rstrip("]>)") for part in str(attr).split("@")[1:]]
    names = [n for n in names if n]
    if not names:
        return None
    return names[0] if len(names) == 1 else "|".join(names)


def function_flows(module: Any) -> list[FunctionFlow]:
    """One `FunctionFlow` per exported function (`util.func` with `iree.abi.stub`) of a parsed module."""
    flows = []
    for op in walk(module.operation):
        if op.name == "util.func" and "iree.abi.stub" in op.attributes and op.regions[0].blocks:
            flows.append(_FunctionWalk(op).run())
    return flows


def _constant(value: Any) -> int | None:
    """The integer behind an `arith.constant` SSA value, or None."""
    from iree.compiler import ir

    if value is None or isinstance(value.owner, ir.Block):
        return None
    op = op_of(value.owner)
    if op.name != "arith.constant":
        return None
    try:
        return int(ir.IntegerAttr(op.attributes["value"]).value)
    except (ValueError, KeyError):
        return None


def _is_resource(value: Any) -> bool:
    return str(value.type).startswith("!stream.resource")


def _span(offset: Any, length: Any) -> tuple[int, int]:
    """A byte range [start, end) from SSA offset and length; unknown parts widen it."""
    start, size = _constant(offset), _constant(length)
    if start is None:
        return 0, END
    return start, start + size if size is not None else END


# A location is (root, start, end): `root` is the value that owns the bytes (an allocation, an
# import, an untied async result). Reaching definitions: per root, segments (start, end, write id).
Location = tuple[Any, int, int]
State = dict[Any, frozenset[tuple[int, int, int]]]


class _FunctionWalk:
    """Reaching definitions of byte ranges over one function's blocks, then its reads and exports."""

    def __init__(self, func: Any) -> None:
        self.func = func
        self.name = str(func.attributes["sym_name"]).strip('"')
        self.blocks = list(func.regions[0].blocks)
        self.entry_args = list(self.blocks[0].arguments)
        self.incoming: dict[Any, list[Any]] = {}  # block argument -> values its predecessors pass
        self.predecessors: dict[Any, list[Any]] = {block: [] for block in self.blocks}
        self.captured: dict[Any, tuple[Any, int]] = {}  # region argument -> (captured value, slot)
        self.tied: dict[Any, Any] = {}  # async result -> the operand it updates in place
        self.write_ids: dict[tuple[Any, ...], int] = {}
        self.writes: dict[int, Write] = {}
        self.reads: dict[tuple[Any, ...], Read] = {}
        self.imports: dict[tuple[Any, ...], Import] = {}
        self.exports: dict[int, Export] = {}
        self.copies: dict[tuple[Any, ...], PlannedCopy] = {}
        self._link_blocks()

    # -- structure -------------------------------------------------------------------
    def _link_blocks(self) -> None:
        for block in self.blocks:
            terminator = op_of(list(block.operations)[-1])
            successors = list(terminator.successors)
            for successor in successors:
                self.predecessors.setdefault(successor, []).append(block)
            for successor, values in zip(successors, _successor_operands(terminator), strict=False):
                for argument, value in zip(successor.arguments, values, strict=False):
                    self._merge(argument, value)

    def _merge(self, value: Any, incoming: Any) -> None:
        values = self.incoming.setdefault(value, [])
        if incoming not in values:
            values.append(incoming)

    def locate(self, value: Any, start: int = 0, end: int = END, seen: frozenset[Any] = frozenset()) -> list[Location]:
        """Where the bytes of `value` live: (root, start, end) per value it may be (block arguments merge)."""
        from iree.compiler import ir

        if value in seen:
            return []
        seen = seen | {value}
        if value in self.captured:
            return self.locate(self.captured[value][0], start, end, seen)
        if value in self.tied:
            return self.locate(self.tied[value], start, end, seen)
        if value in self.incoming:  # a block argument, or the result of structured control flow
            return [loc for v in self.incoming[value] for loc in self.locate(v, start, end, seen)]
        if isinstance(value.owner, ir.Block):
            return [(value, start, end)]
        op = op_of(value.owner)
        if op.name == "stream.timepoint.await":
            position = list(op.results).index(value)
            return self.locate(op.opview.resource_operands[position], start, end, seen)
        if op.name == "stream.resource.subview":
            view = op.opview
            base, base_end = _span(view.source_offset, view.result_size)
            return self.locate(view.source, base + start, base + end if end < END else base_end, seen)
        if op.name in ("stream.async.execute", "stream.async.concurrent"):
            body = op.regions[0].blocks[0]
            yielded = list(op_of(list(body.operations)[-1]).operands)
            position = list(op.results).index(value)
            if position < len(yielded):
                return self.locate(yielded[position], start, end, seen)
        return [(value, start, end)]

    # -- the walk ---------------------------------------------------------------------
    def run(self) -> FunctionFlow:
        states_out: dict[Any, State] = {}
        for _ in range(len(self.blocks) + 2):  # an acyclic graph settles in one pass; loops in a few
            changed = False
            for index, block in enumerate(self.blocks):
                state = _join([states_out[p] for p in self.predecessors.get(block, []) if p in states_out])
                for position, op in enumerate(block.operations):
                    self._visit(op_of(op), state, (index, position), None)
                if states_out.get(block) != state:
                    states_out[block] = state
                    changed = True
            if not changed:
                break
        tensor_arguments = tuple(
            i for i, a in enumerate(self.entry_args) if str(a.type) in ("!hal.buffer_view", "!hal.buffer")
        )
        return FunctionFlow(
            self.name,
            tensor_arguments,
            tuple(self.writes[i] for i in range(len(self.writes))),
            tuple(self.reads.values()),
            tuple(self.imports.values()),
            tuple(self.exports[i] for i in sorted(self.exports)),
            tuple(self.copies.values()),
        )

    def _visit(self, op: Any, state: State, key: tuple[Any, ...], device: str | None) -> None:
        name = op.name
        if name == "stream.cmd.execute" or name == "stream.async.execute":
            self._enter(op, state, key, device_of(op.attributes["affinity"]) if "affinity" in op.attributes else None)
        elif name in ("stream.cmd.concurrent", "stream.cmd.serial", "stream.async.concurrent"):
            self._enter(op, state, key, device)
        elif name == "stream.tensor.import":
            self._import(op, state, key)
        elif name == "stream.tensor.export":
            self._export(op, state, key)
        elif name == "util.return":
            for index, value in enumerate(op.operands):
                if value in self.entry_args:
                    argument = self.entry_args.index(value)
                    self.exports[index] = Export(index, None, 0, frozenset(), argument)
        elif name == "stream.cmd.dispatch":
            self._dispatch(op.opview, state, key, device)
        elif name == "stream.cmd.copy":
            view = op.opview
            self._copy(state, key, device, name, view.source, _span(view.source_offset, view.length),
                        view.target, _span(view.target_offset, view.length), view.length)  # fmt: skip
        elif name == "stream.cmd.fill":
            view = op.opview
            self._write(state, key, device, name, view.target, _span(view.target_offset, view.target_length),
                        size=view.target_length)  # fmt: skip
        elif name.startswith("stream.async."):
            self._async(op, state, key, device)
        elif op.regions and not name.startswith("stream."):
            self._structured(op, state, key, device)
        elif name.startswith("stream.cmd.") and name not in MARKERS:
            # A command this walk does not know (call, collective, parameter I/O): it may read and
            # write every resource it is given, so it keeps their old bytes and adds its own.
            for index, value in enumerate(v for v in op.operands if _is_resource(v)):
                self._write(state, (*key, index), device, name, value, (0, END), keep=True)

    def _enter(self, op: Any, state: State, key: tuple[Any, ...], device: str | None) -> None:
        body = op.regions[0].blocks[0]
        if op.name in ("stream.cmd.execute", "stream.async.execute", "stream.async.concurrent"):
            # The region's arguments are the captured resources, in order: the binding slots of its commands
            # (a concurrent region inside an execute keeps the slots of the execute's own captures).
            captured = list(op.opview.resource_operands)
            for slot, (argument, value) in enumerate(zip(body.arguments, captured, strict=False)):
                outer = self.captured.get(value)
                self.captured[argument] = (value, outer[1] if outer is not None else slot)
        for position, inner in enumerate(body.operations):
            self._visit(op_of(inner), state, (*key, position), device)

    def _structured(self, op: Any, state: State, key: tuple[Any, ...], device: str | None) -> None:
        """Structured control flow (`scf.if`, `scf.for`, ...): each region from the same state, then joined.

        An `scf.if` with both branches leaves the join of its branches; any other
        op may also run its regions zero times, so its entry state joins in. The
        op's results may be what any region yields. Loop-carried values are not
        followed around the loop (they count as their own allocation).
        """
        ends: list[State] = []
        for r, region in enumerate(op.regions):
            for b, block in enumerate(region.blocks):
                branch = dict(state)
                operations = list(block.operations)
                for position, inner in enumerate(operations):
                    self._visit(op_of(inner), branch, (*key, r, b, position), device)
                ends.append(branch)
                if operations:
                    for result, value in zip(op.results, op_of(operations[-1]).operands, strict=False):
                        self._merge(result, value)
        both = op.name == "scf.if" and all(region.blocks for region in op.regions)
        joined = _join(ends if both else [state, *ends])
        state.clear()
        state.update(joined)

    def _slot(self, value: Any) -> int | None:
        return self.captured[value][1] if value in self.captured else None

    # -- events -----------------------------------------------------------------------
    def _new_write(self, key: tuple[Any, ...], write: Write) -> int:
        if key not in self.write_ids:
            self.write_ids[key] = len(self.write_ids)
        wid = self.write_ids[key]
        self.writes[wid] = Write(
            wid, write.device, write.op, write.bytes, write.derived_from, write.copy, write.bytes_expr
        )
        return wid

    def _reaching(self, state: State, value: Any, span: tuple[int, int]) -> frozenset[int]:
        found: set[int] = set()
        for root, start, end in self.locate(value, *span):
            found.update(w for s, e, w in state.get(root, ()) if s < end and start < e)
        return frozenset(found)

    def _read(self, state: State, key: tuple[Any, ...], device: str | None, op: str, value: Any,
              span: tuple[int, int], copy: PlannedCopy | None = None, size: Any = None) -> frozenset[int]:  # fmt: skip
        writes = self._reaching(state, value, span)
        self.reads[key] = Read(device, op, _length(span), writes, copy, _dynamic(span, size))
        return writes

    def _write(self, state: State, key: tuple[Any, ...], device: str | None, op: str, value: Any,
               span: tuple[int, int], derived: frozenset[int] = frozenset(), keep: bool = False,
               copy: PlannedCopy | None = None, size: Any = None) -> int:  # fmt: skip
        """Record a write of `span` of `value`; `keep` (an in-place update) carries the old bytes on."""
        if keep:
            derived = derived | self._reaching(state, value, span)
        wid = self._new_write(key, Write(0, device, op, _length(span), derived, copy, _dynamic(span, size)))
        locations = self.locate(value, *span)
        for root, start, end in locations:
            segments = state.get(root, frozenset())
            if len(locations) == 1:  # one place for certain: the old bytes there are gone
                segments = frozenset(_cut(segments, start, end))
            state[root] = segments | {(start, end, wid)}
        return wid

    def _copy(self, state: State, key: tuple[Any, ...], device: str | None, op: str, source: Any,
              source_span: tuple[int, int], target: Any, target_span: tuple[int, int],
              length: Any = None) -> None:  # fmt: skip
        expr = _dynamic(source_span, length)
        copy = PlannedCopy(device, _length(source_span), self._slot(source), self._slot(target), expr)
        self.copies[key] = copy
        derived = self._read(state, (*key, "source"), device, op, source, source_span, copy, length)
        self._write(state, key, device, op, target, target_span, derived, copy=copy, size=length)

    def _dispatch(self, view: Any, state: State, key: tuple[Any, ...], device: str | None) -> None:
        from iree.compiler import ir

        entry = str(view.entry_points).strip("[]").split("::")[-1].lstrip("@")
        bindings = list(
            zip(view.resources, view.resource_offsets, view.resource_lengths, view.resource_accesses, strict=True)
        )
        # All reads first: an `rw` binding reads the bytes from before this dispatch.
        old: dict[int, frozenset[int]] = {}
        for index, (value, offset, length, access) in enumerate(bindings):
            if int(ir.IntegerAttr(access).value) & READ:
                old[index] = self._read(state, (*key, index), device, f"stream.cmd.dispatch {entry}", value,
                                        _span(offset, length), size=length)  # fmt: skip
        for index, (value, offset, length, access) in enumerate(bindings):
            if int(ir.IntegerAttr(access).value) & WRITE:
                self._write(state, (*key, index), device, f"stream.cmd.dispatch {entry}", value,
                            _span(offset, length), old.get(index, frozenset()), size=length)  # fmt: skip

    def _async(self, op: Any, state: State, key: tuple[Any, ...], device: str | None) -> None:
        """A `stream.async.*` op: it reads its resource operands and writes its resource results.

        Copies (transfer, clone, slice, copy, update) carry their source's bytes
        on; copy, update and fill write a range of their target in place; a
        dispatch's tied results keep the old bytes they update; an alloca
        writes nothing (its memory is uninitialized).
        """
        name, view = op.name, op.opview
        for attr in ("affinity", "execution_affinity", "target_affinity"):
            if attr in op.attributes and device_of(op.attributes[attr]):
                device = device_of(op.attributes[attr])
                break
        results = [r for r in op.results if _is_resource(r)]
        if name == "stream.async.alloca" or not results:
            return
        if name in ("stream.async.transfer", "stream.async.clone", "stream.async.slice"):
            span = _span_between(view, "source_offset", "source_end", "source_size")
            size = _async_length(view, "source_offset", "source_end", "source_size")
            copy = PlannedCopy(device, _length(span), None, None, _dynamic(span, size))
            self.copies[key] = copy
            carried = self._read(state, (*key, "source"), device, name, view.source, span, copy, size)
            self._write(state, key, device, name, results[0], (0, _length(span) or END), carried, copy=copy,
                        size=size)  # fmt: skip
        elif name in ("stream.async.copy", "stream.async.update", "stream.async.fill"):
            target_span = _span_between(view, "target_offset", "target_end", "target_size")
            moved: frozenset[int] = frozenset()
            copy = None
            if name != "stream.async.fill":
                source = view.source if name == "stream.async.copy" else view.update
                span = (
                    _span_between(view, "source_offset", "source_end", "source_size")
                    if name == "stream.async.copy"
                    else _span_between(view, None, None, "update_size")
                )
                size = (
                    _async_length(view, "source_offset", "source_end", "source_size")
                    if name == "stream.async.copy"
                    else getattr(view, "update_size", None)
                )
                copy = PlannedCopy(device, _length(span), None, None, _dynamic(span, size))
                self.copies[key] = copy
                moved = self._read(state, (*key, "source"), device, name, source, span, copy, size)
            self.tied[results[0]] = view.target
            self._write(state, key, device, name, view.target, target_span, moved, copy=copy)
        else:
            tied = _tied_operands(op)
            for index, value in enumerate(v for v in op.operands if _is_resource(v)):
                self._read(state, (*key, "in", index), device, name, value, (0, END))
            for index, result in enumerate(results):
                if index in tied:
                    self.tied[result] = tied[index]
                    self._write(state, (*key, "out", index), device, name, tied[index], (0, END), keep=True)
                else:
                    self._write(state, (*key, "out", index), device, name, result, (0, END))

    def _import(self, op: Any, state: State, key: tuple[Any, ...]) -> None:
        view = op.opview
        device = device_of(op.attributes["affinity"]) if "affinity" in op.attributes else None
        source = view.source
        wid = self._write(state, key, device, "stream.tensor.import", op.results[0], (0, END))
        if source in self.entry_args:
            argument = self.entry_args.index(source)
            self.imports[key] = Import(argument, device, _constant(view.result_size) or 0, wid)

    def _export(self, op: Any, state: State, key: tuple[Any, ...]) -> None:
        view = op.opview
        device = device_of(op.attributes["affinity"]) if "affinity" in op.attributes else None
        size = _constant(view.source_size) or 0
        span = (0, size or END)
        writes = self._read(state, key, device, "stream.tensor.export", view.source, span, size=view.source_size)
        for use in op.results[0].uses:
            owner = op_of(use.owner)
            if owner.name == "util.return":
                self.exports[use.operand_number] = Export(
                    use.operand_number, device, size, writes, bytes_expr=_dynamic(span, view.source_size)
                )


def _successor_operands(terminator: Any) -> list[list[Any]]:
    """The values a branch passes to each successor's block arguments."""
    operands = list(terminator.operands)
    if terminator.name == "cf.br":
        return [operands]
    if terminator.name == "cf.cond_br":
        view = terminator.opview
        return [list(view.trueDestOperands), list(view.falseDestOperands)]
    return [[] for _ in terminator.successors]  # unknown branches pass nothing this walk can follow


def _tied_operands(op: Any) -> dict[int, Any]:
    """Result index -> the resource operand it updates in place (`tied_operands`, -1 = untied)."""
    from iree.compiler import ir

    if "tied_operands" not in op.attributes:
        return {}
    ties = [int(ir.IntegerAttr(a).value) for a in ir.ArrayAttr(op.attributes["tied_operands"])]
    operands = list(op.operands)
    return {index: operands[tie] for index, tie in enumerate(ties) if 0 <= tie < len(operands)}


def _length(span: tuple[int, int]) -> int:
    """Bytes in a range, 0 where the IR does not give its end as a constant."""
    start, end = span
    return end - start if end < END else 0


def _dynamic(span: tuple[int, int], size: Any) -> SizeExpr | None:
    """The formula of a length the IR gives only at run time (None for constant or unknown lengths)."""
    return size_expr(size) if size is not None and _length(span) == 0 else None


def _async_length(view: Any, offset: str, end: str, size: str) -> Any:
    """The SSA value of an async op's length: its range's end where the range starts at 0, else its whole size."""
    stop = getattr(view, end, None)
    if stop is not None and _constant(getattr(view, offset, None)) == 0:
        return stop
    return getattr(view, size, None)


def _span_between(view: Any, offset: str | None, end: str | None, size: str) -> tuple[int, int]:
    """An async op's byte range from its offset/end operands, else its whole size."""
    start = _constant(getattr(view, offset)) if offset and hasattr(view, offset) else 0
    stop = _constant(getattr(view, end)) if end and hasattr(view, end) else None
    if start is not None and stop is not None:
        return start, stop
    whole = _constant(getattr(view, size))
    return (0, whole) if whole is not None else (0, END)


def _cut(segments: frozenset[tuple[int, int, int]], start: int, end: int) -> Iterator[tuple[int, int, int]]:
    """The segments with [start, end) removed (overwritten)."""
    for s, e, w in segments:
        if e <= start or end <= s:
            yield s, e, w
            continue
        if s < start:
            yield s, start, w
        if end < e:
            yield end, e, w


def _join(states: list[State]) -> State:
    joined: State = {}
    for state in states:
        for root, segments in state.items():
            joined[root] = joined.get(root, frozenset()) | segments
    return joined
