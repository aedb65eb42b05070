"""The Array API names added for issue 18: values against NumPy, dtypes, operators, errors."""

from __future__ import annotations

import numpy as np
import pytest

import p10

X = np.array([-0.75, -0.2, 0.0, 0.3, 0.9], dtype=np.float32)
Y = np.array([1.5, -2.0, 0.5, -0.25, 3.0], dtype=np.float32)

UNARY = {
    "acos": (np.arccos, X),
    "acosh": (np.arccosh, 1.0 + np.abs(Y)),
    "asin": (np.arcsin, X),
    "asinh": (np.arcsinh, Y),
    "atan": (np.arctan, Y),
    "atanh": (np.arctanh, X),
    "cosh": (np.cosh, Y),
    "sinh": (np.sinh, Y),
    "log2": (np.log2, np.abs(Y)),
    "log10": (np.log10, np.abs(Y)),
    "trunc": (np.trunc, 3 * Y),
    "signbit": (np.signbit, np.array([-0.0, 0.0, -1.0, 2.0], np.float32)),
}
BINARY = {
    "atan2": np.arctan2,
    "logaddexp": np.logaddexp,
    "hypot": np.hypot,
    "copysign": np.copysign,
    "nextafter": np.nextafter,
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_matches_numpy(name: str) -> None:
    ref, x = UNARY[name]
    out = getattr(p10, name)(p10.asarray(x))
    expected = ref(x)
    assert out.dtype == expected.dtype
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_matches_numpy_with_broadcasting(name: str) -> None:
    x, y = X.reshape(5, 1), Y
    out = getattr(p10, name)(p10.asarray(x), p10.asarray(y))
    expected = BINARY[name](x, y)
    assert (out.shape, out.dtype) == (expected.shape, expected.dtype)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


def test_float_functions_of_integers_give_the_default_float() -> None:
    assert p10.atan2(p10.asarray([1]), p10.asarray([1])).dtype == p10.float32
    assert p10.log2(p10.asarray([8])).tolist() == [3.0]


def test_trunc_keeps_integer_dtype() -> None:
    out = p10.trunc(p10.asarray([3, -4], dtype="int16"))
    assert (out.dtype, out.tolist()) == (p10.int16, [3, -4])


def test_shift_operators() -> None:
    x = p10.asarray([1, -8, 12], dtype="int32")
    assert (x << 2).tolist() == [4, -32, 48]
    assert (x >> 1).tolist() == [0, -4, 6]
    assert (2 << p10.asarray([1, 2])).tolist() == [4, 8]
    assert (64 >> p10.asarray([1, 2])).tolist() == [32, 16]
    assert (x << 2).dtype == p10.int32
    y = p10.asarray([1, 2])
    y <<= 3
    assert y.tolist() == [8, 16]
    y >>= 2
    assert y.tolist() == [2, 4]


def test_shift_of_floats_names_the_op_and_the_fix() -> None:
    with pytest.raises(p10.DTypeError, match=r"bitwise_left_shift.*float32.*astype"):
        p10.bitwise_left_shift(p10.asarray([1.0]), 1)
