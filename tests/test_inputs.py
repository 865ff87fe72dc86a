"""Input syntax (iree-run-module's) and signatures read from module reflection."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gputop.core.errors import UsageError
from gputop.core.module.inputs import make_inputs, parse_input
from gputop.core.module.signature import parse_declaration

DECL = (
    "sync func @mlp(%input0: tensor<256x1024xf32>, %input1: tensor<?x4xi32>, %input2: i32) "
    "-> (%output0: tensor<256x256xf32>)"
)


def test_declaration() -> None:
    sig = parse_declaration("mlp", DECL)
    assert [str(t) for t in sig.inputs] == ["256x1024xf32", "?x4xi32", "i32"]
    assert [str(t) for t in sig.outputs] == ["256x256xf32"]
    assert not sig.is_async and sig.inputs[1].is_dynamic


def test_dynamic_dimension_asks_for_input() -> None:
    sig = parse_declaration("mlp", DECL)
    with pytest.raises(UsageError, match=r"\?x4xi32 has a dynamic dimension"):
        make_inputs(sig, None)


def test_random_inputs_are_seeded() -> None:
    sig = parse_declaration("f", "sync func @f(%a: tensor<3x4xf32>, %b: tensor<5xi8>) -> ()")
    first, second = make_inputs(sig, None, seed=1), make_inputs(sig, None, seed=1)
    assert all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))
    assert first[0].dtype == np.float32 and first[1].dtype == np.int8
    assert not np.array_equal(first[0], make_inputs(sig, None, seed=2)[0])


def test_input_syntax(tmp_path: Path) -> None:
    assert parse_input("2x3xf32=1").tolist() == [[1.0] * 3] * 2
    assert parse_input("4xi32=1,2,3,4").tolist() == [1, 2, 3, 4]
    assert parse_input("2xf16").dtype == np.float16
    npy = tmp_path / "x.npy"
    np.save(npy, np.arange(6, dtype=np.float32).reshape(2, 3))
    assert parse_input(f"@{npy}").shape == (2, 3)
    raw = tmp_path / "x.bin"
    np.arange(4, dtype=np.float32).tofile(raw)
    assert parse_input(f"4xf32=@{raw}").tolist() == [0, 1, 2, 3]
    with pytest.raises(UsageError, match="3 values given"):
        parse_input("2x2xf32=1,2,3")
    with pytest.raises(UsageError, match="no such file"):
        parse_input("@/nonexistent.npy")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("2xi32=nan", "i32 takes whole numbers, not nan"),
        ("2xi32=1.5", "i32 takes whole numbers, not 1.5"),
        ("2xi8=300", "300 is outside i8's range -128..127"),
        ("2xui8=1,-1", "-1 is outside ui8's range 0..255"),
        ("2xi1=2", "2 is outside i1's range 0..1"),
    ],
)
def test_integer_inputs_take_whole_numbers_in_range(text: str, why: str) -> None:
    """numpy would make `nan` an arbitrary integer, wrap 300 into an i8 and cut 1.5 to 1, each silently
    (the fuzz test saw the first as a RuntimeWarning)."""
    with pytest.raises(UsageError, match=f"bad --input '{text}': {why}"):
        parse_input(text)


def test_integer_inputs_keep_every_digit() -> None:
    assert parse_input("1xi64=9007199254740993").tolist() == [9007199254740993]  # 2**53 + 1: lost through a float
    assert parse_input("2xi32=1e3,-7").tolist() == [1000, -7] and parse_input("2xi1=1,0").tolist() == [True, False]
    assert np.isnan(parse_input("1xf32=nan")).all()  # floats take NaN as ever


def test_nan_outputs_fail_the_check_with_an_infinite_error() -> None:
    from gputop.core.module.check import compare_outputs

    got = np.array([1.0, np.nan], dtype=np.float32)
    check = compare_outputs([got], [np.array([1.0, 2.0])], reference="test")
    assert not check.passed and check.max_abs_err == float("inf")
