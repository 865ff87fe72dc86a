"""Every kernel named by what it came from: the ONNX nodes or source lines of its ops, and time by layer.

IREE names a kernel for its executable (`main_graph$async_dispatch_10_conv_...`);
its user thinks in layers (`/layers/conv1/Conv`, `model.py:42`). The link is in
the compiler's own output: the executable sources that `compile.py` dumps beside
every module keep each op's MLIR location when printed with
`--mlir-print-debuginfo`, and `ir_count.py` reads, for each dispatch, the locations of
its compute ops (its loads and stores, for a copy). This module turns those
locations into `SourceOp`s: an ONNX node's name and op type (gputop's importer
gives every op its node's name as location), or `file:line:col` in the user's
`.mlir` and the op written there, with any name or Python line (torch and
iree-turbine exports) its location carries.

Why the dumped sources and not another way: they are the IR of each dispatch
as the compiler formed it, with every fused op and its location, and gputop
already keeps them per module in the compile cache (`KEY.sources/`, their
locations in `KEY.work.json`); `--iree-hal-executable-debug-level` puts
locations into some targets' binaries only, not the CPU's embedded ELF, and
the dispatch regions of an earlier phase are before the last fusions. A
`.vmfb` compiled elsewhere carries none of this unless its sources are put
beside it; then one line says how to compile it so that they are.

Time by layer (`layers`) groups kernels by the set of ops they were formed
from: a kernel formed from `conv1`, `bn1` and `relu` is shown once as their
group, never split among them by a guess, so the rows add up to the kernel
table; each group is named by `layer_names.py`, the one rule every face uses.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, replace
from pathlib import Path

from gputop.core.profiling.work.dispatch_work import DispatchWork, ModuleWork, kernel_key
from gputop.core.profiling.work.layer_names import COPY, is_copy, layer_name
from gputop.core.records.profile import KernelTiming, LayerTime, SourceOp

__all__ = [
    "UNMAPPED",
    "SourceOpMap",
    "SourceOrigin",
    "display_name",
    "layer_times",
    "parse_location",
    "read_sites",
    "source_op_map",
    "with_source_ops",
]

UNMAPPED = "(no source ops)"
# A fused location's metadata (`fused<"CSE">[...]`) is not a location.
_FUSED_METADATA = re.compile(r"fused<[^>]*>")
_QUOTED_AT = re.compile(r'"((?:[^"\\]|\\.)*)"(?::(\d+)(?::(\d+))?)?')
_LIBRARY = ("site-packages", "dist-packages", "<frozen", "/torch/", "/iree/turbine/", "<eval_with_key>")
_ALIAS = re.compile(r"^(#loc\d*)\s*=\s*(loc\(.*\))\s*$", re.MULTILINE)
_ONNX_OP = re.compile(r'torch\.operator "onnx\.(\w+)"')
_SITE = re.compile(r'flow\.dispatch @[^:\s]+::@"?([^\s("]+)"?.*?(loc\(.*\))\s*$')
_ONNX_NAME_OP = re.compile(r"([A-Z][A-Za-z0-9]*)(?:_\d+)?")
_OP_AT = re.compile(r'"?([A-Za-z_][\w]*\.[\w.]+)')


@dataclass(frozen=True)
class SourceOrigin:
    """What a module was compiled from: enough to name its ops in the user's words."""

    kind: str  # onnx | mlir | vmfb
    display: str  # the user's file as they named it: model.onnx, model.mlir, mlp.mlir for demo:mlp
    path: Path | None = None  # the user's MLIR (for the op written at a line), or an ONNX model's imported MLIR
    text: str | None = None  # a built-in demo's MLIR, which has no file
    imported_name: str | None = None  # an ONNX model's imported MLIR, as `loc` names it (model.mlir)


@dataclass(frozen=True)
class ParsedLocation:
    """The leaves of one MLIR location: names it carries and the file positions, innermost first."""

    names: tuple[str, ...]
    files: tuple[tuple[str, int, int | None], ...]  # where ops are written (callees first)
    callers: tuple[tuple[str, int, int | None], ...] = ()  # `at` positions of call sites: an inlined function


