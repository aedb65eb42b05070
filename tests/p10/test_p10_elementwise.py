"""Elementwise functions against NumPy: values, broadcasting, dtype promotion, weak scalars,
the int/float rule, empty and 0-d tensors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import special

import p10
from tests.helpers.p10_cases import assert_same_array

rng = np.random.default_rng(7)
X = rng.standard_normal((3, 4)).astype(np.float32)
POS = rng.uniform(0.5, 2.0, (3, 4)).astype(np.float32)

# p10 name: (NumPy reference, input)
UNARY = {
    "negative": (np.negative, X),
    "abs": (np.abs, X),
    "exp": (np.exp, X),
    "log": (np.log, POS),
    "log1p": (np.log1p, POS),
    "expm1": (np.expm1, X),
    "sqrt": (np.sqrt, POS),
    "square": (np.square, X),
    "reciprocal": (np.reciprocal, POS),
    "sin": (np.sin, X),
    "cos": (np.cos, X),
    "tan": (np.tan, X),
    "tanh": (np.tanh, X),
    "sigmoid": (special.expit, X),
    "relu": (lambda a: np.maximum(a, 0), X),
    "erf": (special.erf, X),
    "sign": (np.sign, X),
    "floor": (np.floor, X * 3),
    "ceil": (np.ceil, X * 3),
    "round": (np.round, np.array([0.5, 1.5, 2.5, -0.5, 1.2], np.float32)),
    "positive": (np.positive, X),
    "isnan": (np.isnan, np.array([0.0, np.nan, np.inf], np.float32)),
    "isinf": (np.isinf, np.array([0.0, np.nan, -np.inf], np.float32)),
    "isfinite": (np.isfinite, np.array([0.0, np.nan, np.inf], np.float32)),
    "logical_not": (np.logical_not, X > 0),
    "bitwise_invert": (np.invert, np.arange(-3, 3, dtype=np.int16)),
}
FLOAT_ONLY = {"exp", "log", "log1p", "expm1", "sqrt", "reciprocal", "sin", "cos", "tan", "tanh"}
FLOAT_ONLY |= {"sigmoid", "erf"}

BINARY = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "floor_divide": np.floor_divide,
    "remainder": np.remainder,
    "pow": np.power,
}
OPERATORS = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b,
    "floor_divide": lambda a, b: a // b,
    "remainder": lambda a, b: a % b,
    "pow": lambda a, b: a**b,
    "equal": lambda a, b: a == b,
    "not_equal": lambda a, b: a != b,
    "less": lambda a, b: a < b,
    "less_equal": lambda a, b: a <= b,
    "greater": lambda a, b: a > b,
    "greater_equal": lambda a, b: a >= b,
}
BROADCAST_PAIRS = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 1, 4), (3, 1))]
BROADCAST_PAIRS += [((), (3,)), ((0, 4), (4,)), ((0, 1), (1, 5)), ((), ())]


@pytest.mark.parametrize("name", UNARY)
def test_unary_matches_numpy(name):
    ref, a = UNARY[name]
    assert_same_array(getattr(p10, name)(p10.asarray(a)).numpy(), ref(a), name)


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3)], ids=["0d", "empty", "empty-3d"])
def test_unary_keeps_0d_and_empty_shapes(name, shape):
    ref, a = UNARY[name]
    sample = np.resize(a, shape).astype(a.dtype)
    out = getattr(p10, name)(p10.asarray(sample))
    assert out.shape == shape
    assert_same_array(out.numpy(), np.asarray(ref(sample)), name)


@pytest.mark.parametrize("name", sorted(FLOAT_ONLY))
@pytest.mark.parametrize("dtype", ["int64", "int8", "bool"])
def test_float_functions_cast_integers_to_the_default_float(name, dtype):
    a = np.array([1, 1] if dtype == "bool" else [1, 2], dtype=dtype)
    out = getattr(p10, name)(p10.asarray(a))
    assert out.dtype == p10.float32
    assert_same_array(out.numpy(), UNARY[name][0](a.astype(np.float32)), name)
    with p10.default_dtype("float64"):
        assert getattr(p10, name)(p10.asarray(a)).dtype == p10.float64


@pytest.mark.parametrize("name", ["exp", "tanh", "sqrt", "abs", "negative", "relu", "square"])
def test_unary_keeps_float64(name):
    a = np.abs(X).astype(np.float64)
    assert_same_array(getattr(p10, name)(p10.asarray(a)).numpy(), UNARY[name][0](a), name)


def test_methods_match_functions():
    x = p10.asarray(X)
    for name in ["abs", "exp", "tanh", "sigmoid", "relu", "square", "sign", "floor", "sin"]:
        np.testing.assert_array_equal(getattr(x, name)().numpy(), getattr(p10, name)(x).numpy())
    np.testing.assert_array_equal((-x).numpy(), p10.negative(x).numpy())
    np.testing.assert_array_equal(abs(x).numpy(), p10.abs(x).numpy())
    np.testing.assert_array_equal(x.neg().numpy(), -X)
    np.testing.assert_array_equal(x.clamp(-0.1, 0.1).numpy(), np.clip(X, -0.1, 0.1))


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("shapes", BROADCAST_PAIRS, ids=str)
def test_binary_broadcasts_like_numpy(name, shapes):
    a = rng.uniform(0.5, 2.0, shapes[0]).astype(np.float32)
    b = rng.uniform(0.5, 2.0, shapes[1]).astype(np.float32)
    out = getattr(p10, name)(p10.asarray(a), p10.asarray(b))
    assert out.shape == np.broadcast_shapes(*shapes)
    assert_same_array(out.numpy(), np.asarray(BINARY[name](a, b)), name)


@pytest.mark.parametrize("name", OPERATORS)
def test_operators_match_functions_both_ways(name):
    a, b = rng.uniform(0.5, 2.0, (2, 3)), rng.uniform(0.5, 2.0, (3,))
    x, y = p10.asarray(a, dtype="float32"), p10.asarray(b, dtype="float32")
    expected = getattr(p10, name)(x, y).numpy()
    np.testing.assert_array_equal(OPERATORS[name](x, y).numpy(), expected)
    # a NumPy array on either side converts (NumPy defers to the tensor's reflected operator)
    np.testing.assert_array_equal(OPERATORS[name](x, b.astype(np.float32)).numpy(), expected)
    np.testing.assert_array_equal(OPERATORS[name](a.astype(np.float32), y).numpy(), expected)


@pytest.mark.parametrize("name", ["floor_divide", "remainder"])
def test_integer_floor_divide_and_remainder_follow_python_signs(name):
    a = np.array([7, -7, 7, -7, 0], np.int64)
    b = np.array([2, 2, -2, -2, 3], np.int64)
    assert_same_array(
        getattr(p10, name)(p10.asarray(a), p10.asarray(b)).numpy(), BINARY[name](a, b)
    )


def test_logical_and_bitwise():
    a, b = np.array([True, True, False, False]), np.array([True, False, True, False])
    for name in ["logical_and", "logical_or", "logical_xor"]:
        assert_same_array(getattr(p10, name)(a, b).numpy(), getattr(np, name)(a, b))
    i, j = np.array([12, 10, -3], np.int32), np.array([10, 6, 5], np.int32)
    for name in ["bitwise_and", "bitwise_or", "bitwise_xor"]:
        assert_same_array(getattr(p10, name)(i, j).numpy(), getattr(np, name)(i, j))
    x, y = p10.asarray(i), p10.asarray(j)
    assert ((x & y).tolist(), (x | y).tolist(), (x ^ y).tolist()) == (
        (i & j).tolist(),
        (i | j).tolist(),
        (i ^ j).tolist(),
    )
    assert (~p10.asarray(a)).tolist() == [False, False, True, True]
    assert (~x).tolist() == (~i).tolist()


def test_where_clip_and_gelu():
    x = p10.asarray(X)
    assert_same_array(p10.where(x > 0, x, -x).numpy(), np.where(X > 0, X, -X))
    assert_same_array(p10.where(x > 0, x, 0.0).numpy(), np.where(X > 0, X, np.float32(0)))
    assert_same_array(p10.clip(x, -0.5, None).numpy(), np.clip(X, -0.5, None))
    lo, hi = p10.full((4,), -0.2), p10.full((3, 1), 0.3)
    assert_same_array(p10.clip(x, lo, hi).numpy(), np.clip(X, -0.2, np.full((3, 1), 0.3, "f4")))
    exact = 0.5 * X * (1 + special.erf(X / np.sqrt(2)))
    np.testing.assert_allclose(p10.gelu(x).numpy(), exact, rtol=1e-6, atol=1e-7)
    approx = 0.5 * X * (1 + np.tanh(np.sqrt(2 / np.pi) * (X + 0.044715 * X**3)))
    np.testing.assert_allclose(p10.gelu(x, approximate="tanh").numpy(), approx, rtol=1e-6)


def test_sigmoid_and_relu_are_stable_at_extremes():
    x = p10.asarray([-1000.0, -50.0, 0.0, 50.0, 1000.0, np.nan])
    s = p10.sigmoid(x).numpy()
    assert np.isfinite(s[:5]).all() and s[0] == 0.0 and s[-2] == 1.0 and np.isnan(s[-1])
    assert np.isnan(p10.relu(x).numpy()[-1])  # NaN propagates, as in PyTorch


# -- dtype promotion ---------------------------------------------------------------------------
ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "float32", "float64"]


def expected_promotion(d1: str, d2: str) -> np.dtype:
    """P10's rule: the Array API table within a kind; a float next to an int or bool wins."""
    a, b = np.dtype(d1), np.dtype(d2)
    if (a.kind == "f") != (b.kind == "f"):
        return a if a.kind == "f" else b
    return np.result_type(a, b)


