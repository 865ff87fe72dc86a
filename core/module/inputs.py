"""Function inputs: random with a fixed seed, or given in iree-run-module syntax.

Users already know `iree-run-module --input=2x3xf32=1` and `--input=@x.npy`,
so gputop takes the same syntax. Inputs that are not given are random with a
fixed seed, so two runs of the same module see the same numbers and their
outputs can be compared.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import psutil

from gputop.core.errors import RuntimeFailure, UnwritableFile, UsageError, unwritable_file
from gputop.core.files import require_file
from gputop.core.module.signature import BUFFER_VIEW, DTYPES, FunctionSignature, TensorType, parse_tensor_type

__all__ = [
    "DEFAULT_SEED",
    "check_input_files",
    "load_array_file",
    "make_inputs",
    "parse_input",
    "parse_scalar",
    "random_input",
    "tool_input_args",
]

DEFAULT_SEED = 0
_BOOLEANS = {"true": 1, "false": 0, "1": 1, "0": 0}


def random_input(kind: TensorType, rng: np.random.Generator) -> np.ndarray:
    """Random values of `kind`'s shape and type: floats in [-1, 1), small integers."""
    if kind.is_dynamic:
        dims = str(kind)
        raise UsageError(f"input of type {dims} has a dynamic dimension: give it with --input")
    dtype = kind.dtype
    shape = tuple(int(d) for d in kind.shape if d is not None)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        low = 0 if np.issubdtype(dtype, np.unsignedinteger) else -8
        return rng.integers(low, 8, size=shape).astype(dtype)
    return rng.uniform(-1.0, 1.0, size=shape).astype(dtype)


def load_array_file(path: Path) -> np.ndarray:
    """A `.npy` or ONNX `.pb` tensor file as an array, with one-line errors."""
    from gputop.core.module.check import load_tensor_file

    _check_array_file(path)
    return load_tensor_file(path, "input file")


def _check_array_file(path: Path) -> None:
    from gputop.core.module.check import check_tensor_file

    if path.suffix not in (".npy", ".pb") and path.exists():
        raise UsageError(f"input file {path}: use a .npy or .pb file, or TYPE=@file.bin for raw bytes")
    check_tensor_file(path, "input file")


def check_input_files(text: str) -> None:
    """The files one `--input` names (`@x.npy`, `TYPE=@x.bin`) are there to read: what can be checked of it
    before a run starts, with the errors reading it would give. Its other words wait for the function's
    signature (a scalar argument reads `3` as a value, not a tensor type)."""
    text = text.strip()
    if text.startswith("@"):
        _check_array_file(Path(text[1:]))
        return
    _, _, value = text.partition("=")
    if value.strip().startswith("@"):
        require_file(Path(value.strip()[1:]), "input file")


def parse_input(text: str) -> np.ndarray:
    """One `--input` value: `2x3xf32=1`, `2x3xf32=1,2,3,4,5,6`, `2x3xf32`, `@x.npy`, `TYPE=@x.bin`."""
    try:
        return _parse_input(text.strip())
    except MemoryError:
        raise RuntimeFailure(f"--input {text.strip()[:60]!r}: out of host memory") from None
    except (ValueError, OverflowError, TypeError) as exc:
        raise UsageError(f"bad --input {text.strip()[:60]!r}: {exc}") from None