def parse_location(text: str) -> ParsedLocation:
    """`loc("conv1")`, `loc("m.mlir":7:9)`, `loc(callsite("a.mlir":7:9 at ...))`, fused, and names over files.

    In `callsite(callee at caller)` the callee (where the op is written) comes first; a name location
    (`"name"(child)`) gives its name and its child's position.
    """
    names: list[str] = []
    files: list[tuple[str, int, int | None]] = []
    callers: list[tuple[str, int, int | None]] = []
    text = _FUSED_METADATA.sub("fused", text)
    for match in _QUOTED_AT.finditer(text):
        value = match.group(1).replace('\\"', '"')
        if match.group(2) is not None:
            column = int(match.group(3)) if match.group(3) is not None else None
            at_call = text[: match.start()].endswith(" at ")
            (callers if at_call else files).append((value, int(match.group(2)), column))
        elif value:
            names.append(value)
    return ParsedLocation(tuple(dict.fromkeys(names)), tuple(dict.fromkeys(files)), tuple(dict.fromkeys(callers)))


class SourceOpMap:
    """Maps a dispatch's op locations to `SourceOp`s for one module, and says why where it cannot."""

    def __init__(
        self, origin: SourceOrigin | None, reason: str | None = None, sites: dict[str, list[str]] | None = None
    ) -> None:
        self._origin = origin
        self._reason = reason
        self._sites = {kernel_key(export): locs for export, locs in (sites or {}).items()}
        lines = _source_lines(origin) if origin is not None else []
        # An ONNX model's nodes, by name: (graph order, op type, the imported MLIR's line and column).
        self._nodes: dict[str, tuple[int, str, int, int]] = {}
        self._lines: list[str] = []
        if origin is not None and origin.kind == "onnx":
            self._nodes = _imported_nodes(lines)
        else:
            self._lines = lines

    @property
    def reason(self) -> str | None:
        """Why no kernel of this module has source ops (a `.vmfb` without sources), else None."""
        return self._reason

    def ops_for(self, work: DispatchWork | None) -> tuple[tuple[SourceOp, ...] | None, str | None]:
        """The source ops of one dispatch, in graph or line order; None with the reason where there are none."""
        if self._reason is not None:
            return None, self._reason
        if work is None or work.source != "ir":
            return None, "no executable source for this kernel (its work was read from its name)"
        found: dict[tuple[str | None, str | None], tuple[tuple[int, int, int], SourceOp]] = {}
        # Its executable's own ops, then every site that dispatches it (one kernel may run for several layers).
        sites = [("dispatch", location) for location in self._sites.get(kernel_key(work.name), [])]
        for written, location in [*work.locs, *sites]:
            for order, op in self._ops_at(written, parse_location(location)):
                key = (op.name, op.loc)  # a site names the op its executable's body names (the body's first)
                if key not in found:
                    found[key] = (order, op)
        if not found:
            if any("unknown" in location for _, location in work.locs) or not work.locs:
                return None, "the compiler kept no location for its ops"
            return None, "its ops' locations name no node or line of the model (sources dumped without debug info?)"
        return tuple(op for _, op in sorted(found.values(), key=lambda pair: pair[0])), None

    def _ops_at(self, written: str, parsed: ParsedLocation) -> list[tuple[tuple[int, int, int], SourceOp]]:
        origin = self._origin
        if origin is not None and origin.kind == "onnx":
            ops = []
            for name in parsed.names:
                node = self._nodes.get(name)
                if node is not None:
                    index, op_type, row, col = node
                    ops.append(((index, 0, 0), SourceOp(name, op_type, f"{origin.imported_name}:{row}:{col}")))
            return ops
        position = self._user_position(parsed)
        label = parsed.names[0] if parsed.names else None
        if label is not None and (named := _op_type_in_name(label)) is not None:
            written = named  # torch's exporter ends a node's name with its op type: what the node was
        if position is None and label is not None:
            position = self._named_line(label)  # `loc("fc1")` alone keeps no position: its line in the file does
        if position is None:
            return [((1 << 30, 0, 0), SourceOp(label, written, None))] if label else []
        file, line, column = position
        if written.startswith(("arith.", "math.")) and file.endswith(".mlir"):
            return []  # the body of a linalg op written by hand: that op's own line names it
        loc = f"{file}:{line}" + (f":{column}" if column is not None else "")
        op = self._op_written_at(file, line, column) or written
        return [((0 if file == self._display else 1, line, column or 0), SourceOp(label, op, loc))]

    @property
    def _display(self) -> str | None:
        return self._origin.display if self._origin is not None else None

    def _user_position(self, parsed: ParsedLocation) -> tuple[str, int, int | None] | None:
        """The first position in the user's own code: their `.mlir`, else a Python line outside libraries.

        The compiler saw the user's file under the path it was given (or, for a demo, a copy of its
        text): any `.mlir` position is in the file that was compiled, named as the user names it.
        """
        compiled_here = self._origin is not None and self._origin.kind == "mlir"
        for file, line, column in parsed.files:
            if file.endswith(".mlir") and not _is_dump(file):
                return (self._display if compiled_here and self._display else Path(file).name), line, column
        for file, line, _column in (*parsed.files, *parsed.callers):  # a Python caller may be the user's line
            if not file.endswith(".mlir") and not _is_dump(file) and not any(part in file for part in _LIBRARY):
                return Path(file).name, line, None  # a Python line: file.py:42
        return None

    def _named_line(self, name: str) -> tuple[str, int, int | None] | None:
        """Where the user's `.mlir` writes the one op located `loc("name")`: its line, and the op's column."""
        if self._origin is None or self._origin.kind != "mlir":
            return None
        marker = f'loc("{name}")'
        lines = [number for number, text in enumerate(self._lines, start=1) if marker in text]
        if len(lines) != 1:
            return None  # a name given to several ops, or none: no one line is its
        match = _OP_AT.search(self._lines[lines[0] - 1].split("=", 1)[-1])
        if match is None:
            return None
        offset = len(self._lines[lines[0] - 1]) - len(self._lines[lines[0] - 1].split("=", 1)[-1])
        return self._origin.display, lines[0], offset + match.start() + 1

    def _op_written_at(self, file: str, line: int, column: int | None) -> str | None:
        """The op at `line`:`column` of the user's `.mlir` (`linalg.matmul`), read from its text."""
        if file != self._display or not 1 <= line <= len(self._lines):
            return None
        text = self._lines[line - 1][(column or 1) - 1 :]
        match = _OP_AT.match(text.lstrip())
        return match.group(1) if match else None


