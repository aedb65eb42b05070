"""Hypothesis properties: broadcasting and reductions agree with NumPy on generated shapes,
values and axes (modest example counts keep the suite fast)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import p10

FAST = settings(max_examples=40, deadline=None)
finite32 = st.floats(-1e3, 1e3, width=32, allow_subnormal=False)
BINARY = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "less": np.less,
}


@st.composite
def broadcastable_arrays(draw, count=2):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=count, max_dims=4, max_side=4))
    return [draw(hnp.arrays(np.float32, s, elements=finite32)) for s in shapes.input_shapes]


@FAST
@given(broadcastable_arrays(), st.sampled_from(sorted(BINARY)))
def test_binary_ops_broadcast_like_numpy(arrays, name):
    a, b = arrays
    out = getattr(p10, name)(p10.asarray(a), p10.asarray(b))
    expected = BINARY[name](a, b)
    assert out.shape == np.broadcast_shapes(a.shape, b.shape) == expected.shape
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out.numpy(), expected)


@FAST
@given(broadcastable_arrays(count=3))
def test_where_broadcasts_three_ways(arrays):
    c, a, b = arrays
    out = p10.where(p10.asarray(c > 0), p10.asarray(a), p10.asarray(b))
    np.testing.assert_array_equal(out.numpy(), np.where(c > 0, a, b))


@FAST
@given(
    hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4),
    hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4),
)
def test_shapes_broadcast_exactly_when_numpy_says_so(s1, s2):
    try:
        expected = np.broadcast_shapes(s1, s2)
    except ValueError:
        expected = None
    try:
        got = (p10.zeros(s1) + p10.zeros(s2)).shape
    except p10.ShapeError:
        got = None
    assert got == expected
    if expected is not None:
        assert p10.broadcast_shapes(s1, s2) == expected


@st.composite
def array_and_axis(draw, min_side=0):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=min_side, max_side=4))
    a = draw(hnp.arrays(np.float32, shape, elements=st.floats(-10, 10, width=32)))
    ndim = len(shape)
    axes = (
        draw(st.lists(st.integers(-ndim, ndim - 1), unique_by=lambda i: i % ndim, max_size=ndim))
        if ndim
        else []
    )
    axis = draw(st.sampled_from([None, tuple(axes)] + ([axes[0]] if axes else [])))
    return a, axis


REDUCTIONS = {"sum": np.sum, "prod": np.prod, "any": np.any, "all": np.all}


@FAST
@given(array_and_axis(), st.sampled_from(sorted(REDUCTIONS)), st.booleans())
def test_reductions_with_an_identity_match_numpy(data, name, keepdims):
    a, axis = data
    out = getattr(p10, name)(p10.asarray(a), axis=axis, keepdims=keepdims)
    expected = np.asarray(REDUCTIONS[name](a, axis=axis, keepdims=keepdims))
    assert out.shape == expected.shape and out.dtype == expected.dtype
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-4)


@FAST
@given(array_and_axis(min_side=1), st.sampled_from(["max", "min", "mean", "var"]), st.booleans())
def test_reductions_of_non_empty_axes_match_numpy(data, name, keepdims):
    a, axis = data
    out = getattr(p10, name)(p10.asarray(a), axis=axis, keepdims=keepdims)
    expected = np.asarray(getattr(np, name)(a, axis=axis, keepdims=keepdims))
    assert out.shape == expected.shape and out.dtype == expected.dtype
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)


@FAST
@given(array_and_axis(min_side=1))
def test_sum_equals_sum_of_parts_and_keepdims_broadcasts_back(data):
    a, axis = data
    x = p10.asarray(a.astype(np.float64))
    kept = p10.sum(x, axis=axis, keepdims=True)
    assert (x - kept).shape == x.shape
    np.testing.assert_allclose(p10.sum(kept).item(), p10.sum(x).item(), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(
        p10.max(x - p10.max(x, axis=axis, keepdims=True)).item() if x.size else 0.0, 0.0
    )