def _parse_input(text: str) -> np.ndarray:
    if text.startswith("@"):
        return load_array_file(Path(text[1:]))
    type_text, has_value, value = text.partition("=")
    try:
        kind = parse_tensor_type(type_text)
    except UsageError:
        raise UsageError(f"bad --input {text!r}: expected e.g. 2x3xf32=1 or @file.npy") from None
    if kind.is_dynamic:
        raise UsageError(f"bad --input {text!r}: give concrete dimensions, not ?")
    if kind.element not in DTYPES:
        raise UsageError(f"bad --input {text!r}: unknown element type {kind.element!r}")
    shape = tuple(int(d) for d in kind.shape if d is not None)
    dtype = kind.dtype
    count = math.prod(shape)  # Python ints: a shape of 10^12 x 10^12 must not wrap around
    needed = count * dtype.itemsize
    host = psutil.virtual_memory().total
    if needed > host:
        raise RuntimeFailure(
            f"--input {type_text}: out of memory: it needs {needed / 2**30:.1f} GiB, "
            f"the host has {host / 2**30:.1f} GiB"
        )
    if not has_value or not value.strip():
        return np.zeros(shape, dtype=dtype)
    value = value.strip()
    if value.startswith("@"):
        raw = Path(value[1:])
        require_file(raw, "input file")
        data = np.fromfile(raw, dtype=dtype)
        if data.size != count:
            raise UsageError(f"input file {raw}: has {data.size} values of {dtype}, {kind} needs {count}")
        return data.reshape(shape)
    numbers = _numbers(value.replace(",", " ").split(), dtype, kind.element, text)
    if len(numbers) == 1:
        return np.full(shape, numbers[0], dtype=dtype)
    if len(numbers) != count:
        raise UsageError(f"bad --input {text!r}: {len(numbers)} values given, {kind} needs {count}")
    return np.asarray(numbers, dtype=dtype).reshape(shape)


