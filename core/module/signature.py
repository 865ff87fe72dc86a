"""What a compiled function takes and returns, read from the module's reflection.

IREE records each exported function's source-level signature in its
reflection (`iree.abi.declaration`, e.g. `sync func @mlp(%input0:
tensor<256x1024xf32>) -> (%output0: tensor<256x256xf32>)`). gputop reads it to
make inputs the user did not give, to check the ones they did, and to refuse
async-ABI functions whose calls it could not time honestly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from gputop.core.errors import UsageError

__all__ = [
    "BUFFER_VIEW",
    "DTYPES",
    "REF_TYPES",
    "FunctionSignature",
    "TensorType",
    "parse_declaration",
    "parse_tensor_type",
    "signature_of",
]

DTYPES: dict[str, np.dtype] = {
    "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "i1": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "si8": np.dtype(np.int8),
    "si16": np.dtype(np.int16),
    "si32": np.dtype(np.int32),
    "si64": np.dtype(np.int64),
    "ui8": np.dtype(np.uint8),
    "ui16": np.dtype(np.uint16),
    "ui32": np.dtype(np.uint32),
    "ui64": np.dtype(np.uint64),
}
_TYPE = re.compile(
    r"tensor<(?P<body>[^>]*)>|(?P<ref>!hal\.(?:buffer_view|buffer|fence)\b)|(?P<scalar>\b(?:[su]?i\d+|f\d+|bf16)\b)"
)
# Arguments of a raw-ABI function: a buffer view is passed like a tensor of any shape; a bare buffer
# or a fence (the async ABI) is not something gputop can make.
BUFFER_VIEW = "!hal.buffer_view"
REF_TYPES = (BUFFER_VIEW, "!hal.buffer", "!hal.fence")


@dataclass(frozen=True)
class TensorType:
    """A tensor (or scalar) type; `None` dims are dynamic (`?`)."""

    shape: tuple[int | None, ...]
    element: str
    is_scalar: bool = False

    @property
    def dtype(self) -> np.dtype:
        if self.element not in DTYPES:
            raise UsageError(f"element type {self.element} is not supported for inputs")
        return DTYPES[self.element]

    @property
    def is_dynamic(self) -> bool:
        return any(d is None for d in self.shape)

    @property
    def is_ref(self) -> bool:
        """A HAL object passed as it is (`!hal.buffer_view`, `!hal.buffer`, `!hal.fence`), not a tensor."""
        return self.element in REF_TYPES

    def __str__(self) -> str:
        if self.is_ref:
            return self.element
        dims = "x".join("?" if d is None else str(d) for d in self.shape)
        return f"{dims}x{self.element}" if dims else self.element


@dataclass(frozen=True)
class FunctionSignature:
    """A function's inputs and outputs, in order, as its declaration gives them."""

    name: str
    inputs: tuple[TensorType, ...]
    outputs: tuple[TensorType, ...]
    is_async: bool = False
    declared: bool = True  # False when the module carried no declaration


def parse_tensor_type(text: str) -> TensorType:
    """`256x1024xf32` (the inside of tensor<>) or a bare scalar type like `i32`."""
    body = text.split(",")[0].strip()  # drop an encoding: tensor<4xf32, #enc>
    parts = body.split("x")
    element = parts[-1]
    shape: list[int | None] = []
    for dim in parts[:-1]:
        if dim == "?":
            shape.append(None)
        elif dim.isdigit():
            shape.append(int(dim))
        else:
            raise UsageError(f"cannot read tensor type {text!r}")
    return TensorType(tuple(shape), element)


def _types_in(text: str) -> tuple[TensorType, ...]:
    found: list[TensorType] = []
    for match in _TYPE.finditer(text):
        if match.group("body") is not None:
            found.append(parse_tensor_type(match.group("body")))
        elif match.group("ref") is not None:
            found.append(TensorType((), match.group("ref")))
        else:
            found.append(TensorType((), match.group("scalar"), is_scalar=True))
    return tuple(found)


def parse_declaration(name: str, declaration: str) -> FunctionSignature:
    """Parse IREE's `iree.abi.declaration` text into a signature."""
    head, _, tail = declaration.partition("->")
    args = head[head.find("(") + 1 : head.rfind(")")] if "(" in head else ""
    return FunctionSignature(
        name=name,
        inputs=_types_in(args),
        outputs=_types_in(tail),
        is_async=declaration.strip().startswith("async"),
    )


def signature_of(function: object) -> FunctionSignature:
    """The signature of an `iree.runtime.VmFunction`."""
    name = str(getattr(function, "name", "?"))
    reflection = getattr(function, "reflection", {}) or {}
    declaration = reflection.get("iree.abi.declaration")
    if declaration:
        return parse_declaration(name, declaration)
    # No declaration: count ref arguments in the VM calling convention (e.g. "0rrr_r").
    cconv = re.search(r"\((\w*)\)", repr(function))
    arg_part = cconv.group(1).split("_")[0][1:] if cconv else ""
    unknown = TensorType((None,), "f32")
    return FunctionSignature(name, tuple(unknown for _ in arg_part), (), declared=False)
