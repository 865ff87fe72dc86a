"""What an ONNX model needs before IREE sees it, and which ONNX node a failure belongs to.

IREE's importer takes most of ONNX, but what it does not take it reports as
compiler IR (`failed to legalize operation 'torch.operator'`), as a version
converter assertion, or as a Python traceback. A user thinks in the model's
terms: nodes, op types, opsets. This module reads the parsed `ModelProto` and
answers in those terms: whether the model keeps float64 (IREE demotes it to
float32 unless told otherwise), which nodes use a domain or an element type the
importer lacks (refused before importing, naming them), the repairs old exports
need (initializers that are not graph inputs, unnamed nodes), and, after a
failed compile, which node the compiler's output points at.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "F64_FLAG",
    "OnnxNode",
    "explain_failure",
    "failing_node",
    "interface",
    "interface_change",
    "keeps_f64",
    "name_nodes",
    "nodes_at",
    "random_ops",
    "refuse_unimportable",
    "repair_initializers",
    "uses_f64",
]

# IREE demotes f64 to f32 by default; models whose interface or weights are double keep it.
F64_FLAG = "--iree-input-demote-f64-to-f32=false"
IREE_VERSION = "3.13"
DEFAULT_DOMAINS = ("", "ai.onnx")
# Element types IREE 3.13's importer maps to MLIR (its ELEM_TYPE_TO_IR_TYPE_CB); others are refused up front.
IMPORTABLE_TYPES = frozenset(
    {
        "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "BOOL", "FLOAT16", "DOUBLE",
        "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ",
        "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "STRING", "UINT4", "INT4",
    }
)  # fmt: skip
_NODE_LOCATION = re.compile(r'loc\("(?P<name>[^"]+)"\)')
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_LOC_ALIAS = re.compile(r"^(?P<alias>#loc\d*)\s*=\s*(?P<loc>loc\(.*\))\s*$", re.MULTILINE)
_TRAILING_LOC = re.compile(r"loc\((?:[^()]|\([^()]*\))*\)\s*$")
_ONNX_OPERATOR = re.compile(r'(?:torch\.operator "|name = ")onnx\.(?P<op>[A-Za-z0-9_]+)"')


@dataclass(frozen=True)
class OnnxNode:
    """One node of the graph, as a user would name it."""

    name: str
    op_type: str
    domain: str
    opset: int

    def __str__(self) -> str:
        domain = f", domain {self.domain}" if self.domain not in DEFAULT_DOMAINS else ""
        return f"ONNX node {self.name!r} ({self.op_type}{domain}, opset {self.opset})"


def _type_name(elem_type: int) -> str:
    from onnx import TensorProto

    try:
        return str(TensorProto.DataType.Name(elem_type))
    except ValueError:
        return f"element type {elem_type}"


def opset_of(model: Any, domain: str) -> int:
    """The model's opset for `domain` (the default domain under either spelling)."""
    wanted = {"", "ai.onnx"} if domain in DEFAULT_DOMAINS else {domain}
    return next((int(o.version) for o in model.opset_import if o.domain in wanted), 0)


def name_nodes(model: Any) -> Any:
    """Give unnamed nodes a name, `{op_type}_{index}`: the name every later message uses (in place)."""
    taken = {node.name for node in model.graph.node if node.name}
    for index, node in enumerate(model.graph.node):
        if not node.name:
            name = f"{node.op_type}_{index}"
            while name in taken:
                name += "_"
            node.name = name
            taken.add(name)
    return model


def nodes(model: Any) -> Iterator[OnnxNode]:
    """The main graph's nodes, named as `name_nodes` names them."""
    for index, node in enumerate(model.graph.node):
        yield OnnxNode(node.name or f"{node.op_type}_{index}", node.op_type, node.domain, opset_of(model, node.domain))


def _value_types(model: Any) -> Iterator[tuple[str, int]]:
    """(what, element type) of the graph's inputs, outputs, initializers and inferred values."""
    graph = model.graph
    for kind, values in (("input", graph.input), ("output", graph.output), ("value", graph.value_info)):
        for value in values:
            if value.type.HasField("tensor_type"):
                yield f"{kind} {value.name!r}", value.type.tensor_type.elem_type
    for init in graph.initializer:
        yield f"initializer {init.name!r}", init.data_type
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("t"):
                yield f"node {node.name!r} attribute {attribute.name!r}", attribute.t.data_type
            if attribute.name == "to" and attribute.type == attribute.INT:
                yield f"node {node.name!r} ({node.op_type} to)", attribute.i


