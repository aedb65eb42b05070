"""Neural-network kernels against plain-loop references: softmax, conv2d (stride, padding,
dilation, groups, bias), unfold/fold (adjoint pair), max and average pooling."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import p10

rng = np.random.default_rng(5)


def conv2d_reference(x, w, stride, padding, dilation, groups):
    """Direct loops over output positions: the definition of cross-correlation."""
    n, _, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow), np.float64)
    per_group = o // groups
    for b, oc, i, j in itertools.product(range(n), range(o), range(oh), range(ow)):
        g = oc // per_group
        rows = i * stride[0] + dilation[0] * np.arange(kh)
        cols = j * stride[1] + dilation[1] * np.arange(kw)
        patch = xp[b, g * cg : (g + 1) * cg][:, rows][:, :, cols]
        out[b, oc, i, j] = np.sum(patch * w[oc])
    return out


def pool_reference(x, k, s, p, reduce, pad_value):
    xp = np.pad(x, ((0, 0), (0, 0), (p[0],) * 2, (p[1],) * 2), constant_values=pad_value)
    oh = (x.shape[2] + 2 * p[0] - k[0]) // s[0] + 1
    ow = (x.shape[3] + 2 * p[1] - k[1]) // s[1] + 1
    out = np.zeros(x.shape[:2] + (oh, ow), x.dtype)
    for i, j in itertools.product(range(oh), range(ow)):
        window = xp[:, :, i * s[0] : i * s[0] + k[0], j * s[1] : j * s[1] + k[1]]
        out[:, :, i, j] = reduce(window, axis=(2, 3))
    return out


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_and_log_softmax(axis):
    a = (rng.standard_normal((3, 4)) * 50).astype(np.float32)
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    expected = e / e.sum(axis=axis, keepdims=True)
    out = p10.softmax(p10.asarray(a), axis=axis)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(out.numpy().sum(axis=axis), 1.0, rtol=1e-6)
    log_out = p10.asarray(a).log_softmax(axis)
    shifted = a - a.max(axis=axis, keepdims=True)
    log_expected = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    np.testing.assert_allclose(log_out.numpy(), log_expected, rtol=1e-5, atol=1e-5)
    assert out.dtype == p10.float32 and log_out.dtype == p10.float32


def test_softmax_is_stable_at_extremes():
    x = p10.asarray([[1000.0, 0.0, -1000.0]])
    assert p10.softmax(x).tolist() == [[1.0, 0.0, 0.0]]
    assert np.isfinite(p10.log_softmax(x).numpy()).all()
    assert p10.softmax(p10.asarray([1, 1])).dtype == p10.float32


CONV = [
    dict(stride=1, padding=0, dilation=1, groups=1),
    dict(stride=2, padding=1, dilation=1, groups=1),
    dict(stride=(1, 2), padding=(2, 0), dilation=(2, 1), groups=1),
    dict(stride=1, padding=1, dilation=1, groups=2),
    dict(stride=1, padding=0, dilation=1, groups=4),
]


@pytest.mark.parametrize("params", CONV, ids=str)
def test_conv2d_matches_the_loop_reference(params):
    x = rng.standard_normal((2, 4, 7, 6))
    w = rng.standard_normal((8, 4 // params["groups"], 3, 2))
    out = p10.conv2d(p10.asarray(x), p10.asarray(w), **params)
    pair = lambda v: (v, v) if isinstance(v, int) else v
    ref = conv2d_reference(
        x,
        w,
        pair(params["stride"]),
        pair(params["padding"]),
        pair(params["dilation"]),
        params["groups"],
    )
    assert out.dtype == p10.float64
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10, atol=1e-10)


def test_conv2d_bias_and_float32():
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    b = np.array([1.0, -1.0, 0.5], np.float32)
    out = p10.conv2d(x, w, b, padding=1)
    ref = conv2d_reference(x, w, (1, 1), (1, 1), (1, 1), 1) + b[None, :, None, None]
    assert out.dtype == p10.float32 and out.shape == (1, 3, 5, 5)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)


def test_unfold_columns_and_fold_is_its_adjoint():
    x = rng.standard_normal((2, 3, 6, 5))
    params = dict(kernel_size=(3, 2), dilation=(1, 2), padding=(1, 1), stride=(2, 1))
    cols = p10.unfold(p10.asarray(x), **params)
    # conv2d is a matmul of the weights with the columns
    w = rng.standard_normal((4, 3, 3, 2))
    conv = p10.conv2d(x, w, stride=(2, 1), padding=(1, 1), dilation=(1, 2))
    np.testing.assert_allclose(
        (p10.asarray(w.reshape(4, -1)) @ cols).numpy(), conv.numpy().reshape(2, 4, -1), rtol=1e-10
    )
    # <unfold(x), y> == <x, fold(y)>
    y = rng.standard_normal(cols.shape)
    folded = p10.fold(p10.asarray(y), (6, 5), **params)
    np.testing.assert_allclose(np.sum(cols.numpy() * y), np.sum(x * folded.numpy()), rtol=1e-10)


@pytest.mark.parametrize("k, s, p", [(2, None, 0), ((3, 2), (2, 1), (1, 1)), (3, 1, 1)], ids=str)
def test_pooling_matches_the_loop_reference(k, s, p):
    x = rng.standard_normal((2, 3, 7, 6)).astype(np.float32)
    pair = lambda v: (v, v) if isinstance(v, int) else v
    kk, ss, pp = pair(k), pair(s if s is not None else k), pair(p)
    got_max = p10.max_pool2d(p10.asarray(x), k, s, p).numpy()
    np.testing.assert_array_equal(got_max, pool_reference(x, kk, ss, pp, np.max, -np.inf))
    got_avg = p10.avg_pool2d(x, k, s, p).numpy()
    np.testing.assert_allclose(got_avg, pool_reference(x, kk, ss, pp, np.mean, 0.0), atol=1e-6)


@pytest.mark.parametrize(
    "call, error, text",
    [
        (
            lambda: p10.conv2d(p10.ones((1, 3, 5, 5)), p10.ones((2, 2, 3, 3))),
            p10.ShapeError,
            "has 3 channels but weight",
        ),
        (
            lambda: p10.conv2d(p10.ones((3, 5, 5)), p10.ones((2, 3, 3, 3))),
            p10.ShapeError,
            "input must be 4-D",
        ),
        (
            lambda: p10.conv2d(p10.ones((1, 1, 2, 2)), p10.ones((1, 1, 3, 3))),
            p10.ShapeError,
            "does not fit input",
        ),
        (
            lambda: p10.conv2d(p10.ones((1, 1, 5, 5), dtype="int64"), p10.ones((1, 1, 3, 3))),
            p10.DTypeError,
            "must be floating",
        ),
        (
            lambda: p10.conv2d(p10.ones((1, 1, 5, 5)), p10.ones((1, 1, 3, 3)), stride=0),
            p10.ArgumentError,
            "stride must be",
        ),
        (
            lambda: p10.max_pool2d(p10.ones((1, 1, 4, 4)), 2, padding=2),
            p10.ArgumentError,
            "at most half",
        ),
        (lambda: p10.fold(p10.ones((1, 8, 5)), (4, 4), 2), p10.ShapeError, "does not match"),
        (lambda: p10.softmax(p10.ones((2, 2)), axis=2), p10.AxisError, "softmax: axis 2"),
    ],
    ids=[
        "channels",
        "rank",
        "too-small",
        "dtype",
        "stride",
        "pool-padding",
        "fold",
        "softmax-axis",
    ],
)
def test_nn_errors_name_the_op(call, error, text):
    with pytest.raises(error, match=text):
        call()