def _numbers(tokens: list[str], dtype: np.dtype, element: str, text: str) -> list[float] | list[int]:
    """The values of an `--input`, each one a value of its element type.

    An integer or boolean tensor takes whole numbers in its type's range: numpy would turn `nan`
    into an arbitrary integer, wrap 300 into an i8 and cut 1.5 to 1, each silently.
    """
    if dtype.kind not in "iub":
        try:
            return [float(token) for token in tokens]
        except ValueError:
            raise UsageError(f"bad --input {text!r}: values must be numbers") from None
    low, high = (0, 1) if dtype.kind == "b" else (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
    whole: list[int] = []
    for token in tokens:
        try:
            number = int(token)
        except ValueError:
            try:
                real = float(token)
            except ValueError:
                raise UsageError(f"bad --input {text!r}: values must be numbers") from None
            if not math.isfinite(real) or not real.is_integer():
                raise UsageError(f"bad --input {text!r}: {element} takes whole numbers, not {token}") from None
            number = int(real)
        if not low <= number <= high:
            raise UsageError(f"bad --input {text!r}: {token} is outside {element}'s range {low}..{high}")
        whole.append(number)
    return whole


def parse_scalar(text: str, kind: TensorType, where: str) -> np.ndarray:
    """A scalar argument as iree-run-module takes it: `3`, `i32=3`, `0.5`; an i1 also as true/false."""
    text = text.strip()
    type_text, has_type, value = text.partition("=")
    if not has_type:
        value = text
    elif type_text.strip() != kind.element:
        raise UsageError(f"bad --input {text!r}: {where} is a scalar {kind.element}")
    value = value.strip()
    if kind.element == "i1":
        if value.lower() not in _BOOLEANS:
            raise UsageError(f"bad --input {text!r}: {where} is an i1: give 0, 1, true or false")
        return np.asarray(bool(_BOOLEANS[value.lower()]))
    dtype = kind.dtype
    numbers = _numbers([value], dtype, kind.element, text) if value else []
    if len(numbers) != 1 or " " in value or "," in value:
        raise UsageError(f"bad --input {text!r}: {where} is a scalar {kind.element}: give one value")
    return np.asarray(numbers[0], dtype=dtype)


def _refuse_argument(signature: FunctionSignature, index: int, kind: TensorType) -> None:
    """One line for an argument gputop cannot make: a bare buffer or a fence (the async ABI)."""
    if kind.is_ref and kind.element != BUFFER_VIEW:
        raise UsageError(
            f"{signature.name} argument {index} is a {kind.element}: gputop passes tensors, scalars and "
            "!hal.buffer_view arguments only"
        )


def make_inputs(signature: FunctionSignature, given: list[str] | None, seed: int = DEFAULT_SEED) -> list[np.ndarray]:
    """The arrays to call `signature` with: the given ones, checked, or random ones.

    A scalar argument is a 0-d array of its type; a `!hal.buffer_view`
    argument takes a tensor of any shape and type (its shape is not declared).
    """
    for index, kind in enumerate(signature.inputs):
        _refuse_argument(signature, index, kind)
    if given:
        arrays = _given_arrays(signature, given)  # a bad value is named before a wrong count
        if signature.declared and len(arrays) != len(signature.inputs):
            takes = ", ".join(str(kind) for kind in signature.inputs) or "nothing"
            count = len(signature.inputs)
            raise UsageError(
                f"{signature.name} takes {count} input{'' if count == 1 else 's'} ({takes}), {len(arrays)} given: "
                "one --input each, in order"
            )
        for index, (array, kind) in enumerate(zip(arrays, signature.inputs, strict=False)):
            if not signature.declared:
                break
            if kind.is_scalar or kind.is_ref:
                continue
            expected = tuple(kind.shape)
            if len(expected) != array.ndim or any(
                e is not None and e != a for e, a in zip(expected, array.shape, strict=True)
            ):
                raise UsageError(
                    f"input {index} has shape {'x'.join(map(str, array.shape)) or 'scalar'}, "
                    f"{signature.name} expects {kind}"
                )
            if kind.element in ("f16", "f32", "f64", "i8", "i16", "i32", "i64") and array.dtype != kind.dtype:
                raise UsageError(f"input {index} has dtype {array.dtype}, {signature.name} expects {kind}")
        return arrays
    if not signature.declared:
        raise UsageError(f"{signature.name} has no declared signature: give its inputs with --input")
    for index, kind in enumerate(signature.inputs):
        if kind.is_ref:
            raise UsageError(
                f"{signature.name} argument {index} is a {kind.element}, whose shape and type the module does not "
                "declare: give it with --input"
            )
    rng = np.random.default_rng(seed)
    return [random_input(kind, rng) for kind in signature.inputs]


def _given_arrays(signature: FunctionSignature, given: list[str]) -> list[np.ndarray]:
    """The `--input` values, each read as its argument's kind (a scalar as a value of its type)."""
    arrays = []
    for index, text in enumerate(given):
        kind = signature.inputs[index] if signature.declared and index < len(signature.inputs) else None
        if kind is not None and kind.is_scalar:
            arrays.append(parse_scalar(text, kind, f"{signature.name} argument {index}"))
        else:
            arrays.append(parse_input(text))
    return arrays


def tool_input_args(signature: FunctionSignature, arrays: Sequence[np.ndarray], folder: Path) -> list[str]:
    """`--input=` values for IREE's tools: tensors as .npy files, scalar arguments as their value.

    Raises:
        UnwritableFile: a file could not be written (a full disk); what was written of it is removed, so
            the room it took is there again for the session's ending.
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise unwritable_file(exc, folder) or UnwritableFile(folder, exc.strerror or str(exc)) from None
    args = []
    for index, (kind, array) in enumerate(zip(signature.inputs, arrays, strict=True)):
        if kind.is_scalar:
            value = np.asarray(array).item()
            # iree-run-module reads an i1 as an i32 (it refuses `true`)
            args.append(str(int(value)) if isinstance(value, bool) else str(value))
        else:
            path = folder / f"input{index}.npy"
            try:
                np.save(path, array)
            except OSError as exc:  # np.save's own error names no file: a write to an open file fails bare
                # Made before the partial file goes: it may ask the disk why.
                error = unwritable_file(exc, path) or UnwritableFile(path, exc.strerror or str(exc))
                with contextlib.suppress(OSError):
                    path.unlink()
                raise error from None
            args.append(f"@{path}")
    return args