def source_op_map(origin: SourceOrigin, work: ModuleWork, sites: Path | None = None) -> SourceOpMap:
    """The map for a module compiled from `origin` whose work (and ops' locations) is `work`, with the
    dispatch sites `compile.py` kept beside it (`KEY.sites.mlir`), where there are."""
    if work.reason:
        return SourceOpMap(None, _no_sources_reason(origin, work))
    if not work.with_locs:
        return SourceOpMap(None, f"{work.source}: counted without its ops' locations (remove it to count again)")
    return SourceOpMap(origin, sites=read_sites(sites) if sites is not None else None)


def read_sites(path: Path) -> dict[str, list[str]]:
    """Each export's dispatch sites' locations, from the lines `flow.dispatch @exe::@export(...) ... loc(...)`."""
    sites: dict[str, list[str]] = {}
    with contextlib.suppress(OSError, UnicodeDecodeError):
        for line in path.read_text(encoding="utf-8").splitlines():
            match = _SITE.search(line)
            if match is not None:
                sites.setdefault(match.group(1), []).append(match.group(2))
    return sites


def _no_sources_reason(origin: SourceOrigin, work: ModuleWork) -> str:
    """One line: this module carries no map from its kernels to the model, and how to compile one that does."""
    if origin.kind != "vmfb":
        return f"no executable sources to read the kernels' source ops from ({work.reason})"
    stem = Path(origin.display).stem
    return (
        f"{origin.display} carries no map from its kernels to the model's ops: run the .mlir or .onnx it came from, "
        f"or compile it with --iree-hal-dump-executable-sources-to={stem}.sources --mlir-print-debuginfo "
        "and keep that folder beside it"
    )