@pytest.mark.parametrize("d1, d2", list(itertools.product(ALL, ALL)))
def test_tensor_tensor_promotion_table(d1, d2):
    x, y = p10.ones(2, dtype=d1), p10.ones(2, dtype=d2)
    expected = expected_promotion(d1, d2)
    assert (x * y).dtype == expected
    assert p10.maximum(x, y).dtype == expected
    assert p10.result_type(x, y) == expected == p10.result_type(d1, d2)


def test_array_api_promotion_table_spot_checks():
    table = {
        ("int8", "uint8"): "int16",
        ("int16", "uint8"): "int16",
        ("int32", "uint8"): "int32",
        ("uint8", "int64"): "int64",
        ("int8", "int64"): "int64",
        ("float32", "float64"): "float64",
        ("bool", "bool"): "bool",
    }
    for (d1, d2), out in table.items():
        assert (p10.zeros(1, dtype=d1) + p10.zeros(1, dtype=d2)).dtype == p10.asarray(0).to(
            out
        ).dtype


@pytest.mark.parametrize("int_dtype", ["int8", "int16", "int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("float_dtype", ["float32", "float64"])
def test_mixed_int_float_takes_the_float_dtype_like_pytorch(int_dtype, float_dtype):
    i = p10.asarray([1, 0, 1], dtype=int_dtype)
    f = p10.asarray([0.5, 1.5, 2.5], dtype=float_dtype)
    for out in [i + f, f * i, i / f, f - i, i**f, p10.maximum(i, f), p10.where(f > 1, i, f)]:
        assert out.dtype == float_dtype
    assert (i < f).dtype == p10.bool
    np.testing.assert_allclose((i * f).numpy(), np.array([0.5, 0.0, 2.5]), rtol=1e-7)


def test_mixed_int_float_reaches_the_kernel_as_one_dtype():
    seen = []

    def spy(a, b):
        seen.append((a.dtype.name, b.dtype.name))
        return np.add(a, b)

    with p10.register_kernel(p10.Op.ADD, "numpy", spy):
        out = p10.arange(3) + p10.ones(3)
    assert seen == [("float32", "float32")] and out.dtype == p10.float32


def test_mixed_promotion_covers_matmul_tensordot_concat():
    i, f = p10.ones((2, 2), dtype="int64"), p10.ones((2, 2), dtype="float32")
    assert (i @ f).dtype == p10.float32 and (f @ i).dtype == p10.float32
    assert p10.tensordot(i, f, axes=1).dtype == p10.float32
    assert p10.concat([i, f]).dtype == p10.float32
    assert p10.stack([i, f, p10.ones((2, 2), dtype="float64")]).dtype == p10.float64


# (tensor dtype, scalar) -> result dtype, NEP 50 with PyTorch's choice for float scalars
WEAK = [
    ("float32", 2.5, "float32"),
    ("float32", 2, "float32"),
    ("float32", True, "float32"),
    ("float64", 2.5, "float64"),
    ("int8", 3, "int8"),
    ("uint8", 3, "uint8"),
    ("int16", True, "int16"),
    ("int8", 2.5, "float32"),
    ("int64", 2.5, "float32"),
    ("bool", True, "bool"),
    ("bool", 3, "int64"),
    ("bool", 2.5, "float32"),
]


@pytest.mark.parametrize("dtype, scalar, expected", WEAK, ids=str)
def test_python_scalars_are_weak(dtype, scalar, expected):
    x = p10.ones(3, dtype=dtype)
    for out in [x * scalar, scalar * x, x + scalar, p10.maximum(x, scalar)]:
        assert out.dtype == expected
    assert p10.result_type(x, scalar) == expected


def test_weak_float_scalar_follows_the_default_dtype():
    with p10.default_dtype("float64"):
        assert (p10.arange(3) * 2.5).dtype == p10.float64
        assert (p10.ones(2, dtype="float32") * 2.5).dtype == p10.float32


def test_weak_scalars_keep_float32_values_exact():
    x = p10.asarray([1.0, 2.0, 3.0])
    out = x * 0.1
    assert out.dtype == p10.float32
    np.testing.assert_array_equal(
        out.numpy(), np.array([1.0, 2.0, 3.0], np.float32) * np.float32(0.1)
    )


def test_numpy_scalars_count_as_weak_and_0d_arrays_as_strong():
    x = p10.ones(2)
    assert (x * np.float64(2.0)).dtype == p10.float32
    assert (x * np.array(2.0)).dtype == p10.float64


def test_integer_division_gives_the_default_float():
    i = p10.asarray([1, 2, 3])
    assert (i / 2).dtype == p10.float32 and (i / i).dtype == p10.float32
    assert (i / 2).tolist() == [0.5, 1.0, 1.5]
    assert (i // 2).dtype == p10.int64 and (i % 2).tolist() == [1, 0, 1]