def interface(model: Any) -> dict[str, Any]:
    """The graph's inputs (initializer-backed ones are weights) and outputs: name, dims, NumPy dtype.

    A dim is an int, the name of a symbolic dimension, or None. The import child writes this for
    the model it imported, whose inputs an opset upgrade may have changed (Scan 8 -> 9 drops a
    batch axis), so the run makes and checks inputs against what was compiled.
    """
    from onnx import helper

    weights = {init.name for init in model.graph.initializer}

    def rows(values: Any) -> list[dict[str, Any]]:
        found = []
        for value in values:
            if value.name in weights or not value.type.HasField("tensor_type"):
                continue
            tensor = value.type.tensor_type
            dims = [
                int(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0 else (d.dim_param or None)
                for d in tensor.shape.dim
            ]
            dtype = str(helper.tensor_dtype_to_np_dtype(tensor.elem_type)) if tensor.elem_type else "unknown"
            found.append({"name": value.name, "dims": dims, "dtype": dtype})
        return found

    return {"opset": opset_of(model, ""), "inputs": rows(model.graph.input), "outputs": rows(model.graph.output)}


def interface_change(before: dict[str, Any], after: dict[str, Any]) -> str | None:
    """One line saying how an opset upgrade changed the graph's inputs, or None when it did not."""
    changed = []
    for old, new in zip(before["inputs"], after["inputs"], strict=False):
        if old["dims"] != new["dims"]:
            changed.append(f"{old['name']!r} {_dims(old['dims'])} -> {_dims(new['dims'])}")
    if len(before["inputs"]) != len(after["inputs"]):
        changed.append(f"{len(before['inputs'])} inputs -> {len(after['inputs'])}")
    if not changed:
        return None
    return (
        f"the ONNX opset upgrade from {before['opset']} to {after['opset']} changed the model's inputs: "
        + ", ".join(changed)
    )


def _dims(dims: list[Any]) -> str:
    return "x".join(str(d) if d is not None else "?" for d in dims) or "scalar"


def keeps_f64(model: Any) -> bool:
    """Whether the model's inputs, outputs or initializers are double: then IREE must keep f64."""
    from onnx import TensorProto

    graph = model.graph
    values = [*graph.input, *graph.output]
    if any(v.type.HasField("tensor_type") and v.type.tensor_type.elem_type == TensorProto.DOUBLE for v in values):
        return True
    return any(init.data_type == TensorProto.DOUBLE for init in graph.initializer)


def uses_f64(model: Any) -> bool:
    """Whether double appears anywhere (a Cast to double inside a float32 model, say)."""
    from onnx import TensorProto

    return any(t == TensorProto.DOUBLE for _, t in _value_types(model))


RANDOM_OPS = frozenset(
    {"Bernoulli", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial"}
)


def random_ops(model: Any) -> list[str]:
    """The op types of nodes that draw random numbers: their outputs cannot match a fixed reference."""
    return sorted({node.op_type for node in model.graph.node if node.op_type in RANDOM_OPS})


def refuse_unimportable(model: Any) -> str | None:
    """One line naming what IREE's importer cannot take (a foreign domain, an element type), else None."""
    local_functions = {(f.domain, f.name) for f in model.functions}
    foreign = [
        node for proto, node in zip(model.graph.node, nodes(model), strict=True)
        if node.domain not in DEFAULT_DOMAINS and (proto.domain, proto.op_type) not in local_functions
    ]  # fmt: skip
    if foreign:
        domains = sorted({node.domain for node in foreign})
        ops = sorted({node.op_type for node in foreign})
        more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
        return (
            f"{foreign[0]}{more}: not supported by IREE {IREE_VERSION}'s ONNX import "
            f"(domain {', '.join(domains)} is not imported; ops {', '.join(ops)})"
        )
    unknown = [(what, _type_name(t)) for what, t in _value_types(model) if t and _type_name(t) not in IMPORTABLE_TYPES]
    if unknown:
        what, type_name = unknown[0]
        more = f" and {len(unknown) - 1} more" if len(unknown) > 1 else ""
        return f"{what}{more}: element type {type_name} is not supported by IREE {IREE_VERSION}'s ONNX import"
    return None


def repair_initializers(model: Any) -> bool:
    """Old exports (IR < 4) must list every initializer as a graph input; add those missing (in place).

    The ONNX checker refuses such models (`in initializer but not in graph input`) although
    onnxruntime runs them; listed as inputs, the importer takes them as the weights they are.
    """
    from onnx import helper

    if model.ir_version >= 4:
        return False
    declared = {value.name for value in model.graph.input}
    missing = [init for init in model.graph.initializer if init.name not in declared]
    for init in missing:
        model.graph.input.append(helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
    return bool(missing)


def failing_node(model: Any, output: str, *, guess: bool = True) -> OnnxNode | None:
    """The node the compiler's output blames: the error's location, else a node it warned about,
    else the first node whose op type is an ONNX operator left unconverted; with `guess`, else
    the graph's one computing node."""
    by_name = {node.name: node for node in nodes(model)}
    lines = output.splitlines()
    errors = [line for line in lines if "error:" in line]
    for candidates in (errors, lines):
        for line in candidates:
            for match in _NODE_LOCATION.finditer(line):
                if match.group("name") in by_name:
                    return by_name[match.group("name")]
    for match in _ONNX_OPERATOR.finditer(output):
        found = next((node for node in by_name.values() if node.op_type == match.group("op")), None)
        if found is not None:
            return found
    # The conversion left a constant without a location: in a graph of one computing node, it is that node's.
    computing = [node for node in by_name.values() if node.op_type != "Constant"]
    return computing[0] if guess and len(computing) == 1 else None


def _reason(model: Any, node: OnnxNode, output: str) -> str:
    """Why, in a few words: a known cause, the compiler's own remark on the node, or its first error."""
    proto = next((p for p in model.graph.node if p.name == node.name), None)
    constant = {init.name for init in model.graph.initializer} | {
        out for p in model.graph.node if p.op_type == "Constant" for out in p.output
    }
    runtime_axes = proto is not None and len(proto.input) > 1 and proto.input[1] and proto.input[1] not in constant
    if node.op_type.startswith("Reduce") and runtime_axes:
        return "axes given as a runtime input; make them an initializer or a Constant"
    if _is_unknown_operator(output, node):
        shapeless = _shapeless_input(model, proto, node, output)
        if shapeless is not None:
            return (
                f"the importer could not infer the shape of its input '{shapeless}' and typed it as rank 0 "
                "(as in TorchScript exports of nn.MultiheadAttention): re-export with "
                "torch.onnx.export(..., dynamo=True), or run onnx.shape_inference.infer_shapes on the model"
            )
        return "no conversion matched this node: its op, attributes or element types"
    remark = _remark_on(node, output)
    return remark or _first_error(output)


def _shapeless_input(model: Any, proto: Any, node: OnnxNode, output: str) -> str | None:
    """The input of `node` the importer typed as rank 0 (`!torch.vtensor<[],f32>`) for want of a shape,
    when the error shows one and the model (shapes inferred) has no shape for it; else None."""
    operands = [
        line.split(f'"onnx.{node.op_type}"', 1)[1].split("->", 1)[0]
        for line in output.splitlines()
        if f'loc("{node.name}")' in line and f'"onnx.{node.op_type}"' in line
    ]
    if proto is None or not any("!torch.vtensor<[]," in part for part in operands):
        return None
    try:
        import onnx

        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:
        inferred = model
    graph = inferred.graph
    known = {v.name: v for v in (*graph.value_info, *graph.input, *graph.output)}
    constants = {init.name for init in graph.initializer}
    for name in proto.input:
        if not name or name in constants:
            continue
        value = known.get(name)
        if value is None or not value.type.tensor_type.HasField("shape"):
            return str(name)
    return None


def _is_unknown_operator(output: str, node: OnnxNode) -> bool:
    return f'"onnx.{node.op_type}"' in output and "torch.operator" in output and "explicitly marked illegal" in output


def _remark_on(node: OnnxNode, output: str) -> str | None:
    marker = f'loc("{node.name}"): '
    for line in output.splitlines():
        if marker in line and ("warning:" in line or "error:" in line) and "see current operation" not in line:
            text = line.split(marker, 1)[1].strip()
            if not text.startswith("failed to legalize"):
                return _shorten(text)
    return None


def _first_error(output: str) -> str:
    line = next((line for line in output.splitlines() if "error:" in line), "")
    text = _NODE_LOCATION.sub("", line.split("error:", 1)[-1]).strip(" :")
    return _shorten(text.split(": %", 1)[0]) if text else "the compiler failed"


def _shorten(text: str, width: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def nodes_at(model: Any, source: str, line: int, column: int) -> tuple[OnnxNode | None, list[OnnxNode]]:
    """The ONNX node of the op at `line`:`column` of a dumped dispatch source, and every node of that source.

    Sources dumped by a compile with `--mlir-print-debuginfo` end each op with the location the
    importer gave it, the node's name (`loc("conv_1")`, fused or behind a `#loc3` alias). A multi-line
    op (one with a region, such as `linalg.generic`) carries it after its closing brace. IREE fuses
    several nodes into one dispatch; the second value lists them all, in the order the source names them.
    """
    by_name = {node.name: node for node in nodes(model)}
    aliases = {match.group("alias"): match.group("loc") for match in _LOC_ALIAS.finditer(source)}

    def named(loc: str, depth: int = 0) -> list[OnnxNode]:
        found = [by_name[name] for name in _QUOTED.findall(loc) if name in by_name]
        if depth < 4:  # aliases refer to aliases; a few levels is all MLIR prints
            for alias in re.findall(r"#loc\d*\b", loc):
                found += named(aliases.get(alias, ""), depth + 1)
        return found

    lines = source.splitlines()
    at: OnnxNode | None = None
    if 1 <= line <= len(lines):
        end = _op_end(lines, line - 1, max(column - 1, 0))
        trailing = _TRAILING_LOC.search(lines[end]) if end is not None else None
        found = named(trailing.group(0)) if trailing is not None else []
        at = found[0] if found else None
    held = list(dict.fromkeys(n for loc in re.findall(r"loc\((?:[^()]|\([^()]*\))*\)", source) for n in named(loc)))
    return at, held


def _op_end(lines: list[str], first: int, column: int) -> int | None:
    """The line on which the op starting at `first`:`column` ends: where its braces (regions,
    attribute dictionaries) close again. Braces inside quoted strings do not count."""
    depth = 0
    for index in range(first, len(lines)):
        text = _QUOTED.sub('""', lines[index][column:] if index == first else lines[index])
        depth += text.count("{") - text.count("}")
        if depth <= 0:
            return index
    return None


def explain_failure(model: Any, output: str) -> str | None:
    """`ONNX node 'X' (Op, opset N): ...` for a failed compile of an imported model, else None.

    Torch-dialect ops left in the output mean the ONNX conversion did not take the node (an
    import limitation); otherwise the node compiled into something the backend refused.
    """
    node = failing_node(model, output)
    if node is None:
        graph = re.search(r'loc\("graph:(?P<name>[^"]*)"\)', output)
        if graph is not None:
            name = graph.group("name")
            return f"ONNX graph {name!r}: not supported by IREE {IREE_VERSION}'s ONNX import ({_first_error(output)})"
        if "torch." in output and "failed to legalize" in output:
            kinds = sorted({node.op_type for node in nodes(model) if node.op_type != "Constant"})
            return (
                f"one of the ONNX nodes of op types {', '.join(kinds[:8])}: not supported by IREE {IREE_VERSION}'s "
                f"ONNX import ({_first_error(output)})"
            )
        return None
    if "torch." in output and ("failed to legalize" in output or "unhandled torch type" in output):
        return f"{node}: not supported by IREE {IREE_VERSION}'s ONNX import ({_reason(model, node, output)})"
    return f"{node}: IREE {IREE_VERSION} failed to compile it ({_first_error(output)})"