def _op_type_in_name(name: str) -> str | None:
    """`Conv` for `/layer1/layer1.0/conv1/Conv` (`Relu` for `.../relu_1/Relu`): an ONNX node's name as torch's
    exporter writes it, read where the model itself is not at hand (a `.vmfb` with its sources)."""
    if "/" not in name:
        return None
    last = name.rstrip("/").rsplit("/", 1)[-1]
    match = _ONNX_NAME_OP.fullmatch(last)
    return match.group(1) if match else None


def _is_dump(file: str) -> bool:
    """A location in a dumped source itself (sources dumped without debug info carry only their own lines;
    parsed from a string, `-`)."""
    return file in ("-", "") or ".sources" in file or Path(file).name.startswith("module_")


def _source_lines(origin: SourceOrigin) -> list[str]:
    """The origin's MLIR as lines, up to its resource blobs (an imported model's weights, megabytes of hex);
    none where it cannot be read (a file gone since the compile costs only the op names)."""
    text = origin.text
    if text is None and origin.path is not None:
        lines: list[str] = []
        with contextlib.suppress(OSError, UnicodeDecodeError), origin.path.open(encoding="utf-8") as file:
            for line in file:
                if line.startswith("{-#"):
                    break
                lines.append(line.rstrip("\n"))
        return lines
    return (text or "").splitlines()


def _imported_nodes(lines: list[str]) -> dict[str, tuple[int, str, int, int]]:
    """Each ONNX node of gputop's imported MLIR: name -> (graph order, op type, line, column of its op)."""
    aliases = dict(_ALIAS.findall("\n".join(line for line in lines if line.startswith("#loc"))))
    nodes: dict[str, tuple[int, str, int, int]] = {}
    for number, line in enumerate(lines, start=1):
        match = _ONNX_OP.search(line)
        if match is None or match.group(1) == "Constant":
            continue
        trailing = line.rstrip().rsplit("loc(", 1)
        if len(trailing) != 2:
            continue
        loc = "loc(" + trailing[1]
        alias = re.fullmatch(r"loc\((#loc\d*)\)", loc)
        if alias is not None:
            loc = aliases.get(alias.group(1), loc)
        for name in parse_location(loc).names:
            nodes.setdefault(name, (len(nodes), match.group(1), number, match.start() + 1))
    return nodes


def display_name(op: SourceOp) -> str:
    """How a source op is named in one cell: its name, else its line, else its op."""
    return op.name or op.loc or op.op


def with_source_ops(kernel: KernelTiming, ops: tuple[SourceOp, ...] | None, reason: str | None) -> KernelTiming:
    return replace(kernel, source_ops=ops, source_ops_reason=None if ops else reason)


def layer_times(kernels: tuple[KernelTiming, ...]) -> tuple[LayerTime, ...]:
    """The kernels' time per call grouped by the source ops they were formed from, largest first.

    A kernel formed from several ops is one row for the group; a kernel that only copies data for ops (a
    convolution's padding) is a row of its own, named as a copy, not a second row of the convolution;
    kernels without source ops are one row, `UNMAPPED`, so the rows add up to the kernel table.
    """
    groups: dict[tuple[tuple[str, ...], bool], LayerTime] = {}
    for kernel in kernels:
        ops = kernel.source_ops or ()
        copy = bool(ops) and is_copy(kernel.work)
        key = (tuple(display_name(op) for op in ops) or (UNMAPPED,), copy)
        row = groups.get(key)
        if row is None:
            op = COPY if copy else " + ".join(dict.fromkeys(o.op for o in ops))
            label = layer_name(ops, copy=copy) or UNMAPPED
            row = LayerTime(" + ".join(key[0]), op, (), 0.0, 0.0, label, ops, copy)
        groups[key] = replace(
            row,
            kernels=(*row.kernels, kernel.name),
            ms_per_call=row.ms_per_call + kernel.avg_us * kernel.per_call / 1000.0,
            share=row.share + kernel.share,
        )
    return tuple(sorted(groups.values(), key=lambda row: row.ms_per_call, reverse=True))
