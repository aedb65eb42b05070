"""Reductions against NumPy: every axis form (None, int, negative, tuple), keepdims, dtypes of
the result, empty and 0-d tensors, correction, numerically stable logsumexp."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

import p10
from tests.helpers.p10_cases import assert_same_array

rng = np.random.default_rng(3)
X = rng.standard_normal((2, 3, 4)).astype(np.float32)

REDUCTIONS = {
    "sum": np.sum,
    "mean": np.mean,
    "prod": np.prod,
    "max": np.max,
    "min": np.min,
    "var": np.var,
    "std": np.std,
    "logsumexp": lambda a, axis=None, keepdims=False: special.logsumexp(
        a, axis=axis, keepdims=keepdims
    ).astype(a.dtype),
    "all": np.all,
    "any": np.any,
}
AXES = [None, 0, 1, -1, -3, (0, 2), (-1, 0), (0, 1, 2), ()]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_matches_numpy(name, axis, keepdims):
    a = X > 0 if name in ("all", "any") else X
    out = getattr(p10, name)(p10.asarray(a), axis=axis, keepdims=keepdims)
    expected = np.asarray(REDUCTIONS[name](a, axis=axis, keepdims=keepdims))
    assert_same_array(out.numpy(), expected, f"{name} axis={axis}")


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("axis", [None, 1, -2], ids=str)
def test_method_form_matches_function(name, axis):
    x = p10.asarray(X)
    expected = getattr(p10, name)(x, axis=axis, keepdims=True).numpy()
    np.testing.assert_array_equal(getattr(x, name)(axis, True).numpy(), expected)
    np.testing.assert_array_equal(getattr(x, name)(axis=axis, keepdims=True).numpy(), expected)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32", "int64"])
def test_sum_and_prod_of_small_ints_accumulate_in_a_wide_int(dtype):
    a = np.ones((3, 100), dtype=dtype) * (1 if dtype == "bool" else 2)
    for name in ["sum", "prod"]:
        out = getattr(p10, name)(p10.asarray(a), axis=1)
        assert_same_array(out.numpy(), getattr(np, name)(a, axis=1), name)


def test_sum_and_prod_take_a_dtype():
    x = p10.asarray([[1, 2], [3, 4]], dtype="int8")
    assert p10.sum(x, dtype="float64").dtype == p10.float64
    assert x.sum(dtype="int16").dtype == p10.int16 and x.sum(None, False, "int16").item() == 10
    assert p10.prod(x, dtype="float32", axis=0).tolist() == [3.0, 8.0]


@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_mean_var_std_of_ints_give_the_default_float(dtype):
    a = np.array([[1, 0, 1], [1, 1, 0]], dtype=dtype)
    for name in ["mean", "var", "std"]:
        out = getattr(p10, name)(p10.asarray(a), axis=1)
        assert out.dtype == p10.float32
        np.testing.assert_allclose(out.numpy(), getattr(np, name)(a.astype("f4"), axis=1))


@pytest.mark.parametrize("correction", [0, 1, 1.5])
def test_var_and_std_correction(correction):
    x = p10.asarray(X)
    for name in ["var", "std"]:
        out = getattr(p10, name)(x, axis=(0, 2), correction=correction)
        expected = getattr(np, name)(X, axis=(0, 2), ddof=correction)
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5)
    assert x.var(1, correction=1).shape == (2, 4)


def test_logsumexp_does_not_overflow_or_underflow():
    x = p10.asarray([[1000.0, 1000.0], [-1000.0, -1000.0]])
    out = p10.logsumexp(x, axis=1).numpy()
    np.testing.assert_allclose(out, [1000 + np.log(2), -1000 + np.log(2)], rtol=1e-6)
    assert p10.logsumexp(p10.asarray([-np.inf, -np.inf])).item() == -np.inf


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, -1], ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_argmax_argmin(name, axis, keepdims):
    out = getattr(p10, name)(p10.asarray(X), axis=axis, keepdims=keepdims)
    assert_same_array(out.numpy(), getattr(np, name)(X, axis=axis, keepdims=keepdims))


def test_argmax_takes_the_first_of_ties():
    assert p10.argmax(p10.asarray([1, 3, 3, 0])).item() == 1
    assert p10.argmin(p10.asarray([[2, 0, 0]]), axis=1).tolist() == [1]


@pytest.mark.parametrize("axis", [None, 0, 1, -1], ids=str)
def test_cumsum(axis):
    for a in [X[0], np.arange(6).reshape(2, 3), np.array([[True, False, True]])]:
        out = p10.cumsum(p10.asarray(a), axis=axis)
        assert_same_array(out.numpy(), np.cumsum(a, axis=axis))
    assert p10.cumsum(p10.asarray(5.0)).tolist() == [5.0]


# -- empty and 0-d ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["sum", "prod", "all", "any"])
@pytest.mark.parametrize("axis", [None, 0, 1], ids=str)
def test_reductions_with_an_identity_accept_empty_tensors(name, axis):
    a = np.zeros((0, 3), np.float32)
    out = getattr(p10, name)(p10.asarray(a), axis=axis)
    assert_same_array(out.numpy(), np.asarray(getattr(np, name)(a, axis=axis)))


@pytest.mark.parametrize("name", ["max", "min", "argmax", "argmin"])
def test_reductions_without_an_identity_refuse_empty_axes(name):
    x = p10.zeros((0, 3))
    with pytest.raises(
        p10.ShapeError, match=rf"{name}: cannot reduce an empty axis of shape \(0, 3\)"
    ):
        getattr(p10, name)(x, axis=0)
    # reducing the non-empty axis of an empty tensor is fine
    assert getattr(p10, name)(x, axis=1).shape == (0,)


def test_mean_of_empty_is_nan_like_numpy():
    with pytest.warns(RuntimeWarning):
        assert np.isnan(p10.mean(p10.zeros((0,))).item())
        assert p10.mean(p10.zeros((0, 2)), axis=0).shape == (2,)


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min", "var", "logsumexp"])
@pytest.mark.parametrize("axis", [None, 0, -1, ()], ids=str)
def test_reductions_of_0d_tensors(name, axis):
    a = np.array(1.5, np.float32)
    out = getattr(p10, name)(p10.asarray(a), axis=axis, keepdims=True)
    assert out.shape == ()
    expected = np.asarray(REDUCTIONS[name](a, axis=None if axis in (0, -1) else axis))
    assert_same_array(out.numpy(), expected.reshape(()))


def test_bad_axes_name_the_op_and_the_rank():
    x = p10.asarray(X)
    with pytest.raises(p10.AxisError, match=r"sum: axis 3 is out of range .* 3 dimension"):
        p10.sum(x, axis=3)
    with pytest.raises(IndexError, match=r"mean: axis -4"):
        x.mean(axis=-4)
    with pytest.raises(p10.AxisError, match="repeated axis"):
        p10.max(x, axis=(0, -3))
    with pytest.raises(p10.AxisError, match="axis must be an int"):
        p10.sum(x, axis="0")
    with pytest.raises(p10.AxisError, match="cumsum: axis 2"):
        p10.cumsum(p10.ones((2, 2)), axis=2)
